// nvcc's fatbinaries: what `nvcc -dc -fatbin` writes, and what a host object of `nvcc -dc`
// (its default output, CMake's CUDA_SEPARABLE_COMPILATION) carries in its `__nv_relfatbin`
// section (`.nv_fatbin` for the linked code of `nvcc -c`). A fatbinary is one or more
// containers back to back; each holds entries, SASS (an ELF cubin) or PTX, for one
// architecture each, stored plain or compressed (zstd, nvcc's default; LZ4 for
// --compress-mode=speed). This file finds them, picks the cubin for the device's architecture
// and decompresses it: the CUDA backend then reads it as a cubin given directly.
//
// The layout (little-endian; libsk's reading of what nvcc 13 writes):
//   container header, 16 bytes: u32 magic 0xba55ed50, u16 version (1), u16 header size (16),
//     u64 bytes of the entries that follow it;
//   entry: a header of `header size` bytes (64 for SASS, 96 or more for PTX, more with -G),
//     then `payload size` bytes (padded):
//     0x00 u16 kind (1 PTX, 2 ELF, 8 LTO-IR), 0x04 u32 header size, 0x08 u64 payload size,
//     0x10 u32 compressed size (0 when plain), 0x1c u32 architecture (90 for sm_90),
//     0x28 u64 flags (0x2000 LZ4 block, 0x8000 zstd frame; 0x100000 an arch-specific sm_90a),
//     0x38 u64 uncompressed size (0 when plain).
// Every offset and size is checked before use: a malformed fatbinary is SK_ERR_BAD_BINARY
// naming the file, the entry and the field, never a crash or an allocation past 1 GiB.
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sk::elf {

constexpr uint32_t kFatbinMagic = 0xba55ed50;
// NVVM's LTO-IR (nvcc -dc -dlto -ltoir, and a fatbinary's kind 8 entry) begins with this u32.
constexpr uint32_t kLtoIrMagic = 0x7f4e43ed;

// The four bytes a little-endian u32 magic is stored as: how a file holding it begins.
struct MagicBytes {
  char b[4];
  constexpr std::string_view view() const { return {b, 4}; }
};
constexpr MagicBytes magic_bytes(uint32_t m) {
  return {{char(m & 0xff), char(m >> 8 & 0xff), char(m >> 16 & 0xff), char(m >> 24 & 0xff)}};
}
constexpr uint16_t kFatbinPtx = 1, kFatbinElf = 2, kFatbinLtoIr = 8;  // 8: what -gencode ...,code=lto_90 writes
constexpr uint64_t kFatbinLz4 = 0x2000, kFatbinZstd = 0x8000;
// Bits 12-15 of the flags: compression. Values other than the two above are refused.
constexpr uint64_t kFatbinCompressionMask = 0xf000;
constexpr uint64_t kFatbinArchSpecific = 0x100000;  // sm_90a rather than sm_90
// The most an entry may decompress to: the host loader's limit on a whole object.
constexpr uint64_t kMaxFatbinEntryBytes = uint64_t{1} << 30;

struct FatbinEntry {
  uint32_t index = 0;      // over all containers, from 0, for messages
  uint32_t container = 0;  // which container, from 0: one per translation unit in a linked file
  // A linked file's unit compiled relocatable (-rdc): its container is in __nv_relfatbin, where
  // the device link read it, and may use what other units define.
  bool relocatable = false;
  uint64_t offset = 0;  // of its header within the fatbinary
  uint16_t kind = 0;    // kFatbinPtx, kFatbinElf, kFatbinLtoIr or another (listed, never read)
  uint32_t arch = 0;    // 90 for sm_90 / compute_90
  uint64_t flags = 0;
  const uint8_t *payload = nullptr;  // into the fatbinary
  uint64_t payload_size = 0;         // stored bytes, padding included
  uint32_t compressed_size = 0;      // 0 when stored plain
  uint64_t uncompressed_size = 0;    // 0 when stored plain

  // "sm_90 cubin", "compute_90 PTX", "sm_90a cubin", "lto_90 LTO-IR", "kind 7 for arch 90".
  std::string describe() const;
};

// "sm_90" -> 90 (also "90"), with `specific` set for "sm_90a"; 0 when it does not parse.
uint32_t arch_number(std::string_view arch, bool *specific);

// True if the bytes start with a fatbinary container's magic.
bool looks_like_fatbin(const void *bytes, size_t size);

// Reads every entry header of a fatbinary (`size` bytes, not copied: the entries point into
// it). Trailing zero bytes after the last container are padding.
sk_status parse_fatbin(const void *bytes, size_t size, std::string_view label, std::vector<FatbinEntry> *out);

// An entry's bytes: the payload as stored, or decompressed (exactly `uncompressed_size` bytes).
sk_status fatbin_entry_bytes(const FatbinEntry &entry, std::string_view label, std::vector<uint8_t> *out);

// The code for `arch` ("sm_90") of a fatbinary or of a host ELF object that carries one (the
// caller has seen a fatbinary magic or an ELF of a machine other than EM_CUDA): its cubin for
// `arch` when `sass` and it has one, else the PTX of the newest architecture `arch` runs
// (`*ptx` set). `what` says which ("sm_90 cubin", "compute_90 PTX"). An object without a
// fatbinary is SK_ERR_UNSUPPORTED; one without either SK_ERR_INCOMPATIBLE, listing what it holds
// (LTO-IR alone, `code=lto_90`, is stored in a form nvJitLink reads only as a whole link).
sk_status extract_fatbin_code(const void *bytes, size_t size, std::string_view label, std::string_view arch,
                              bool sass, std::vector<uint8_t> *code, std::string *what, bool *ptx);

// True for a relocatable host ELF object that reads and carries no fatbinary section: host code
// (an archive of nvcc -lib holds such members beside those of nvcc -dc).
bool host_code_only(const void *bytes, size_t size);

// True for a 64-bit little-endian ELF of a machine other than EM_CUDA: a host object, library
// or program, which may carry a fatbinary.
bool looks_like_host_elf(const void *bytes, size_t size);

// True for a looks_like_host_elf shared library or executable (ET_DYN, ET_EXEC): where nvcc's
// host link puts every translation unit's fatbinary container, back to back, in `.nv_fatbin`.
bool looks_like_linked_host_elf(const void *bytes, size_t size);

// The PTX entry `arch` runs of each container of a linked file's `.nv_fatbin`, then of its
// `__nv_relfatbin` (units compiled -rdc, whose link is SASS alone), that has one (the newest,
// as extract_fatbin_code chooses), in container order, pointing into `bytes` (fatbin_entry_bytes
// gives each text): the kernels of nvcc -c, which are linked SASS, can be fused from it. Into
// `sass`, the linked cubin for `arch` of each `.nv_fatbin` container without such PTX: its
// kernels can be launched as compiled. A file without either section is SK_ERR_UNSUPPORTED;
// one whose containers hold neither SK_ERR_INCOMPATIBLE, saying what they hold.
sk_status linked_code_entries(const void *bytes, size_t size, std::string_view label, std::string_view arch,
                              std::vector<FatbinEntry> *out, std::vector<FatbinEntry> *sass, uint32_t *containers);

}  // namespace sk::elf
