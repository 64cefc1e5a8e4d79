// What is in an `ar` static library (GNU/SysV format, as `ar rcs` and distributions write it):
// its members and the symbol index (the `/` or `/SYM64/` member) that tells which member
// defines which global symbol. Every header, name and offset is checked against the image.
#pragma once
#include <sk.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sk::elf {

struct ArchiveMember {
  std::string name;               // as stored, long names resolved through `//`
  const uint8_t *data = nullptr;  // into the caller's bytes
  size_t size = 0;
};

struct Archive {
  std::string label;                   // file name, for messages
  std::vector<ArchiveMember> members;  // in archive order, index and name tables left out
  // Global symbol -> index into members: the first member the index names for it. Without an
  // index (`ar` run with S), built from the members' own symbol tables.
  std::map<std::string, size_t, std::less<>> symbols;
  // "libfoo.a(bar.o)", the way ld names a member.
  std::string member_label(size_t member) const;
};

// "!<arch>\n" (a regular archive) or "!<thin>\n" (a thin one, refused by parse_archive).
bool is_archive(const void *bytes, size_t size);

// Reads the archive in `bytes` (not copied: they must outlive *out). Thin archives, whose
// members live in other files, and BSD-format names are refused with SK_ERR_UNSUPPORTED.
sk_status parse_archive(const void *bytes, size_t size, std::string_view label, Archive *out);

}  // namespace sk::elf
