// include/sk.hpp from a C++ program linked against libsk.so as users link it; built twice from
// this one source, as C++17 and as C++20 (tests/cpp/CMakeLists.txt). A super kernel of three
// test kernels is checked against the same kernels launched unfused and against a reference;
// failures throw sk::Error with the status and the culprit; moves and destruction orders.
#include <sk.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef SK_TEST_KERNEL_DIR
#error "SK_TEST_KERNEL_DIR must name the folder of the compiled test kernels"
#endif

namespace {

static_assert(__cplusplus >= 201703L, "built as C++17 or later");

template <class T>
constexpr bool kMoveOnly =
    !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> && std::is_nothrow_move_constructible_v<T> &&
    std::is_nothrow_move_assignable_v<T> && std::is_nothrow_destructible_v<T>;
static_assert(kMoveOnly<sk::Device> && kMoveOnly<sk::Module> && kMoveOnly<sk::Stream> && kMoveOnly<sk::Scope> &&
              kMoveOnly<sk::SuperKernel> && kMoveOnly<sk::Buffer>);
static_assert(std::is_trivially_copyable_v<sk::Kernel>, "a Kernel is a view");
static_assert(std::is_base_of_v<std::runtime_error, sk::Error>);

std::string kernel_object(const char *name) {
  return std::string(SK_TEST_KERNEL_DIR) + "/gcc-O2-pie/" + name + ".o";
}

// Runs `body`, which must throw sk::Error with `status` and a message containing `needle`.
template <class F>
void expect_error(F &&body, sk_status status, const std::string &needle) {
  try {
    body();
    ADD_FAILURE() << "no sk::Error thrown, expected " << sk::status_name(status);
  } catch (const sk::Error &e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos)
        << "message \"" << e.message() << "\" does not name " << needle;
    EXPECT_EQ(std::string(e.what()), std::string(sk::status_name(status)) + ": " + e.message());
  }
}

// capi_fill, capi_axpb and capi_gather of tests/kernels/capi_chain.c on two buffers:
// a = fill(seed); a = a * mul + add; b += a[(i * stride + 1) % n] ^ i (reads other blocks' a).
struct Chain {
  static constexpr uint32_t kN = 1000;
  uint32_t n = kN, seed = 7, stride = 13;
  int32_t mul = 3, add = -5;

  std::vector<uint32_t> reference_a() const {
    std::vector<uint32_t> a(n);
    for (uint32_t i = 0; i < n; ++i)
      a[i] = (i * 2654435761u + seed) * static_cast<uint32_t>(mul) + static_cast<uint32_t>(add);
    return a;
  }
  std::vector<uint32_t> reference_b() const {
    std::vector<uint32_t> a = reference_a(), b(n, 0);
    for (uint32_t i = 0; i < n; ++i) b[i] += a[static_cast<uint32_t>((uint64_t{i} * stride + 1) % n)] ^ i;
    return b;
  }
};

struct Fixture : ::testing::Test {
  // Declared first so that it is destroyed last, as sk.hpp advises.
  sk::Device dev{"host:cores=4"};
  sk::Module mod = dev.load_file(kernel_object("capi_chain"));
  sk::Kernel fill = mod.kernel("capi_fill"), axpb = mod.kernel("capi_axpb"), gather = mod.kernel("capi_gather");
  Chain c;

  std::vector<uint32_t> read(const sk::Buffer &buf) {
    std::vector<uint32_t> out(c.n);
    dev.memcpy(out.data(), buf.get(), c.n * sizeof(uint32_t));
    return out;
  }
  void zero(const sk::Buffer &buf) {
    std::vector<uint32_t> zeros(c.n, 0);
    dev.memcpy(buf.get(), zeros.data(), c.n * sizeof(uint32_t));
  }
  // The chain as a scope, its arguments given through sk::args.
  sk::SuperKernel fused(uint32_t *a, uint32_t *b, const std::string &options = "") {
    sk::Scope scope = dev.scope("chain", options);
    scope.add(fill, 3, sk::args(&a, &c.n, &c.seed))
        .add(axpb, 4, sk::args(&a, &c.n, &c.mul, &c.add))
        .add(gather, 2, sk::args(&b, &a, &c.n, &c.stride), sk::KernelOptions{"gather_step", "", 0, 0});
    sk::SuperKernel fused_chain = scope.finalize();
    EXPECT_FALSE(scope) << "finalize consumes the scope";
    return fused_chain;
  }
};

