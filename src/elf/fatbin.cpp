#include "elf/fatbin.hpp"

#include <elf.h>
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <map>

#include "common/error.hpp"
#include "elf/cubin.hpp"
#include "elf/elf_object.hpp"

namespace sk::elf {
namespace {

constexpr uint16_t kContainerVersion = 1;
constexpr size_t kContainerHeader = 16;
constexpr size_t kEntryHeaderMin = 0x40;  // up to the uncompressed size at 0x38
// Where nvcc puts the fatbinary of a host object: relocatable code (nvcc -dc) first; the linked
// code of nvcc -c is found too, so that it is refused as a linked cubin, with the advice.
constexpr const char *kFatbinSections[] = {"__nv_relfatbin", ".nv_fatbin"};
// An LZ4 block decodes to at most 255 bytes per input byte (plus a final literal run).
constexpr uint64_t kLz4MaxRatio = 255;

template <typename T>
T read(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// "entry 1 (sm_90 cubin, at 0x998)": how messages name an entry.
std::string entry_name(const FatbinEntry &e) {
  return "fatbinary entry " + std::to_string(e.index) + " (" + e.describe() + ", at " + hex(e.offset) + ")";
}

sk_status bad(std::string_view label, const std::string &what) {
  return fail(SK_ERR_BAD_BINARY, "%.*s: %s", (int)label.size(), label.data(), what.c_str());
}

const char *machine_name(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "AArch64";
    default: return "not EM_CUDA";
  }
}

// "SASS for sm_80 and sm_90, and PTX for compute_90": what a fatbinary holds, each
// architecture once, in order (a library's units repeat them).
std::string holdings(const std::vector<FatbinEntry> &entries) {
  auto join = [](const std::vector<std::string> &names, const char *last) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
    return s;
  };
  using Archs = std::map<std::pair<uint32_t, bool>, std::string>;  // (arch, arch-specific) -> name
  Archs sass, ptx, lto;
  std::vector<std::string> other;
  for (const FatbinEntry &e : entries) {
    const bool specific = e.flags & kFatbinArchSpecific;
    const std::string arch = std::to_string(e.arch) + (specific ? "a" : "");
    if (e.kind == kFatbinElf)
      sass[{e.arch, specific}] = "sm_" + arch;
    else if (e.kind == kFatbinPtx)
      ptx[{e.arch, specific}] = "compute_" + arch;
    else if (e.kind == kFatbinLtoIr)
      lto[{e.arch, specific}] = "lto_" + arch;
    else if (std::find(other.begin(), other.end(), e.describe()) == other.end())
      other.push_back(e.describe());
  }
  auto names = [](const Archs &a) {
    std::vector<std::string> out;
    for (const auto &[key, name] : a) out.push_back(name);
    return out;
  };
  std::vector<std::string> parts;
  if (!sass.empty()) parts.push_back("SASS for " + join(names(sass), ", "));
  if (!ptx.empty()) parts.push_back("PTX for " + join(names(ptx), ", "));
  if (!lto.empty()) parts.push_back("LTO-IR for " + join(names(lto), ", "));
  if (!other.empty()) parts.push_back(join(other, ", "));
  return parts.empty() ? "no entries" : join(parts, " and ");
}

// The PTX a device of `want` runs, of container `container` (UINT32_MAX: any): of its
// architecture or an older one (an arch-specific one only for the device's own), the newest.
const FatbinEntry *newest_ptx(const std::vector<FatbinEntry> &entries, uint32_t want, uint32_t container) {
  const FatbinEntry *chosen = nullptr;
  for (const FatbinEntry &e : entries)
    if ((container == UINT32_MAX || e.container == container) && e.kind == kFatbinPtx && e.arch <= want &&
        (!(e.flags & kFatbinArchSpecific) || e.arch == want) && (!chosen || e.arch > chosen->arch))
      chosen = &e;
  return chosen;
}

// The SASS a device of `want` runs of container `container` (UINT32_MAX: any): a cubin of its
// architecture, the one that names the device's variant where an sm_90 and an sm_90a are both
// there.
const FatbinEntry *device_sass(const std::vector<FatbinEntry> &entries, uint32_t want, bool specific,
                               uint32_t container) {
  const FatbinEntry *chosen = nullptr;
  for (const FatbinEntry &e : entries)
    if ((container == UINT32_MAX || e.container == container) && e.kind == kFatbinElf && e.arch == want) {
      const bool match = ((e.flags & kFatbinArchSpecific) != 0) == specific;
      if (!chosen || (match && ((chosen->flags & kFatbinArchSpecific) != 0) != specific)) chosen = &e;
    }
  return chosen;
}

}  // namespace

