// Stale-handle detection for the public handles, cheap enough for the launch path.
//
// Every handle struct derives from Handle<type>: its first word is a tag, live while the handle
// is, and poisoned by the destroy function. The memory of a destroyed handle (its "shell") is
// not given back to the allocator at once: it waits in a per-type free list and is reused only
// for a handle of the same type, so a stale pointer the user keeps points at a poisoned tag (or,
// later, at a live handle of the same type), never at unmapped or foreign memory while the shell
// is kept. Checking a handle is one relaxed load: no lock, no allocation (see sk_launch).
// What is detected and what stays undefined is written down in docs/conventions.md.
#pragma once
#include <sk.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sk::api {

enum class HandleType : uint32_t { Device = 1, Module, Kernel, Stream, Scope, SuperKernel, Event };

constexpr uint32_t live_tag(HandleType t) { return 0x4b530000u | static_cast<uint32_t>(t) << 8 | 0x4cu; }
constexpr uint32_t dead_tag(HandleType t) { return 0x4b530000u | static_cast<uint32_t>(t) << 8 | 0x44u; }

// Shell storage (handle_pool.cpp). A destroyed shell stays poisoned in quarantine while at
// least kQuarantine newer shells of its type wait; at most kKeep shells per type are kept.
constexpr size_t kQuarantine = 256;
constexpr size_t kKeep = 4096;
void *shell_allocate(HandleType t, size_t size);
void shell_release(HandleType t, void *p, size_t size) noexcept;

template <HandleType T>
struct Handle {
  static constexpr HandleType kType = T;
  std::atomic<uint32_t> tag{live_tag(T)};

  bool live() const { return tag.load(std::memory_order_relaxed) == live_tag(T); }
  bool dead() const { return tag.load(std::memory_order_relaxed) == dead_tag(T); }

  static void *operator new(size_t size) { return shell_allocate(T, size); }
  static void operator delete(void *p, size_t size) noexcept { shell_release(T, p, size); }
};

// The C API calls' check: SK_OK for a live handle of the right type; otherwise fails naming
// the call and the argument: SK_ERR_INVALID_ARGUMENT for NULL or a pointer whose tag is not
// this type's, SK_ERR_STATE for a destroyed handle (`gone` says how: "was closed"...).
sk_status stale_or_foreign(bool is_null, bool is_dead, const void *h, const char *call, const char *what,
                           const char *gone);

template <class H>
inline sk_status check_handle(const H *h, const char *call, const char *what, const char *gone) {
  if (h && h->live()) [[likely]]
    return SK_OK;
  return stale_or_foreign(h == nullptr, h && h->dead(), h, call, what, gone);
}

}  // namespace sk::api
