// The definitions that shadow the C library's: each counts while a stretch is open, then calls
// the C library's own (glibc's __libc_* for the heap; the next definition, found with dlsym
// at the first call, for the locks).
#include "call_counter.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

extern "C" {
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);
}

namespace {

// Constant-initialised: malloc runs before any constructor.
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocations{0}, g_frees{0}, g_locks{0};

inline void count(std::atomic<uint64_t> &c) {
  if (g_counting.load(std::memory_order_relaxed)) c.fetch_add(1, std::memory_order_relaxed);
}

template <class Fn>
Fn next_definition(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) {
    std::fprintf(stderr, "call_counter: no %s after this executable's\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

// The C library's definition of `name`, looked up at the first call (possibly before main:
// the C++ runtime takes locks while it starts). dlsym's own locking stays inside the C
// library, so the look-up cannot come back here; two threads racing store the same address.
template <class Fn>
Fn next(std::atomic<Fn> &cache, const char *name) {
  Fn f = cache.load(std::memory_order_relaxed);
  if (!f) {
    f = next_definition<Fn>(name);
    cache.store(f, std::memory_order_relaxed);
  }
  return f;
}

}  // namespace

namespace sk::test {

void CallCounter::start() {
  g_allocations.store(0);
  g_frees.store(0);
  g_locks.store(0);
  g_counting.store(true, std::memory_order_seq_cst);
}

CallCounts CallCounter::stop() {
  g_counting.store(false, std::memory_order_seq_cst);
  return CallCounts{g_allocations.load(), g_frees.load(), g_locks.load()};
}

}  // namespace sk::test

extern "C" {

void *malloc(size_t n) {
  count(g_allocations);
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
  count(g_allocations);
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
  count(g_allocations);
  return __libc_realloc(p, n);
}
void *memalign(size_t align, size_t n) {
  count(g_allocations);
  return __libc_memalign(align, n);
}
void *aligned_alloc(size_t align, size_t n) {
  count(g_allocations);
  return __libc_memalign(align, n);
}
int posix_memalign(void **out, size_t align, size_t n) {
  count(g_allocations);
  if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0) return 22;  // EINVAL
  void *p = __libc_memalign(align, n);
  if (!p && n) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void free(void *p) {
  if (p) count(g_frees);
  __libc_free(p);
}

#define SK_COUNTED_LOCK(ret, name, params, args)     \
  ret name params {                                  \
    static std::atomic<ret(*) params> real{nullptr}; \
    count(g_locks);                                  \
    return next(real, #name) args;                   \
  }
SK_COUNTED_LOCK(int, pthread_mutex_lock, (pthread_mutex_t * m), (m))
SK_COUNTED_LOCK(int, pthread_mutex_trylock, (pthread_mutex_t * m), (m))
SK_COUNTED_LOCK(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *t), (m, t))
SK_COUNTED_LOCK(int, pthread_rwlock_rdlock, (pthread_rwlock_t * l), (l))
SK_COUNTED_LOCK(int, pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l))
SK_COUNTED_LOCK(int, pthread_spin_lock, (pthread_spinlock_t * l), (l))
SK_COUNTED_LOCK(int, sem_wait, (sem_t * s), (s))
#undef SK_COUNTED_LOCK

}  // extern "C"
