#include "host/linker/tls_block.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "host/linker/elf_image.hpp"
#include "host/linker/relocation.hpp"

namespace sk::host {
namespace {

// One load segment at address 0 covers everything; the alignment suits every page size.
constexpr uint64_t kSegmentAlign = 0x10000;
constexpr size_t kPhdrs = 4;  // PT_LOAD, PT_DYNAMIC, PT_TLS, PT_GNU_STACK

#if defined(__x86_64__)
constexpr uint32_t kTpOffsetReloc = R_X86_64_TPOFF64;
#elif defined(__aarch64__)
constexpr uint32_t kTpOffsetReloc = R_AARCH64_TLS_TPREL;
#else
constexpr uint32_t kTpOffsetReloc = 0;
#endif

uint64_t align_to(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// The shared object: ELF header, program headers, a symbol table with one local STT_TLS
// symbol at the block's start (what the TPOFF relocation names), its hash table, the relocation
// and the word it fills, the dynamic section, then the TLS image. Returns the word's address.
std::vector<uint8_t> shared_object(const std::vector<uint8_t> &image, uint64_t size, uint64_t align, bool static_tls,
                                   uint64_t *word_at) {
  const char strings[] = "\0sk_tls_block";
  const uint64_t phdrs = sizeof(Elf64_Ehdr), symtab = phdrs + kPhdrs * sizeof(Elf64_Phdr);
  const uint64_t strtab = symtab + 2 * sizeof(Elf64_Sym), hash = align_to(strtab + sizeof strings, 8);
  const uint64_t rela = align_to(hash + 5 * sizeof(uint32_t), 8), word = rela + sizeof(Elf64_Rela);
  const uint64_t dynamic = word + 8;
  std::vector<Elf64_Dyn> dyn = {{DT_HASH, {hash}},
                                {DT_STRTAB, {strtab}},
                                {DT_SYMTAB, {symtab}},
                                {DT_STRSZ, {sizeof strings}},
                                {DT_SYMENT, {sizeof(Elf64_Sym)}}};
  if (static_tls) {
    dyn.push_back({DT_RELA, {rela}});
    dyn.push_back({DT_RELASZ, {sizeof(Elf64_Rela)}});
    dyn.push_back({DT_RELAENT, {sizeof(Elf64_Rela)}});
    dyn.push_back({DT_FLAGS, {DF_STATIC_TLS}});
  }
  dyn.push_back({DT_NULL, {0}});
  const uint64_t tls = align_to(dynamic + dyn.size() * sizeof(Elf64_Dyn), align);
  const uint64_t end = tls + image.size();
  std::vector<uint8_t> out(end, 0);

  Elf64_Ehdr eh = host_elf_header(ET_DYN);
  eh.e_phoff = phdrs;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = kPhdrs;
  put(out, 0, eh);
  const Elf64_Phdr ph[kPhdrs] = {
      {PT_LOAD, PF_R | PF_W, 0, 0, 0, end, end, kSegmentAlign},
      {PT_DYNAMIC, PF_R | PF_W, dynamic, dynamic, dynamic, dyn.size() * sizeof(Elf64_Dyn),
       dyn.size() * sizeof(Elf64_Dyn), 8},
      {PT_TLS, PF_R, tls, tls, tls, image.size(), size, align},
      {PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 0, 16},  // without it glibc makes stacks executable
  };
  for (size_t i = 0; i < kPhdrs; ++i) put(out, phdrs + i * sizeof(Elf64_Phdr), ph[i]);
  Elf64_Sym block{};
  block.st_name = 1;
  block.st_info = ELF64_ST_INFO(STB_LOCAL, STT_TLS);
  block.st_shndx = 1;  // defined (any index but SHN_UNDEF: there are no section headers)
  put(out, symtab + sizeof(Elf64_Sym), block);
  std::memcpy(out.data() + strtab, strings, sizeof strings);
  const uint32_t table[5] = {1, 2, 0, 0, 0};  // one empty bucket: dlsym finds nothing here
  std::memcpy(out.data() + hash, table, sizeof table);
  put(out, rela, Elf64_Rela{word, ELF64_R_INFO(1, kTpOffsetReloc), 0});
  for (size_t i = 0; i < dyn.size(); ++i) put(out, dynamic + i * sizeof(Elf64_Dyn), dyn[i]);
  if (!image.empty()) std::memcpy(out.data() + tls, image.data(), image.size());
  *word_at = word;
  return out;
}

}  // namespace

sk_status TlsBlock::create(const std::vector<uint8_t> &image, uint64_t size, uint64_t align, bool static_tls,
                           std::unique_ptr<TlsBlock> *out, std::string *why) {
  if (kTpOffsetReloc == 0) {
    *why = "this machine has no thread-local support in libsk";
    return SK_ERR_UNSUPPORTED;
  }
  uint64_t word = 0;
  const std::vector<uint8_t> bytes = shared_object(image, size, align, static_tls, &word);
  std::unique_ptr<TlsBlock> block(new TlsBlock());
  block->fd_ = memfd_create("sk-tls", MFD_CLOEXEC);
  if (block->fd_ < 0) {
    *why = std::string("memfd_create failed: ") + std::strerror(errno);
    return SK_ERR_UNSUPPORTED;
  }
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(block->fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = std::string("writing its memfd failed: ") + std::strerror(errno);
      return SK_ERR_UNSUPPORTED;
    }
    done += static_cast<size_t>(n);
  }
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", block->fd_);
  block->handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!block->handle_) {
    const char *e = dlerror();
    *why = e ? e : "dlopen failed";
    return SK_ERR_UNSUPPORTED;
  }
  size_t id = 0;
  link_map *map = nullptr;
  if (dlinfo(block->handle_, RTLD_DI_TLS_MODID, &id) != 0 || id == 0 ||
      dlinfo(block->handle_, RTLD_DI_LINKMAP, &map) != 0 || !map) {
    *why = "glibc gave it no TLS module id";
    return SK_ERR_UNSUPPORTED;
  }
  block->module_id_ = id;
  if (static_tls) std::memcpy(&block->tp_offset_, reinterpret_cast<const void *>(map->l_addr + word), 8);
  *out = std::move(block);
  return SK_OK;
}

TlsBlock::~TlsBlock() {
  if (handle_) dlclose(handle_);
  if (fd_ >= 0) close(fd_);
}

}  // namespace sk::host