uint32_t arch_number(std::string_view arch, bool *specific) {
  *specific = false;
  if (arch.rfind("sm_", 0) == 0) arch.remove_prefix(3);
  uint32_t n = 0;
  size_t i = 0;
  for (; i < arch.size() && arch[i] >= '0' && arch[i] <= '9' && n < 100000; ++i) n = n * 10 + (arch[i] - '0');
  *specific = i < arch.size() && arch[i] == 'a';
  return n;
}

std::string FatbinEntry::describe() const {
  const std::string suffix = flags & kFatbinArchSpecific ? "a" : "";
  if (kind == kFatbinElf) return "sm_" + std::to_string(arch) + suffix + " cubin";
  if (kind == kFatbinPtx) return "compute_" + std::to_string(arch) + suffix + " PTX";
  if (kind == kFatbinLtoIr) return "lto_" + std::to_string(arch) + suffix + " LTO-IR";
  return "kind " + std::to_string(kind) + " for arch " + std::to_string(arch);
}

bool looks_like_fatbin(const void *bytes, size_t size) {
  return size >= 4 && read<uint32_t>(static_cast<const uint8_t *>(bytes)) == kFatbinMagic;
}

sk_status parse_fatbin(const void *bytes, size_t size, std::string_view label, std::vector<FatbinEntry> *out) {
  const auto *b = static_cast<const uint8_t *>(bytes);
  std::vector<FatbinEntry> entries;
  size_t at = 0;
  uint32_t containers = 0;
  for (; at < size; ++containers) {
    const std::string where = "fatbinary container at " + hex(at);
    if (size - at < kContainerHeader) {
      bool zeros = true;
      for (size_t i = at; i < size; ++i) zeros &= b[i] == 0;
      if (zeros) break;
      return bad(label, where + ": " + std::to_string(size - at) + " bytes, less than a container header (16)");
    }
    const uint32_t magic = read<uint32_t>(b + at);
    if (magic != kFatbinMagic) {
      bool zeros = at > 0;
      for (size_t i = at; i < size && zeros; ++i) zeros = b[i] == 0;
      if (zeros) break;
      return bad(label, where + ": magic " + hex(magic) + " is not a fatbinary's (0xba55ed50)");
    }
    const uint16_t version = read<uint16_t>(b + at + 4), header = read<uint16_t>(b + at + 6);
    const uint64_t body = read<uint64_t>(b + at + 8);
    if (version != kContainerVersion)
      return bad(label, where + ": version " + std::to_string(version) + " (libsk reads version 1)");
    if (header < kContainerHeader || header > size - at)
      return bad(label, where + ": header size " + std::to_string(header) + " is not in [16, " +
                            std::to_string(size - at) + "]");
    if (body > size - at - header)
      return bad(label, where + ": entries size " + std::to_string(body) + " runs past the end (" +
                            std::to_string(size - at - header) + " bytes left)");
    size_t e = at + header;
    const size_t end = e + body;
    while (e < end) {
      FatbinEntry entry;
      entry.index = (uint32_t)entries.size();
      entry.container = containers;
      entry.offset = e;
      const std::string name = "fatbinary entry " + std::to_string(entry.index) + " (at " + hex(e) + ")";
      if (end - e < kEntryHeaderMin)
        return bad(label,
                   name + ": " + std::to_string(end - e) + " bytes left in its container, less than a header");
      const uint32_t entry_header = read<uint32_t>(b + e + 0x04);
      entry.kind = read<uint16_t>(b + e);
      entry.payload_size = read<uint64_t>(b + e + 0x08);
      entry.compressed_size = read<uint32_t>(b + e + 0x10);
      entry.arch = read<uint32_t>(b + e + 0x1c);
      entry.flags = read<uint64_t>(b + e + 0x28);
      entry.uncompressed_size = read<uint64_t>(b + e + 0x38);
      if (entry_header < kEntryHeaderMin || entry_header > end - e)
        return bad(label, name + ": header size " + std::to_string(entry_header) + " is not in [64, " +
                              std::to_string(end - e) + "]");
      if (entry.payload_size > end - e - entry_header)
        return bad(label, name + ": payload size " + std::to_string(entry.payload_size) +
                              " runs past the end of its container (" + std::to_string(end - e - entry_header) +
                              " bytes left)");
      entry.payload = b + e + entry_header;
      entries.push_back(entry);
      e += entry_header + entry.payload_size;
    }
    at = end;
  }
  *out = std::move(entries);
  return SK_OK;
}

