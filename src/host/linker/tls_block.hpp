// A linked module's thread-local storage, handed to glibc so that every thread of the process
// has its own copy, as for a dlopen'ed library: the core threads, the host threads that run
// core 0's share and the threads a kernel starts, whether they started before the module was
// loaded or after.
//
// libsk writes a minimal shared object that holds nothing but a PT_TLS segment with the
// module's initial image (.tdata, relocated, then .tbss's size) and dlopens it from an
// anonymous file (memfd): glibc gives it a TLS module id and, per thread, a block initialised
// from the image, on the first __tls_get_addr (general and local dynamic code, which calls it
// with {module id, offset}). Initial-exec, local-exec and TLS-descriptor code instead reach the
// block at an offset from the thread pointer fixed at link time; for such a module the shared
// object carries a TPOFF relocation, so that glibc places its block in the static TLS space it
// keeps for dlopen'ed libraries (glibc.rtld.optional_static_tls) and copies the image into every
// thread that exists, as for a library linked with -ftls-model=initial-exec. The shared object
// is dlclosed with the module, after its destructors.
#pragma once
#include <sk.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sk::host {

class TlsBlock {
 public:
  // `image` (the initialised part) then zeros up to `size` bytes, aligned to `align` (a power of
  // two). `static_tls`: the block must lie at one offset from every thread's pointer. Fails with
  // SK_ERR_UNSUPPORTED and sets *why to glibc's reason (no static TLS space left, no memfd)
  // without setting the last error: the caller names the variable that needs it.
  static sk_status create(const std::vector<uint8_t> &image, uint64_t size, uint64_t align, bool static_tls,
                          std::unique_ptr<TlsBlock> *out, std::string *why);
  ~TlsBlock();  // dlclose
  TlsBlock(const TlsBlock &) = delete;
  TlsBlock &operator=(const TlsBlock &) = delete;

  uint64_t module_id() const { return module_id_; }  // for __tls_get_addr's {module, offset}
  // static_tls: the block's offset from the thread pointer (x86-64: negative, AArch64: positive).
  int64_t tp_offset() const { return tp_offset_; }

 private:
  TlsBlock() = default;
  void *handle_ = nullptr;
  int fd_ = -1;  // kept open while loaded: its /proc/self/fd name is glibc's name for the object
  uint64_t module_id_ = 0;
  int64_t tp_offset_ = 0;
};

}  // namespace sk::host
