// What the stand-in driver (fake_cuda_driver.cpp) records of each cuLaunchKernelEx, as its
// tests read it back through fake_cuda_launches and fake_cuda_plain_launches.
#pragma once
#include <cstdint>

// A launch of libsk's entry: its grid, block and cooperative flag, and its parameters.
struct FakeLaunch {
  unsigned grid, block;
  int cooperative;
  void *stream;
  uint64_t first_slot;           // first 8 bytes of the argument slots (parameter or buffer mode)
  uint64_t args_buffer;          // buffer mode: the buffer's address; 0 in parameter mode
  uint64_t sync, epoch, report;  // epoch: of the launch's first run (0 until it runs)
  unsigned runs;                 // the run count it was given (sk_launch_repeat's n)
  uint64_t stop, last_epoch;     // the stop flag's address; the epoch of the last run it ran
};

// A linked cubin's own kernel as the driver takes it (a plain launch): the kernel, its grid,
// block, dynamic shared bytes, cluster (the attribute's; zeros: none) and its parameter space
// as the kernel would see it (each parameter at its EIATTR_KPARAM_INFO offset).
struct FakePlainLaunch {
  char function[64];
  unsigned grid[3], block[3], shared;
  unsigned param_bytes;
  unsigned char params[32768];
  void *stream;
  int cooperative;
  unsigned cluster[3];
};