sk_status fatbin_entry_bytes(const FatbinEntry &entry, std::string_view label, std::vector<uint8_t> *out) {
  const std::string name = entry_name(entry);
  const uint64_t compression = entry.flags & kFatbinCompressionMask;
  if (compression == 0) {
    if (entry.compressed_size || entry.uncompressed_size)
      return bad(label, name + ": flags " + hex(entry.flags) +
                            " say it is stored plain, but its compressed size is " +
                            std::to_string(entry.compressed_size) + " and its uncompressed size " +
                            std::to_string(entry.uncompressed_size));
    out->assign(entry.payload, entry.payload + entry.payload_size);
    return SK_OK;
  }
  if (compression != kFatbinLz4 && compression != kFatbinZstd)
    return bad(label, name + ": flags " + hex(entry.flags) + ": unknown compression " + hex(compression) +
                          " (libsk reads 0x2000, LZ4, and 0x8000, zstd)");
  const char *codec = compression == kFatbinZstd ? "zstd" : "LZ4";
  if (entry.compressed_size == 0 || entry.compressed_size > entry.payload_size)
    return bad(label, name + ": compressed size " + std::to_string(entry.compressed_size) + " is not in [1, " +
                          std::to_string(entry.payload_size) + "] (its payload size)");
  const uint64_t size = entry.uncompressed_size;
  if (size == 0 || size > kMaxFatbinEntryBytes)
    return bad(label, name + ": uncompressed size " + std::to_string(size) + " is not in [1, 1 GiB]");
  if (compression == kFatbinLz4 && size > (uint64_t)entry.compressed_size * kLz4MaxRatio + 16)
    return bad(label, name + ": uncompressed size " + std::to_string(size) + " cannot come from " +
                          std::to_string(entry.compressed_size) + " bytes of LZ4");
  if (compression == kFatbinZstd) {
    const unsigned long long framed = ZSTD_getFrameContentSize(entry.payload, entry.compressed_size);
    if (framed == ZSTD_CONTENTSIZE_ERROR)
      return bad(label, name + ": the payload is not a zstd frame (flags " + hex(entry.flags) + ")");
    if (framed != ZSTD_CONTENTSIZE_UNKNOWN && framed != size)
      return bad(label, name + ": uncompressed size " + std::to_string(size) + " differs from its zstd frame's (" +
                            std::to_string(framed) + ")");
  }
  std::vector<uint8_t> bytes(size);
  uint64_t got = 0;
  if (compression == kFatbinZstd) {
    const size_t r = ZSTD_decompress(bytes.data(), bytes.size(), entry.payload, entry.compressed_size);
    if (ZSTD_isError(r))
      return bad(label, name + ": the zstd payload does not decompress to its uncompressed size " +
                            std::to_string(size) + ": " + ZSTD_getErrorName(r));
    got = r;
  } else {
    const int r = LZ4_decompress_safe(reinterpret_cast<const char *>(entry.payload),
                                      reinterpret_cast<char *>(bytes.data()), (int)entry.compressed_size, (int)size);
    if (r < 0)
      return bad(label, name + ": the LZ4 payload does not decompress within its uncompressed size " +
                            std::to_string(size) + " (corrupt, or the size is wrong)");
    got = (uint64_t)r;
  }
  if (got != size)
    return bad(label, name + ": the " + codec + " payload decompresses to " + std::to_string(got) +
                          " bytes, not its uncompressed size " + std::to_string(size));
  *out = std::move(bytes);
  return SK_OK;
}

