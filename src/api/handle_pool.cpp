// Shell storage of the public handles (handle_tag.hpp): per-type FIFO free lists.
#include <deque>
#include <mutex>
#include <new>

#include "api/handle_tag.hpp"
#include "common/error.hpp"
#include "common/fork_guard.hpp"

namespace sk::api {
namespace {

struct Pool {
  std::mutex mutex;
  std::deque<void *> freed;  // oldest first
};

Pool &pool(HandleType t) {
  // Leaked on purpose: handles destroyed from static destructors must still find it. A handle
  // made in a fork() child takes one of these locks, which another thread may hold at the fork.
  static Pool *pools = [] {
    Pool *made = new Pool[8];
    for (int i = 0; i < 8; ++i) hold_across_fork(made[i].mutex, "handle shells");
    return made;
  }();
  return pools[static_cast<uint32_t>(t) & 7];
}

}  // namespace

void *shell_allocate(HandleType t, size_t size) {
  Pool &p = pool(t);
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    // Reuse only shells that have waited behind kQuarantine newer ones: a stale handle stays
    // detectable for a while even when handles of its type are created and destroyed in a loop.
    if (p.freed.size() > kQuarantine) {
      void *shell = p.freed.front();
      p.freed.pop_front();
      return shell;
    }
  }
  return ::operator new(size);
}

void shell_release(HandleType t, void *shell, [[maybe_unused]] size_t size) noexcept {
  // The object is destroyed: a fresh atomic in its first word says so to whoever still holds it.
  new (shell) std::atomic<uint32_t>(dead_tag(t));
  Pool &p = pool(t);
  void *evicted = nullptr;
  try {
    std::lock_guard<std::mutex> lock(p.mutex);
    p.freed.push_back(shell);
    if (p.freed.size() > kKeep) {
      evicted = p.freed.front();
      p.freed.pop_front();
    }
  } catch (const std::bad_alloc &) {
    evicted = shell;  // no room to keep it: plain free (its stale uses become undefined)
  }
  if (evicted) ::operator delete(evicted);
}

sk_status stale_or_foreign(bool is_null, bool is_dead, const void *h, const char *call, const char *what,
                           const char *gone) {
  if (is_null) return fail(SK_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, what);
  if (is_dead) return fail(SK_ERR_STATE, "%s: %s %p %s (stale handle)", call, what, h, gone);
  return fail(SK_ERR_INVALID_ARGUMENT, "%s: %p is not a live %s handle", call, h, what);
}

}  // namespace sk::api
