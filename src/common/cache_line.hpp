// The size that keeps data written by different cores on lines of their own (no false sharing).
// Not std::hardware_destructive_interference_size: it changes with -mtune, and these structs
// must have one layout in all of libsk.
#pragma once
#include <cstddef>

namespace sk {

#if defined(__aarch64__)
inline constexpr std::size_t kCacheLine = 128;  // AArch64 machines with 128-byte lines exist
#else
inline constexpr std::size_t kCacheLine = 64;
#endif

}  // namespace sk
