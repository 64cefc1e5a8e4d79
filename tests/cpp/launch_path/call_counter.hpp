// Counts the heap and lock calls a stretch of code makes, from every thread: this test
// executable defines malloc, free and the pthread lock functions itself, so that the calls
// libsk (and the C++ runtime under it) makes go through these definitions first.
#pragma once
#include <cstdint>

namespace sk::test {

struct CallCounts {
  uint64_t allocations = 0;  // malloc, calloc, realloc, aligned_alloc, posix_memalign, memalign
  uint64_t frees = 0;        // free of a non-null pointer
  uint64_t locks = 0;        // pthread mutex, rwlock and spin locks, sem_wait
};

// Counts from start() until stop() returns what was counted; one stretch at a time.
class CallCounter {
 public:
  static void start();
  static CallCounts stop();
};

}  // namespace sk::test
