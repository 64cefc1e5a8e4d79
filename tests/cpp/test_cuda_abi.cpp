// libsk declares the few driver API types it needs itself (src/cuda/driver_api.hpp) so that it
// builds without a CUDA toolkit; where the toolkit's cuda.h is at hand, they must match it.
#include <gtest/gtest.h>

#include <cstddef>

#include "cuda/driver_api.hpp"

#if __has_include(<cuda.h>)
#include <cuda.h>

TEST(CudaAbi, MirroredTypesMatchCudaH) {
  using namespace sk::cuda;
  static_assert(sizeof(LaunchAttribute) == sizeof(CUlaunchAttribute));
  static_assert(offsetof(LaunchAttribute, value) == offsetof(CUlaunchAttribute, value));
  static_assert(sizeof(LaunchConfig) == sizeof(CUlaunchConfig));
  static_assert(offsetof(LaunchConfig, stream) == offsetof(CUlaunchConfig, hStream));
  static_assert(offsetof(LaunchConfig, attrs) == offsetof(CUlaunchConfig, attrs));
  static_assert(offsetof(LaunchConfig, num_attrs) == offsetof(CUlaunchConfig, numAttrs));
  static_assert(sizeof(sk::cuda::CUdeviceptr) == sizeof(::CUdeviceptr));
  EXPECT_EQ(sk::cuda::CU_LAUNCH_ATTRIBUTE_COOPERATIVE, (int)::CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, (int)::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, (int)::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, (int)::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, (int)::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, (int)::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  EXPECT_EQ(sk::cuda::CU_FUNC_ATTRIBUTE_NUM_REGS, (int)::CU_FUNC_ATTRIBUTE_NUM_REGS);
  EXPECT_EQ(sk::cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            (int)::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  EXPECT_EQ(sk::cuda::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, (int)::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  EXPECT_EQ(sk::cuda::CU_EVENT_DISABLE_TIMING, (unsigned)::CU_EVENT_DISABLE_TIMING);
  EXPECT_EQ(sk::cuda::CU_STREAM_NON_BLOCKING, (unsigned)::CU_STREAM_NON_BLOCKING);
  EXPECT_EQ(sk::cuda::CUDA_ERROR_NOT_READY, (int)::CUDA_ERROR_NOT_READY);
  EXPECT_EQ(sk::cuda::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (int)::CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
  EXPECT_EQ(sk::cuda::CU_MEMORYTYPE_HOST, (unsigned)::CU_MEMORYTYPE_HOST);
}
#else
TEST(CudaAbi, MirroredTypesMatchCudaH) { GTEST_SKIP() << "cuda.h is not on the include path"; }
#endif
