// The destructors of thread_local objects (C++ thread_local, Rust's thread_local! with Drop),
// which their code registers per thread with __cxa_thread_atexit(_impl) against its module's
// __dso_handle, to run when the thread exits. glibc keeps a dlopen'ed library mapped until
// every thread with such destructors pending has exited; a linked module is unmapped when it
// is unloaded, so libsk binds both names to its own registrar: the destructors run at thread
// exit while their module is loaded, and an unloaded module's pending ones are dropped (never
// run: their code is gone), on every thread.
#pragma once

namespace sk::host {

// What __cxa_thread_atexit and __cxa_thread_atexit_impl bind to: int (void (*)(void *), void *,
// void *dso_handle).
void *thread_exit_registrar();

// Forgets the destructors registered with `dso_handle` on every thread (the module goes).
void drop_thread_exit_destructors(void *dso_handle);

}  // namespace sk::host
