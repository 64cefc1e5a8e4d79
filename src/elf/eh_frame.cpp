#include "elf/eh_frame.hpp"

#include <cinttypes>
#include <cstring>
#include <map>
#include <set>

#include "common/error.hpp"

namespace sk::elf {
namespace {

constexpr uint8_t kOmit = 0xff;

// An encoding (DW_EH_PE_*) the unwinder can size and apply: its size class absptr, udata2/4/8
// or sdata2/4/8 (leb128 only where `leb` allows), applied absolute, pc-, text-, data-relative
// or aligned, possibly indirect.
bool usable_encoding(uint8_t e, bool leb) {
  if (e == kOmit) return true;
  const uint8_t format = e & 0x0f, application = e & 0x70;
  const bool sized = format == 0x0 || format == 0x2 || format == 0x3 || format == 0x4 || format == 0xa ||
                     format == 0xb || format == 0xc;
  const bool varying = format == 0x1 || format == 0x9;
  return (sized || (leb && varying)) && (application == 0x00 || application == 0x10 || application == 0x20 ||
                                         application == 0x30 || application == 0x50);
}

size_t encoded_size(uint8_t e) {
  switch (e & 0x07) {
    case 0x0: return 8;
    case 0x2: return 2;
    case 0x3: return 4;
    default: return 8;  // 0x4: udata8/sdata8
  }
}

struct Reader {
  const uint8_t *p, *end;
  bool ok = true;
  uint8_t byte() {
    if (p >= end) return ok = false, 0;
    return *p++;
  }
  void leb() {  // uleb128 or sleb128: skipped
    for (int i = 0; i < 10; ++i)
      if (!(byte() & 0x80)) return;
    ok = false;
  }
  void skip(size_t n) {
    if (static_cast<size_t>(end - p) < n)
      ok = false, p = end;
    else
      p += n;
  }
};

}  // namespace

sk_status check_eh_frame(const uint8_t *data, size_t size, const std::string &label, const std::string &section) {
  auto bad = [&](size_t at, const char *why) {
    return fail(SK_ERR_BAD_BINARY, "%s: section '%s', record at offset 0x%zx: %s", label.c_str(), section.c_str(),
                at, why);
  };
  std::set<size_t> cies;
  std::map<size_t, uint8_t> fde_encoding;  // per CIE: how its FDEs write their addresses
  size_t at = 0;
  while (size - at >= 4) {
    uint32_t length;
    std::memcpy(&length, data + at, 4);
    if (length == 0) break;  // a terminator: the unwinder reads no further
    if (length == 0xffffffffu) return bad(at, "64-bit extended lengths are not supported");
    if (length < 4 || length > size - at - 4) return bad(at, "the record overruns the section");
    uint32_t id;
    std::memcpy(&id, data + at + 4, 4);
    Reader r{data + at + 8, data + at + 4 + length};
    if (id == 0) {  // CIE
      const uint8_t version = r.byte();
      if (version != 1 && version != 3) return bad(at, "CIE version is not 1 or 3");
      const uint8_t *aug = r.p;
      while (r.ok && r.byte() != 0) {
      }
      if (!r.ok) return bad(at, "the CIE's augmentation string is not terminated");
      const std::string augmentation(reinterpret_cast<const char *>(aug));
      r.leb();  // code alignment
      r.leb();  // data alignment
      if (version == 1)
        r.byte();
      else
        r.leb();        // return address register
      uint8_t fde = 0;  // absptr
      if (!augmentation.empty() && augmentation[0] == 'z') {
        r.leb();  // augmentation data length
        for (size_t i = 1; i < augmentation.size() && r.ok; ++i) {
          const char c = augmentation[i];
          if (c == 'R' || c == 'L') {
            const uint8_t e = r.byte();
            if (!usable_encoding(e, c == 'L') || (c == 'R' && e == kOmit))
              return bad(at, "the CIE names a pointer encoding the unwinder cannot read");
            if (c == 'R') fde = e;
          } else if (c == 'P') {
            const uint8_t e = r.byte();
            if (!usable_encoding(e, false) || e == kOmit)
              return bad(at, "the CIE names a pointer encoding the unwinder cannot read");
            r.skip(encoded_size(e));
          } else if (c != 'S' && c != 'B') {
            break;  // the unwinder stops at an augmentation it does not know, as here
          }
        }
      }
      if (!r.ok) return bad(at, "the CIE overruns its record");
      cies.insert(at);
      fde_encoding[at] = fde;
    } else {  // FDE: id is the distance back to its CIE
      const size_t id_at = at + 4;
      if (id > id_at || !cies.count(id_at - id)) return bad(at, "the FDE's CIE pointer does not lead to a CIE");
      r.skip(2 * encoded_size(fde_encoding[id_at - id]));  // initial location and range
      if (!r.ok) return bad(at, "the FDE overruns its record");
    }
    at += 4 + static_cast<size_t>(length);
  }
  return SK_OK;
}

}  // namespace sk::elf
