#include "api/open_devices.hpp"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "api/capabilities.hpp"
#include "api/handles.hpp"
#include "common/fork_guard.hpp"

namespace sk::api {
namespace {
std::mutex g_mutex;
// A device opened in a fork() child registers itself under g_mutex, which another thread may
// hold at the fork.
[[maybe_unused]] const bool g_mutex_held_across_fork = (hold_across_fork(g_mutex, "open devices"), true);
std::set<sk_device *> &devices() {
  static std::set<sk_device *> s;
  return s;
}

// sk_stream_synchronize(NULL) in a synchronous launch loop on the one open device (the common
// embedded case) takes no lock and copies no shared_ptr: while exactly one device is open, it
// is published in g_only, and a synchroniser counts itself in g_only_users before it reads it.
// Closing the device last published waits until no such synchroniser is inside (the count and
// the pointer are seq_cst, so a closer that unpublished the device sees every synchroniser that
// may have read it); no device is published during that wait. So the synchronisers inside are
// only ever those of the last device published.
std::atomic<sk_device *> g_only{nullptr};
std::atomic<uint32_t> g_only_users{0};
sk_device *g_last_published = nullptr;  // under g_mutex
uint32_t g_closers_waiting = 0;         // under g_mutex

void publish_only() {  // under g_mutex
  std::set<sk_device *> &open = devices();
  sk_device *only = open.size() == 1 && g_closers_waiting == 0 ? *open.begin() : nullptr;
  if (only) g_last_published = only;
  g_only.store(only, std::memory_order_seq_cst);
}

// A device opened before this process forked: nothing of it runs here, and its failure would
// hide the state of the devices this process opened (common/fork_guard.hpp).
sk_status synchronize_default(backend::Device &d) {
  return forked_away(d) ? SK_OK : d.synchronize(nullptr, "sk_stream_synchronize");
}
}  // namespace

void register_device(sk_device *dev) {
  std::lock_guard<std::mutex> lock(g_mutex);
  devices().insert(dev);
  publish_only();
}

void unregister_device(sk_device *dev) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    devices().erase(dev);
    if (g_last_published != dev) return publish_only();
    g_last_published = nullptr;
    ++g_closers_waiting;
    publish_only();  // publishes nothing while a closer waits
  }
  while (g_only_users.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  std::lock_guard<std::mutex> lock(g_mutex);
  --g_closers_waiting;
  publish_only();
}

sk_status synchronize_default_streams() {
  g_only_users.fetch_add(1, std::memory_order_seq_cst);
  if (sk_device *only = g_only.load(std::memory_order_seq_cst)) {
    sk_status st = guarded("sk_stream_synchronize", [only] { return synchronize_default(*only->backend); });
    g_only_users.fetch_sub(1, std::memory_order_release);
    return st;
  }
  g_only_users.fetch_sub(1, std::memory_order_relaxed);
  // Reused per thread: a synchronous launch loop allocates nothing here.
  thread_local std::vector<std::shared_ptr<backend::Device>> open;
  open.clear();
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (sk_device *d : devices()) open.push_back(d->backend);
  }
  sk_status first = SK_OK;
  for (auto &d : open) {
    sk_status st = guarded("sk_stream_synchronize", [&d] { return synchronize_default(*d); });
    if (first == SK_OK) first = st;
  }
  open.clear();  // hold no device past the call
  return first;
}

}  // namespace sk::api
