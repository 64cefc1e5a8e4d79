// Reads `ar` archives: 60-byte member headers, the SysV/GNU symbol index (`/`: 32-bit
// big-endian offsets, `/SYM64/`: 64-bit), the long-name table (`//`, names ending in "/\n").
#include "elf/archive.hpp"

#include <elf.h>

#include <cstring>

#include "common/error.hpp"
#include "elf/elf_object.hpp"

namespace sk::elf {
namespace {

constexpr char kMagic[] = "!<arch>\n";
constexpr char kThinMagic[] = "!<thin>\n";
constexpr size_t kMagicSize = 8;
constexpr size_t kHeaderSize = 60;

struct RawMember {
  std::string raw_name;  // the 16-byte field, trailing spaces removed
  size_t header = 0;     // offset of the header in the archive
  const uint8_t *data = nullptr;
  size_t size = 0;
};

std::string trim(const uint8_t *p, size_t n) {
  std::string s(reinterpret_cast<const char *>(p), n);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool parse_decimal(const std::string &s, uint64_t *out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

uint64_t read_be(const uint8_t *p, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v = (v << 8) | p[i];
  return v;
}

// The index: count, offsets of member headers, then the NUL-terminated names in the same order.
sk_status read_index(const RawMember &m, size_t width, const std::map<size_t, size_t> &by_header, Archive *a) {
  const char *label = a->label.c_str();
  if (m.size < width) return fail(SK_ERR_BAD_BINARY, "%s: symbol index is truncated", label);
  uint64_t count = read_be(m.data, width);
  if (count > (m.size - width) / width)
    return fail(SK_ERR_BAD_BINARY, "%s: symbol index counts %llu symbols in %zu bytes", label,
                (unsigned long long)count, m.size);
  const uint8_t *names = m.data + width + count * width, *end = m.data + m.size;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t *nul = static_cast<const uint8_t *>(std::memchr(names, 0, end - names));
    if (!nul)
      return fail(SK_ERR_BAD_BINARY, "%s: symbol index name %llu is not terminated", label, (unsigned long long)i);
    std::string name(reinterpret_cast<const char *>(names), nul - names);
    names = nul + 1;
    uint64_t header = read_be(m.data + width + i * width, width);
    auto it = by_header.find(static_cast<size_t>(header));
    if (it == by_header.end())
      return fail(SK_ERR_BAD_BINARY, "%s: symbol index entry '%s' points at 0x%llx, which is not a member", label,
                  name.c_str(), (unsigned long long)header);
    a->symbols.emplace(std::move(name), it->second);  // the first member named wins, as in ld
  }
  return SK_OK;
}

// No index: the members' own global definitions, the way `ranlib` would list them.
void index_members(Archive *a) {
  for (size_t i = 0; i < a->members.size(); ++i) {
    const ArchiveMember &m = a->members[i];
    if (m.size < SELFMAG || std::memcmp(m.data, ELFMAG, SELFMAG) != 0) continue;
    Object o;
    if (parse_object(m.data, m.size, a->member_label(i), &o) != SK_OK) continue;  // fails if pulled
    for (const Symbol &s : o.symbols)
      if (s.bind != STB_LOCAL && s.shndx != SHN_UNDEF && !s.name.empty()) a->symbols.emplace(s.name, i);
  }
}

}  // namespace

std::string Archive::member_label(size_t member) const { return label + "(" + members[member].name + ")"; }

bool is_archive(const void *bytes, size_t size) {
  return bytes && size >= kMagicSize &&
         (std::memcmp(bytes, kMagic, kMagicSize) == 0 || std::memcmp(bytes, kThinMagic, kMagicSize) == 0);
}

sk_status parse_archive(const void *bytes, size_t size, std::string_view label_view, Archive *out) {
  Archive a;
  a.label = label_view.empty() ? std::string("<memory>") : std::string(label_view);
  const char *label = a.label.c_str();
  const auto *image = static_cast<const uint8_t *>(bytes);
  if (!bytes || size < kMagicSize) return fail(SK_ERR_BAD_BINARY, "%s: not an archive", label);
  if (std::memcmp(image, kThinMagic, kMagicSize) == 0)
    return fail(SK_ERR_UNSUPPORTED,
                "%s: a thin archive (its members are other files, named by path); make a regular "
                "one with `ar rcs` (without T) or load the member objects themselves",
                label);
  if (std::memcmp(image, kMagic, kMagicSize) != 0) return fail(SK_ERR_BAD_BINARY, "%s: not an archive", label);

  std::vector<RawMember> raw;
  for (size_t at = kMagicSize; at < size;) {
    if (size - at < kHeaderSize)
      return fail(SK_ERR_BAD_BINARY, "%s: member header at 0x%zx is truncated", label, at);
    const uint8_t *h = image + at;
    uint64_t member_size = 0;
    if (h[58] != '`' || h[59] != '\n' || !parse_decimal(trim(h + 48, 10), &member_size))
      return fail(SK_ERR_BAD_BINARY, "%s: member header at 0x%zx is malformed", label, at);
    if (member_size > size - at - kHeaderSize)
      return fail(SK_ERR_BAD_BINARY, "%s: member at 0x%zx (%llu bytes) runs past the %zu-byte archive", label, at,
                  (unsigned long long)member_size, size);
    raw.push_back({trim(h, 16), at, h + kHeaderSize, static_cast<size_t>(member_size)});
    at += kHeaderSize + member_size + (member_size & 1);  // members are 2-byte aligned
  }

  const RawMember *long_names = nullptr, *index = nullptr;
  size_t index_width = 4;
  std::map<size_t, size_t> by_header;  // header offset -> member index
  for (const RawMember &m : raw) {
    if (m.raw_name == "/" || m.raw_name == "/SYM64/") {
      index = &m;
      index_width = m.raw_name == "/" ? 4 : 8;
      continue;
    }
    if (m.raw_name == "//") {
      long_names = &m;
      continue;
    }
    if (m.raw_name.rfind("#1/", 0) == 0 || m.raw_name.rfind("__.SYMDEF", 0) == 0)
      return fail(SK_ERR_UNSUPPORTED, "%s: BSD-format archive (member '%s'); rebuild it with GNU ar", label,
                  m.raw_name.c_str());
    ArchiveMember out_member;
    if (m.raw_name.size() > 1 && m.raw_name[0] == '/') {
      uint64_t off = 0;
      if (!long_names || !parse_decimal(m.raw_name.substr(1), &off) || off >= long_names->size)
        return fail(SK_ERR_BAD_BINARY, "%s: member at 0x%zx: long name '%s' is not in the name table", label,
                    m.header, m.raw_name.c_str());
      const char *p = reinterpret_cast<const char *>(long_names->data) + off;
      const char *end = reinterpret_cast<const char *>(long_names->data) + long_names->size;
      const char *q = p;
      while (q < end && *q != '\n' && *q != '\0') ++q;
      out_member.name.assign(p, q);
    } else {
      out_member.name = m.raw_name;
    }
    if (!out_member.name.empty() && out_member.name.back() == '/') out_member.name.pop_back();
    out_member.data = m.data;
    out_member.size = m.size;
    by_header.emplace(m.header, a.members.size());
    a.members.push_back(std::move(out_member));
  }
  if (index) {
    if (sk_status st = read_index(*index, index_width, by_header, &a)) return st;
  } else {
    index_members(&a);
  }
  *out = std::move(a);
  return SK_OK;
}

}  // namespace sk::elf