TEST_F(Fixture, FusedMatchesUnfusedAndReference) {
  sk::Buffer fa = dev.alloc(c.n * sizeof(uint32_t)), fb = dev.alloc(c.n * sizeof(uint32_t));
  sk::Buffer ua = dev.alloc(c.n * sizeof(uint32_t)), ub = dev.alloc(c.n * sizeof(uint32_t));
  zero(fb);
  zero(ub);

  // Unfused: one launch per kernel on a stream, arguments as plain void * arrays.
  {
    sk::Stream stream = dev.stream();
    uint32_t *a = ua.as<uint32_t>(), *b = ub.as<uint32_t>();
    void *fill_args[] = {&a, &c.n, &c.seed};
    void *axpb_args[] = {&a, &c.n, &c.mul, &c.add};
    void *gather_args[] = {&b, &a, &c.n, &c.stride};
    fill.launch(3, fill_args, stream);
    axpb.launch(4, axpb_args, stream);
    gather.launch(2, gather_args, stream);
    stream.synchronize();
  }
  sk::SuperKernel fused_chain = fused(fa.as<uint32_t>(), fb.as<uint32_t>());
  fused_chain.launch();
  dev.synchronize();

  EXPECT_EQ(read(fa), read(ua));
  EXPECT_EQ(read(fb), read(ub));
  EXPECT_EQ(read(fa), c.reference_a());
  EXPECT_EQ(read(fb), c.reference_b());

  // set_arg: a new seed for step 0 (argument 2) applies to the next launch.
  c.seed = 1234;
  fused_chain.set_arg(0, 2, &c.seed);
  zero(fb);
  sk::Stream stream = dev.stream();
  fused_chain.launch(stream);
  stream.synchronize();
  EXPECT_EQ(read(fa), c.reference_a());
  EXPECT_EQ(read(fb), c.reference_b());

  const std::string plan = fused_chain.explain();
  ASSERT_FALSE(plan.empty());
  EXPECT_EQ(plan.front(), '{');
  EXPECT_EQ(plan.back(), '}');
  EXPECT_EQ(plan.find('\0'), std::string::npos);
  EXPECT_NE(plan.find("gather_step"), std::string::npos) << plan;
  EXPECT_NE(plan.find("capi_axpb"), std::string::npos) << plan;
}

TEST_F(Fixture, LaunchRepeat) {
  sk::Buffer a = dev.alloc(c.n * sizeof(uint32_t)), b = dev.alloc(c.n * sizeof(uint32_t));
  zero(b);
  sk::SuperKernel fused_chain = fused(a.as<uint32_t>(), b.as<uint32_t>());
  // Each run refills a and adds the same values to b: after k runs b is k times one run's.
  auto times = [this](uint32_t k) {
    std::vector<uint32_t> b = c.reference_b();
    for (uint32_t &v : b) v *= k;
    return b;
  };
  fused_chain.launch_repeat(3);
  dev.synchronize();
  EXPECT_EQ(read(b), times(3));
  const uint32_t stop = 1;  // set before the launch: one run
  sk::Stream stream = dev.stream();
  fused_chain.launch_repeat(5, &stop, stream);
  stream.synchronize();
  EXPECT_EQ(read(b), times(4));
  expect_error([&] { fused_chain.launch_repeat(0); }, SK_ERR_INVALID_ARGUMENT, "sk_launch_repeat");
}

TEST_F(Fixture, LoadFromBytesAndSignature) {
  std::vector<unsigned char> bytes;
  {
    std::FILE *f = std::fopen(kernel_object("capi_chain").c_str(), "rb");
    ASSERT_NE(f, nullptr);
    unsigned char chunk[4096];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, f)) > 0;)
      bytes.insert(bytes.end(), chunk, chunk + got);
    std::fclose(f);
  }
  sk::Module copy = dev.load(bytes.data(), bytes.size());
  sk::Kernel k = copy.kernel("capi_fill", "ptr,u32,u32");
  sk::Buffer a = dev.alloc(c.n * sizeof(uint32_t));
  uint32_t *p = a.as<uint32_t>();
  k.launch(5, sk::args(&p, &c.n, &c.seed));
  sk::synchronize_all();
  std::vector<uint32_t> got = read(a);
  for (uint32_t i = 0; i < c.n; ++i) ASSERT_EQ(got[i], i * 2654435761u + c.seed) << i;
  expect_error([&] { copy.kernel("capi_fill", "ptr,u32"); }, SK_ERR_INCOMPATIBLE, "capi_fill");
}

