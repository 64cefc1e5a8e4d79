// Fused == unfused, through the public API, for the kernel objects of every compiler variant:
// a chain of 96 kernels with mixed block dims (multiplexed, sync_all, task overlap), launched
// many times; argument rebinding; every parameter type; explain.
#include <gtest/gtest.h>
#include <sk.h>

#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "linker_test_support.hpp"
#include "sk_assert.hpp"

namespace {

struct Buffers {
  static constexpr uint32_t n = 1000;
  float *x = nullptr, *y = nullptr, *z = nullptr, *partials = nullptr, *scratch = nullptr, *coeffs = nullptr;
};

class Fusion : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_SK(sk_device_open("host:cores=2", &dev_));
    ASSERT_SK(sk_module_load_file(dev_, sk::test::kernel_path(GetParam(), "chain_ops").c_str(), &mod_));
    for (const char *k :
         {"axpy", "mul_add", "relu_strided", "normalize_sync", "produce_then_release", "prologue_then_wait"}) {
      sk_kernel *kk = nullptr;
      ASSERT_SK(sk_module_get_kernel(mod_, k, &kk));
      kernels_.push_back(kk);
    }
    // A kernel from a C++ translation unit, in its own object.
    ASSERT_SK(sk_module_load_file(dev_, sk::test::kernel_path(GetParam(), "chain_cxx").c_str(), &cxx_mod_));
    sk_kernel *kk = nullptr;
    ASSERT_SK(sk_module_get_kernel(cxx_mod_, "cxx_scale_shift", &kk));
    kernels_.push_back(kk);
  }
  void TearDown() override {
    sk_module_unload(mod_);
    sk_module_unload(cxx_mod_);
    sk_device_close(dev_);
  }

  void alloc(Buffers &b) {
    for (float **p : {&b.x, &b.y, &b.z, &b.partials, &b.scratch, &b.coeffs})
      ASSERT_SK(sk_mem_alloc(dev_, Buffers::n * sizeof(float), reinterpret_cast<void **>(p)));
  }
  void fill(Buffers &b, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (uint32_t i = 0; i < Buffers::n; ++i) {
      b.x[i] = d(rng);
      b.y[i] = d(rng);
      b.z[i] = d(rng);
      b.scratch[i] = 0;
    }
  }
  void release(Buffers &b) {
    for (float *p : {b.x, b.y, b.z, b.partials, b.scratch, b.coeffs}) sk_mem_free(dev_, p);
  }

  // Step k of the chain: kernel, block dim, argument values.
  struct Step {
    sk_kernel *kernel;
    uint32_t block_dim;
    std::vector<void *> args;
    std::vector<std::vector<unsigned char>> storage;
  };
  template <class T>
  static void *keep(Step &s, T v) {
    s.storage.emplace_back(sizeof(T));
    std::memcpy(s.storage.back().data(), &v, sizeof(T));
    return s.storage.back().data();
  }
  std::vector<Step> chain(Buffers &b, int count) {
    const uint32_t dims[] = {1, 2, 3, 5, 8, 2, 1, 7};
    std::vector<Step> steps(count);
    for (int k = 0; k < count; ++k) {
      Step &s = steps[k];
      s.storage.reserve(8);
      uint32_t n = Buffers::n;
      switch (k % 7) {
        case 0:
          s.kernel = kernels_[0];
          s.args = {keep(s, b.x), keep(s, b.y), keep(s, 0.5f + 0.01f * k), keep(s, n)};
          break;
        case 1:
          s.kernel = kernels_[1];
          s.args = {keep(s, b.y), keep(s, b.z), keep(s, b.x), keep(s, n)};
          break;
        case 2:
          s.kernel = kernels_[2];
          s.args = {keep(s, b.x), keep(s, n)};
          break;
        case 3:
          s.kernel = kernels_[3];
          s.args = {keep(s, b.x), keep(s, b.partials), keep(s, n)};
          break;
        case 4:
          s.kernel = kernels_[4];
          s.args = {keep(s, b.y), keep(s, b.scratch), keep(s, n)};
          break;
        case 5:
          s.kernel = kernels_[5];
          s.args = {keep(s, b.y), keep(s, b.coeffs), keep(s, n)};
          break;
        case 6:
          s.kernel = kernels_[6];
          s.args = {keep(s, b.z), keep(s, 0.875f), keep(s, n)};
          break;
      }
      s.block_dim = (k % 7 == 3) ? 2 : dims[k % 8];  // sync_all kernels: at most the 2 cores
    }
    return steps;
  }

  sk_device *dev_ = nullptr;
  sk_module *mod_ = nullptr, *cxx_mod_ = nullptr;
  std::vector<sk_kernel *> kernels_;
};