sk_status extract_fatbin_code(const void *bytes, size_t size, std::string_view label_view, std::string_view arch,
                              bool sass, std::vector<uint8_t> *code, std::string *what, bool *ptx) {
  const std::string label(label_view);
  const void *fatbin = bytes;
  size_t fatbin_size = size;
  std::string origin = "fatbinary";
  Object host;
  if (!looks_like_fatbin(bytes, size)) {
    Elf64_Ehdr eh;
    if (size < sizeof eh) return fail(SK_ERR_BAD_BINARY, "%s: not an ELF object (%zu bytes)", label.c_str(), size);
    std::memcpy(&eh, bytes, sizeof eh);
    // nvcc -dc writes a relocatable host object; programs and libraries are not loaded here.
    if (eh.e_type != ET_REL)
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: ELF machine %u (%s) and type %u: neither a CUDA binary (EM_CUDA, 190) nor a relocatable "
                  "host object of nvcc -dc; build CUDA kernels with nvcc -dc (-cubin, -fatbin)",
                  label.c_str(), eh.e_machine, machine_name(eh.e_machine), eh.e_type);
    if (sk_status st = parse_object(bytes, size, label, &host); st != SK_OK) return st;
    int index = -1;
    for (const char *section : kFatbinSections)
      if (index < 0 && (index = host.find_section(section)) >= 0) origin = std::string("fatbinary of ") + section;
    if (index < 0)
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: a host object (ELF machine %u, %s) without a fatbinary (no __nv_relfatbin section): not "
                  "a CUDA binary (EM_CUDA, 190); build CUDA kernels with nvcc -dc (-cubin, -fatbin)",
                  label.c_str(), host.machine, machine_name(host.machine));
    const Section &s = host.sections[index];
    if (!s.data)
      return fail(SK_ERR_BAD_BINARY, "%s: section %s has no bytes (type %u)", label.c_str(), s.name.c_str(), s.type);
    fatbin = s.data;
    fatbin_size = s.size;
  }
  std::vector<FatbinEntry> entries;
  // Messages name the section where the fatbinary was one.
  const std::string where = fatbin == bytes ? label : label + " (" + origin + ")";
  if (sk_status st = parse_fatbin(fatbin, fatbin_size, where, &entries); st != SK_OK) return st;
  bool specific = false;
  const uint32_t want = arch_number(arch, &specific);
  const FatbinEntry *chosen = sass ? device_sass(entries, want, specific, UINT32_MAX) : nullptr;
  *ptx = !chosen;
  if (!chosen) chosen = newest_ptx(entries, want, UINT32_MAX);
  if (!chosen) {
    const std::string a(arch);
    // nvJitLink compiles a fatbinary's LTO-IR in a whole link but gives no PTX of it, the form
    // whose __global__ kernels a super kernel calls.
    for (const FatbinEntry &e : entries)
      if (e.kind == kFatbinLtoIr && e.arch <= want)
        return fail(SK_ERR_INCOMPATIBLE,
                    "%s: the %s holds %s: LTO-IR in a fatbinary is stored in a form only a whole link reads, "
                    "and libsk needs its PTX; build with -dlto -arch=%s (which keeps compute_%u PTX beside "
                    "the LTO-IR), add -gencode arch=compute_%u,code=compute_%u, or give the LTO-IR itself "
                    "(nvcc -dc -dlto -ltoir)",
                    label.c_str(), origin.c_str(), holdings(entries).c_str(), a.c_str(), want, want, want);
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: the %s holds %s; the device is %s, which runs neither: build with -arch=%s (or add -gencode "
                "arch=compute_%u,code=%s)",
                label.c_str(), origin.c_str(), holdings(entries).c_str(), a.c_str(), a.c_str(), want, a.c_str());
  }
  if (sk_status st = fatbin_entry_bytes(*chosen, where, code); st != SK_OK) return st;
  *what = chosen->describe();
  return SK_OK;
}

bool host_code_only(const void *bytes, size_t size) {
  Object o;
  if (looks_like_fatbin(bytes, size) || parse_object(bytes, size, "", &o) != SK_OK || o.machine == kMachineCuda ||
      o.type != ET_REL)
    return false;
  return std::none_of(std::begin(kFatbinSections), std::end(kFatbinSections),
                      [&](const char *section) { return o.find_section(section) >= 0; });
}

bool looks_like_host_elf(const void *bytes, size_t size) {
  Elf64_Ehdr eh;
  if (size < sizeof eh) return false;
  std::memcpy(&eh, bytes, sizeof eh);
  return std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
         eh.e_ident[EI_DATA] == ELFDATA2LSB && eh.e_machine != kMachineCuda;
}

bool looks_like_linked_host_elf(const void *bytes, size_t size) {
  Elf64_Ehdr eh;
  if (!looks_like_host_elf(bytes, size)) return false;
  std::memcpy(&eh, bytes, sizeof eh);
  return eh.e_type == ET_DYN || eh.e_type == ET_EXEC;
}