TEST_F(Fixture, StreamFusionAndProfile) {
  sk::Buffer a = dev.alloc(c.n * sizeof(uint32_t)), b = dev.alloc(c.n * sizeof(uint32_t));
  uint32_t *pa = a.as<uint32_t>(), *pb = b.as<uint32_t>();
  zero(b);
  sk::Scope scope = dev.scope("streams", "stream-fusion=1:profiling=1");
  sk::KernelOptions on1;
  on1.stream = 1;
  scope.add(fill, 2, sk::args(&pa, &c.n, &c.seed), on1).add(axpb, 2, sk::args(&pa, &c.n, &c.mul, &c.add), on1);
  scope.record_event(1, 0).wait_event(0, 0);
  scope.add(gather, 3, sk::args(&pb, &pa, &c.n, &c.stride));
  sk::SuperKernel fused_chain = scope.finalize();
  fused_chain.launch();
  dev.synchronize();
  EXPECT_EQ(read(b), c.reference_b());

  std::vector<sk_profile_record> records = fused_chain.profile();
  ASSERT_FALSE(records.empty());
  for (const sk_profile_record &r : records) {
    EXPECT_LT(r.step, 3u);
    EXPECT_LE(r.start_ns, r.end_ns);
  }
  EXPECT_EQ(records.back().step, 2u) << "ordered by step";
  expect_error([&] { fused_chain.write_trace(""); }, SK_ERR_INVALID_ARGUMENT, "path");
}

// KernelOptions::arg_refs: the seed read from memory at every launch, as an unfused launch
// given each value fills.
TEST_F(Fixture, ArgumentsReadByReference) {
  sk::Buffer a = dev.alloc(c.n * sizeof(uint32_t)), b = dev.alloc(c.n * sizeof(uint32_t));
  uint32_t *pa = a.as<uint32_t>(), *pb = b.as<uint32_t>();
  uint32_t seed = 0;
  sk::KernelOptions by_ref;
  by_ref.arg_refs = 1u << 2;
  sk::SuperKernel fused = dev.scope("refs").add(fill, 2, sk::args(&pa, &c.n, &seed), by_ref).finalize();
  for (uint32_t s : {3u, 77u}) {
    seed = s;
    fused.launch();
    fill.launch(2, sk::args(&pb, &c.n, &s));
    dev.synchronize();
    EXPECT_EQ(read(a), read(b)) << "seed " << s;
  }
}

TEST_F(Fixture, ErrorsThrowWithStatusAndCulprit) {
  expect_error([&] { mod.kernel("no_such_kernel"); }, SK_ERR_NOT_FOUND, "no_such_kernel");
  expect_error([&] { dev.scope("s", "early_start=1"); }, SK_ERR_INVALID_ARGUMENT, "early_start");
  expect_error([] { sk::Device d("no-such-backend"); }, SK_ERR_INVALID_ARGUMENT, "no-such-backend");
  expect_error([] { sk::Device d("host:no_such_key=1"); }, SK_ERR_INVALID_ARGUMENT, "no_such_key");
  expect_error([&] { dev.load_file("/no/such/object.o"); }, SK_ERR_NOT_FOUND, "/no/such/object.o");
  expect_error(
      [&] {
    dev.load_files({kernel_object("capi_misc"), "/no/such/lib.a"});
      },
      SK_ERR_NOT_FOUND, "/no/such/lib.a");
  expect_error([&] { dev.load_files({}); }, SK_ERR_INVALID_ARGUMENT, "count is 0");
  expect_error([&] { dev.scope("s").add(fill, 0, sk::args(&c.n, &c.n, &c.n)); }, SK_ERR_INVALID_ARGUMENT,
               "block_dim");
  expect_error([&] { dev.scope("s").add(fill, 1, nullptr); }, SK_ERR_INVALID_ARGUMENT, "capi_fill");
  expect_error(
      [&] {
    dev.scope("s").add(fill, 1, sk::args(&c.n, &c.n, &c.n), sk::KernelOptions{"", "", 0x80, 0});
      },
      SK_ERR_INVALID_ARGUMENT, "flags");
  expect_error(
      [&] {
    dev.scope("s").add(fill, 1, sk::args(&c.n, &c.n, &c.n), sk::KernelOptions{"", "warp", 0, 0});
      },
      SK_ERR_INVALID_ARGUMENT, "warp");

  // An empty scope: finalize fails and still consumes it.
  sk::Scope empty = dev.scope("empty");
  expect_error([&] { empty.finalize(); }, SK_ERR_STATE, "empty");
  EXPECT_FALSE(empty);

  // Empty objects pass NULL, which the C API refuses.
  expect_error([] { sk::Device().cores(); }, SK_ERR_INVALID_ARGUMENT, "sk_device_cores");
  expect_error([] { sk::SuperKernel().launch(); }, SK_ERR_INVALID_ARGUMENT, "sk_launch");
  expect_error([] { sk::Kernel().launch(1); }, SK_ERR_INVALID_ARGUMENT, "sk_launch_kernel");

  // The message is the one at the throw point, not whatever fails next on this thread.
  try {
    mod.kernel("first_missing");
    FAIL() << "no sk::Error thrown";
  } catch (const sk::Error &e) {
    expect_error([&] { mod.kernel("second_missing"); }, SK_ERR_NOT_FOUND, "second_missing");
    EXPECT_NE(e.message().find("first_missing"), std::string::npos) << e.message();
    EXPECT_EQ(e.message().find("second_missing"), std::string::npos) << e.message();
  }
}