TEST_P(Fusion, ChainOf96KernelsFusedEqualsUnfusedOverManyLaunches) {
  Buffers fused, unfused;
  alloc(fused);
  alloc(unfused);
  fill(fused, 7);
  fill(unfused, 7);
  auto fsteps = chain(fused, 96);
  auto usteps = chain(unfused, 96);
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "chain96", nullptr, &scope));
  for (Step &s : fsteps) ASSERT_SK(sk_add_kernel(scope, s.kernel, s.block_dim, s.args.data(), nullptr));
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  for (int launch = 0; launch < 20; ++launch) {
    for (Step &s : usteps) ASSERT_SK(sk_launch_kernel(s.kernel, s.block_dim, s.args.data(), nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    ASSERT_SK(sk_launch(sk, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    ASSERT_EQ(std::memcmp(fused.x, unfused.x, Buffers::n * sizeof(float)), 0) << "launch " << launch;
    ASSERT_EQ(std::memcmp(fused.y, unfused.y, Buffers::n * sizeof(float)), 0) << "launch " << launch;
    ASSERT_EQ(std::memcmp(fused.z, unfused.z, Buffers::n * sizeof(float)), 0) << "launch " << launch;
    ASSERT_EQ(std::memcmp(fused.scratch, unfused.scratch, Buffers::n * sizeof(float)), 0);
  }
  // The data really changed (the check above is not comparing two untouched buffers).
  Buffers fresh;
  alloc(fresh);
  fill(fresh, 7);
  EXPECT_NE(std::memcmp(fresh.x, fused.x, Buffers::n * sizeof(float)), 0);
  release(fresh);
  sk_superkernel_destroy(sk);
  release(fused);
  release(unfused);
}

TEST_P(Fusion, RebindingAnArgumentRedirectsLaterLaunches) {
  Buffers a, b;
  alloc(a);
  alloc(b);
  fill(a, 1);
  fill(b, 1);
  auto steps = chain(a, 12);
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "rebind", "early-start=0", &scope));
  for (Step &s : steps) ASSERT_SK(sk_add_kernel(scope, s.kernel, s.block_dim, s.args.data(), nullptr));
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  // Point step 0 (axpy x -> y) at b's buffers, and compare with unfused runs on b.
  ASSERT_SK(sk_superkernel_set_arg(sk, 0, 0, &b.x));
  ASSERT_SK(sk_superkernel_set_arg(sk, 0, 1, &b.y));
  float a_y_before[Buffers::n];
  std::memcpy(a_y_before, a.y, sizeof a_y_before);
  Buffers ref;
  alloc(ref);
  fill(ref, 1);
  auto rsteps = chain(ref, 12);
  ASSERT_SK(sk_launch(sk, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  float a0 = 0.5f;
  // Reference: step 0 alone on ref (seeded like b); the other steps only touch a's buffers.
  uint32_t n = Buffers::n;
  void *args0[] = {&ref.x, &ref.y, &a0, &n};
  ASSERT_SK(sk_launch_kernel(steps[0].kernel, steps[0].block_dim, args0, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  EXPECT_EQ(std::memcmp(b.y, ref.y, sizeof(float) * n), 0);
  EXPECT_NE(std::memcmp(b.y, a_y_before, sizeof(float) * n), 0);
  sk_superkernel_destroy(sk);
  release(a);
  release(b);
  release(ref);
}

TEST_P(Fusion, EveryParameterTypeArrivesIntact) {
  sk_kernel *k = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod_, "all_types", &k));
  double *out = nullptr;
  ASSERT_SK(sk_mem_alloc(dev_, 10 * sizeof(double), reinterpret_cast<void **>(&out)));
  int8_t a = -5;
  uint8_t b = 250;
  int16_t c = -30000;
  uint16_t d = 65000;
  int32_t e = -2000000000;
  uint32_t f = 4000000000u;
  int64_t g = -(int64_t{1} << 40);
  uint64_t h = uint64_t{1} << 52;
  float i = 1.5f;
  double j = -2.25;
  void *args[] = {&out, &a, &b, &c, &d, &e, &f, &g, &h, &i, &j};
  const double expect[] = {
      -5, 250, -30000, 65000, -2000000000.0, 4000000000.0, -1099511627776.0, 4503599627370496.0, 1.5, -2.25};
  ASSERT_SK(sk_launch_kernel(k, 1, args, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  for (int x = 0; x < 10; ++x) EXPECT_EQ(out[x], expect[x]) << "param " << x + 1;
  std::memset(out, 0, 10 * sizeof(double));
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "types", nullptr, &scope));
  ASSERT_SK(sk_add_kernel(scope, k, 3, args, nullptr));
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  ASSERT_SK(sk_launch(sk, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  for (int x = 0; x < 10; ++x) EXPECT_EQ(out[x], expect[x]) << "fused, param " << x + 1;
  sk_superkernel_destroy(sk);
  sk_mem_free(dev_, out);
}

// wide_mixed goes through a register-map call whose stack words mix integers and floats;
// too_wide has more stack parameters than that call passes and goes through libffi. Each
// writes every parameter back; unfused, fused, and after rebinding a stack parameter.
TEST_P(Fusion, WideSignaturesArriveIntactThroughRegisterMapAndLibffi) {
  sk_kernel *mixed = nullptr, *wide = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod_, "wide_mixed", &mixed));
  ASSERT_SK(sk_module_get_kernel(mod_, "too_wide", &wide));
  double *out = nullptr;
  ASSERT_SK(sk_mem_alloc(dev_, 40 * sizeof(double), reinterpret_cast<void **>(&out)));
  double *out_wide = out + 20;
  float f1 = 0.1f, f2 = -3.75f, f3 = 1e-30f, f4 = 65504.5f, f5 = -0.0f, f6 = 7.125f, f7 = -1e20f;
  double d1 = 0.2, d2 = -1e300, d3 = 3.5, d4 = -0.125, d5 = 1e-310, d6 = 42.0;
  int8_t i1 = -128;
  uint16_t i2 = 65535;
  int32_t i3 = -123456789;
  uint64_t i4 = uint64_t{1} << 50;
  int64_t i5 = -(int64_t{1} << 45);
  uint8_t i6 = 255;
  void *mixed_args[] = {&out, &f1, &i1, &d1, &i2, &f2, &i3, &d2, &i4, &f3,
                        &d3,  &f4, &d4, &f5, &d5, &f6, &i5, &d6, &i6, &f7};
  double w[17];
  for (int x = 0; x < 17; ++x) w[x] = 1.0 / (x + 3) - x;
  void *wide_args[18] = {&out_wide};
  for (int x = 0; x < 17; ++x) wide_args[x + 1] = &w[x];
  auto expect_mixed = [&] {
    return std::vector<double>{f1, double(i1), d1, double(i2), f2, double(i3), d2, double(i4), f3, d3,
                               f4, d4,         f5, d5,         f6, double(i5), d6, double(i6), f7};
  };
  auto check = [&](const char *how) {
    const std::vector<double> want = expect_mixed();
    for (size_t x = 0; x < want.size(); ++x)
      EXPECT_EQ(std::memcmp(&out[x], &want[x], sizeof(double)), 0)
          << how << ": wide_mixed parameter " << x + 1 << " is " << out[x] << ", want " << want[x];
    for (int x = 0; x < 17; ++x) EXPECT_EQ(out_wide[x], w[x]) << how << ": too_wide parameter " << x + 1;
    std::memset(out, 0, 40 * sizeof(double));
  };
  std::memset(out, 0, 40 * sizeof(double));
  ASSERT_SK(sk_launch_kernel(mixed, 2, mixed_args, nullptr));
  ASSERT_SK(sk_launch_kernel(wide, 2, wide_args, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  check("unfused");
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "wide", nullptr, &scope));
  ASSERT_SK(sk_add_kernel(scope, mixed, 3, mixed_args, nullptr));
  ASSERT_SK(sk_add_kernel(scope, wide, 3, wide_args, nullptr));
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  ASSERT_SK(sk_launch(sk, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  check("fused");
  f7 = 2.5f;  // the last parameter: a stack word on both x86-64 and AArch64
  w[16] = -9.0;
  ASSERT_SK(sk_superkernel_set_arg(sk, 0, 19, &f7));
  ASSERT_SK(sk_superkernel_set_arg(sk, 1, 17, &w[16]));
  ASSERT_SK(sk_launch(sk, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  check("fused, rebound");
  char json[16384];
  ASSERT_SK(sk_superkernel_explain(sk, json, sizeof json, nullptr));
  EXPECT_NE(std::strstr(json, "\"calls\":{\"direct\":0,\"register map\":1,\"libffi\":1}"), nullptr) << json;
  sk_superkernel_destroy(sk);
  sk_mem_free(dev_, out);
}

TEST_P(Fusion, NarrowIntegersArriveExtendedThroughTheDirectCall) {
  sk_kernel *k = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod_, "narrow_ints", &k));
  int32_t *out = nullptr;
  ASSERT_SK(sk_mem_alloc(dev_, 6 * sizeof(int32_t), reinterpret_cast<void **>(&out)));
  int8_t a = -100;
  int16_t b = -30000;
  uint8_t c = 200;
  uint16_t d = 60000;
  int32_t e = -7;
  void *args[] = {&out, &a, &b, &c, &d, &e};
  const int32_t expect[] = {-100, -30000, 200, 60000, -7, -100 - 30000 + 200 + 60000 - 7};
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "narrow", nullptr, &scope));
  ASSERT_SK(sk_add_kernel(scope, k, 2, args, nullptr));
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  for (int round = 0; round < 2; ++round) {
    std::memset(out, 0, 6 * sizeof(int32_t));
    if (round == 1) {  // rebound values go through the same widening
      a = -1, b = -2, e = -3;
      ASSERT_SK(sk_superkernel_set_arg(sk, 0, 1, &a));
      ASSERT_SK(sk_superkernel_set_arg(sk, 0, 2, &b));
      ASSERT_SK(sk_superkernel_set_arg(sk, 0, 5, &e));
    }
    ASSERT_SK(sk_launch(sk, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    const int32_t want[] = {a, b, c, d, e, a + b + c + d + e};
    for (int x = 0; x < 6; ++x) EXPECT_EQ(out[x], round ? want[x] : expect[x]) << "round " << round << " slot " << x;
  }
  sk_superkernel_destroy(sk);
  sk_mem_free(dev_, out);
}

TEST_P(Fusion, ExplainShowsStepsBlockDimsAndDeviceApiUse) {
  Buffers b;
  alloc(b);
  auto steps = chain(b, 6);
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "explained", nullptr, &scope));
  sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
  opts.name = "first_axpy";
  ASSERT_SK(sk_add_kernel(scope, steps[0].kernel, steps[0].block_dim, steps[0].args.data(), &opts));
  for (size_t s = 1; s < steps.size(); ++s)
    ASSERT_SK(sk_add_kernel(scope, steps[s].kernel, steps[s].block_dim, steps[s].args.data(), nullptr));
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  size_t needed = 0;
  ASSERT_SK(sk_superkernel_explain(sk, nullptr, 0, &needed));
  std::string json(needed, '\0');
  ASSERT_SK(sk_superkernel_explain(sk, json.data(), json.size(), nullptr));
  for (const char *want :
       {"\"name\":\"explained\"", "\"name\":\"first_axpy\"", "\"symbol\":\"axpy\"", "\"name\":\"normalize_sync\"",
        "\"sk_sync_all\"", "\"sk_set_next_task_start\"", "\"wait_previous\":\"sk_wait_pre_task_end\"",
        "\"release_next\":\"sk_set_next_task_start\"", "\"block_dim\":8", "\"blocks_per_core\":4", "\"cores\":2"})
    EXPECT_NE(json.find(want), std::string::npos) << want << " in " << json;
  sk_superkernel_destroy(sk);
  release(b);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, Fusion, ::testing::ValuesIn(sk::test::kernel_variants()),
                         sk::test::variant_name);

}  // namespace