sk_status linked_code_entries(const void *bytes, size_t size, std::string_view label_view, std::string_view arch,
                              std::vector<FatbinEntry> *out, std::vector<FatbinEntry> *sass, uint32_t *containers) {
  const std::string label(label_view);
  const auto *b = static_cast<const uint8_t *>(bytes);
  // The section table and its names, each checked against the file's size before it is read.
  Elf64_Ehdr eh;
  std::memcpy(&eh, b, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
      (size - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum || eh.e_shstrndx >= eh.e_shnum)
    return bad(label, "its section table (e_shoff " + hex(eh.e_shoff) + ", " + std::to_string(eh.e_shnum) +
                          " entries of " + std::to_string(eh.e_shentsize) + " bytes) does not fit its " +
                          std::to_string(size) + " bytes");
  auto header = [&](uint32_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, b + eh.e_shoff + size_t{i} * sizeof sh, sizeof sh);
    return sh;
  };
  const Elf64_Shdr names = header(eh.e_shstrndx);
  if (names.sh_offset > size || names.sh_size > size - names.sh_offset)
    return bad(label, "its section names run past its end");
  // Its fatbinary sections: the linked code (.nv_fatbin), and each -rdc unit's relocatable code,
  // which the device link read (__nv_relfatbin).
  std::vector<FatbinEntry> entries;
  bool any = false;
  struct Source {
    const char *section;
    bool relocatable;
  };
  for (const auto &[section, relocatable] : {Source{".nv_fatbin", false}, Source{"__nv_relfatbin", true}}) {
    const uint8_t *fatbin = nullptr;
    size_t fatbin_size = 0;
    for (uint32_t i = 0; i < eh.e_shnum && !fatbin; ++i) {
      const Elf64_Shdr sh = header(i);
      if (sh.sh_name >= names.sh_size) continue;
      const char *name = reinterpret_cast<const char *>(b + names.sh_offset + sh.sh_name);
      if (strnlen(name, names.sh_size - sh.sh_name) == names.sh_size - sh.sh_name || std::strcmp(name, section))
        continue;
      if (sh.sh_type == SHT_NOBITS || sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
        return bad(label, std::string("section ") + section + " (offset " + hex(sh.sh_offset) + ", " +
                              std::to_string(sh.sh_size) + " bytes) runs past its end");
      fatbin = b + sh.sh_offset;
      fatbin_size = sh.sh_size;
    }
    if (!fatbin) continue;
    any = true;
    std::vector<FatbinEntry> found;
    if (sk_status st = parse_fatbin(fatbin, fatbin_size, label + " (fatbinary of " + section + ")", &found);
        st != SK_OK)
      return st;
    const uint32_t first = entries.empty() ? 0 : entries.back().container + 1;
    for (FatbinEntry &e : found) {
      e.container += first;
      e.relocatable = relocatable;
      entries.push_back(e);
    }
  }
  if (!any)
    return fail(SK_ERR_UNSUPPORTED,
                "%s: ELF machine %u (%s), a shared library or executable (type %u) without CUDA device code (no "
                ".nv_fatbin or __nv_relfatbin section): not a CUDA binary (EM_CUDA, 190)",
                label.c_str(), eh.e_machine, machine_name(eh.e_machine), eh.e_type);
  bool specific = false;
  const uint32_t want = arch_number(arch, &specific);
  *containers = entries.empty() ? 0 : entries.back().container + 1;
  out->clear();
  sass->clear();
  for (uint32_t c = 0; c < *containers; ++c) {
    if (const FatbinEntry *e = newest_ptx(entries, want, c))
      out->push_back(*e);
    else if (const FatbinEntry *linked = device_sass(entries, want, specific, c); linked && !linked->relocatable)
      sass->push_back(*linked);
  }
  if (out->empty() && sass->empty()) {
    const std::string a(arch);
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: the fatbinaries of its %u translation unit%s hold %s, and no PTX or SASS the device (%s) runs: "
                "its __global__ kernels are linked SASS of other architectures; build with PTX for %s or older "
                "(-gencode arch=compute_%u,code=compute_%u; CMake: CUDA_ARCHITECTURES %u, not %u-real)",
                label.c_str(), *containers, *containers == 1 ? "" : "s", holdings(entries).c_str(), a.c_str(),
                a.c_str(), want, want, want, want);
  }
  return SK_OK;
}

}  // namespace sk::elf