TEST_F(Fixture, MovesLeaveTheSourceEmpty) {
  sk_device *raw_dev = dev.get();
  sk::Device moved(std::move(dev));
  EXPECT_FALSE(dev);
  EXPECT_EQ(dev.get(), nullptr);
  EXPECT_EQ(moved.get(), raw_dev);
  sk::Device assigned;
  assigned = std::move(moved);
  EXPECT_EQ(moved.get(), nullptr);
  EXPECT_EQ(assigned.get(), raw_dev);
  EXPECT_GE(assigned.cores(), 1u);
  dev = std::move(assigned);  // back, for the fixture's objects

  // Assigning over an owning object destroys what it held: the old module's handle goes stale.
  sk::Module other = dev.load_file(kernel_object("capi_misc"));
  sk_module *old = other.get();
  sk_module *raw_mod = mod.get();
  other = std::move(mod);
  EXPECT_EQ(mod.get(), nullptr);
  EXPECT_EQ(other.get(), raw_mod);
  sk_kernel *k = nullptr;
  EXPECT_EQ(sk_module_get_kernel(old, "capi_fill", &k), SK_ERR_STATE);
  EXPECT_NE(std::string(sk_last_error()).find("unloaded"), std::string::npos) << sk_last_error();

  // release() hands the handle over; the object is empty and its destructor leaves it alone.
  sk_module *released = other.release();
  EXPECT_FALSE(other);
  ASSERT_EQ(sk_module_get_kernel(released, "capi_fill", &k), SK_OK) << sk_last_error();
  sk_module_unload(released);

  sk::Buffer buf = dev.alloc(64);
  void *p = buf.get();
  sk::Buffer buf2(std::move(buf));
  EXPECT_EQ(buf.get(), nullptr);
  EXPECT_EQ(buf.size(), 0u);
  EXPECT_EQ(buf2.get(), p);
  EXPECT_EQ(buf2.size(), 64u);

  sk::Scope scope = dev.scope("moved");
  sk::Scope scope2(std::move(scope));
  EXPECT_FALSE(scope);
  expect_error([&] { scope.finalize(); }, SK_ERR_INVALID_ARGUMENT, "sk_finalize");
  scope2.abort();
  EXPECT_FALSE(scope2);
}

// Destroying in the order the C API tolerates, against the order of declaration.
TEST(Lifetimes, ModuleBeforeSuperKernelAndDeviceFirst) {
  Chain c;
  sk::Device dev("host:cores=2");
  sk::Buffer a = dev.alloc(c.n * sizeof(uint32_t));
  sk::Module mod = dev.load_file(kernel_object("capi_chain"));
  sk::Kernel fill = mod.kernel("capi_fill");
  uint32_t *p = a.as<uint32_t>();
  sk::Scope scope = dev.scope("lifetimes");
  scope.add(fill, 2, sk::args(&p, &c.n, &c.seed));
  sk::SuperKernel fused_chain = scope.finalize();
  sk::Stream stream = dev.stream();

  // The module goes first: its kernel views go stale, the super kernel keeps the code.
  mod.reset();
  expect_error([&] { fill.launch(1, sk::args(&p, &c.n, &c.seed)); }, SK_ERR_STATE, "unloaded");
  fused_chain.launch(stream);
  stream.synchronize();
  std::vector<uint32_t> got(c.n);
  dev.memcpy(got.data(), p, c.n * sizeof(uint32_t));
  for (uint32_t i = 0; i < c.n; ++i) ASSERT_EQ(got[i], i * 2654435761u + c.seed) << i;

  // The buffer is freed while the device is open, then the device closes before the stream
  // and the super kernel made from it: they keep what they need and are destroyed after.
  a.reset();
  dev.reset();
  EXPECT_FALSE(dev);
  // Every use of them fails from then on, naming the closed device; only destroying them works.
  expect_error([&] { fused_chain.launch(stream); }, SK_ERR_STATE, "which was closed");
  expect_error([&] { stream.synchronize(); }, SK_ERR_STATE, "which was closed");
}

}  // namespace
