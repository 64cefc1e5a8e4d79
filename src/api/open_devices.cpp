#include "api/open_devices.hpp"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "api/cuda_entry.hpp"
#include "api/handles.hpp"
#include "host/fork_guard.hpp"

namespace sk::api {
namespace {
std::mutex g_mutex;
// A device opened in a fork() child registers itself under g_mutex, which another thread may
// hold at the fork.
[[maybe_unused]] const bool g_mutex_held_across_fork = (host::hold_across_fork(g_mutex, "open devices"), true);
std::set<sk_device *> &devices() {
  static std::set<sk_device *> s;
  return s;
}

// sk_stream_synchronize(NULL) in a synchronous launch loop on the one open device (the common
// embedded case) takes no lock and copies no shared_ptr: while exactly one host device is
// open, it is published in g_only_host, and a synchroniser counts itself in g_only_host_users
// before it reads it. Closing the device last published waits until no such synchroniser is
// inside (the count and the pointer are seq_cst, so a closer that unpublished the device sees
// every synchroniser that may have read it); no device is published during that wait. So the
// synchronisers inside are only ever those of the last device published.
std::atomic<sk_device *> g_only_host{nullptr};
std::atomic<uint32_t> g_only_host_users{0};
sk_device *g_last_published = nullptr;  // under g_mutex
uint32_t g_closers_waiting = 0;         // under g_mutex

void publish_only_host() {  // under g_mutex
  std::set<sk_device *> &open = devices();
  sk_device *only =
      open.size() == 1 && !(*open.begin())->cuda && g_closers_waiting == 0 ? *open.begin() : nullptr;
  if (only) g_last_published = only;
  g_only_host.store(only, std::memory_order_seq_cst);
}
}  // namespace

void register_device(sk_device *dev) {
  std::lock_guard<std::mutex> lock(g_mutex);
  devices().insert(dev);
  publish_only_host();
}

void unregister_device(sk_device *dev) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    devices().erase(dev);
    if (g_last_published != dev) return publish_only_host();
    g_last_published = nullptr;
    ++g_closers_waiting;
    publish_only_host();  // publishes nothing while a closer waits
  }
  while (g_only_host_users.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  std::lock_guard<std::mutex> lock(g_mutex);
  --g_closers_waiting;
  publish_only_host();
}

sk_status synchronize_default_streams() {
  g_only_host_users.fetch_add(1, std::memory_order_seq_cst);
  if (sk_device *only = g_only_host.load(std::memory_order_seq_cst)) {
    host::Executor &ex = only->impl->executor();
    sk_status st = ex.forked_away() ? SK_OK : ex.synchronize(&only->impl->default_stream());
    g_only_host_users.fetch_sub(1, std::memory_order_release);
    return st;
  }
  g_only_host_users.fetch_sub(1, std::memory_order_relaxed);
  // Reused per thread: a synchronous launch loop allocates nothing here.
  thread_local std::vector<std::shared_ptr<host::HostDevice>> open;
  open.clear();
  sk_status first = SK_OK;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (sk_device *d : devices()) {
      if (d->cuda) {  // synchronised under the lock: closing it waits for this
        sk_status st = cuda_synchronize_default(d);
        if (first == SK_OK) first = st;
        continue;
      }
      // A device opened before this process forked: nothing of it runs here, and its
      // failure would hide the state of the devices this process opened (host/fork_guard.hpp).
      if (d->impl->executor().forked_away()) continue;
      open.push_back(d->impl);
    }
  }
  for (auto &d : open) {
    sk_status st = d->executor().synchronize(&d->default_stream());
    if (first == SK_OK) first = st;
  }
  open.clear();  // hold no device past the call
  return first;
}

}  // namespace sk::api
