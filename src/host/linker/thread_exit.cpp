#include "host/linker/thread_exit.hpp"

#include <mutex>
#include <set>
#include <vector>

// glibc's: runs `fn(obj)` when the calling thread exits (and keeps `dso` loaded until then).
extern "C" int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);
extern "C" void *__dso_handle;  // libsk's own: its code runs the destructors

namespace sk::host {
namespace {

struct Destructor {
  void (*fn)(void *);
  void *object;
  void *dso;
};

// One per thread that registered a destructor; in `lists` until its thread exits.
struct ThreadList {
  std::vector<Destructor> pending;
};

std::mutex &lock() {
  static std::mutex *m = new std::mutex;  // never destroyed: threads may exit after main returns
  return *m;
}
std::set<ThreadList *> &lists() {
  static auto *s = new std::set<ThreadList *>;
  return *s;
}
thread_local ThreadList *this_thread_list = nullptr;

// At the thread's exit: its destructors, last registered first; a destructor may register more.
void run_thread_list(void *p) {
  auto *list = static_cast<ThreadList *>(p);
  for (;;) {
    Destructor d;
    {
      std::lock_guard<std::mutex> guard(lock());
      if (list->pending.empty()) {
        lists().erase(list);
        break;
      }
      d = list->pending.back();
      list->pending.pop_back();
    }
    d.fn(d.object);
  }
  this_thread_list = nullptr;
  delete list;
}

int register_destructor(void (*fn)(void *), void *object, void *dso) {
  if (!this_thread_list) {
    auto *list = new ThreadList;
    if (__cxa_thread_atexit_impl(run_thread_list, list, &__dso_handle) != 0) {
      delete list;
      return -1;
    }
    this_thread_list = list;
    std::lock_guard<std::mutex> guard(lock());
    lists().insert(list);
  }
  std::lock_guard<std::mutex> guard(lock());
  this_thread_list->pending.push_back({fn, object, dso});
  return 0;
}

}  // namespace

void *thread_exit_registrar() { return reinterpret_cast<void *>(&register_destructor); }

void drop_thread_exit_destructors(void *dso_handle) {
  std::lock_guard<std::mutex> guard(lock());
  for (ThreadList *list : lists())
    std::erase_if(list->pending, [&](const Destructor &d) { return d.dso == dso_handle; });
}

}  // namespace sk::host
