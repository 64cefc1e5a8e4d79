#include "api/open_devices.hpp"

#include <mutex>
#include <set>

#include "api/cuda_entry.hpp"
#include "api/handles.hpp"

namespace sk::api {
namespace {
std::mutex g_mutex;
std::set<sk_device *> &devices() {
  static std::set<sk_device *> s;
  return s;
}
}  // namespace

void register_device(sk_device *dev) {
  std::lock_guard<std::mutex> lock(g_mutex);
  devices().insert(dev);
}

void unregister_device(sk_device *dev) {
  std::lock_guard<std::mutex> lock(g_mutex);
  devices().erase(dev);
}

sk_status synchronize_default_streams() {
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
