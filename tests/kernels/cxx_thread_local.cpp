// C++ thread_local objects with destructors (what __cxa_thread_atexit registers): each thread
// that counts has its own tally, added to the sink when the thread exits while the module is
// loaded; an unloaded module's pending destructors must not run (their code is gone).
struct Tally {
  int *sink = nullptr;
  int count = 0;
  ~Tally() {
    if (sink) *sink += count;
  }
};

thread_local Tally cxx_tally;

extern "C" void cxx_thread_local_count(int *sink) {
  cxx_tally.sink = sink;
  ++cxx_tally.count;
}
