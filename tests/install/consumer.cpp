// C++17 consumer of libsk through sk.hpp: built by tests/install/run.sh through pkg-config and
// find_package(sk), and by tests/install/subproject.sh with libsk as a subproject. Checks the
// header matches the library, that errors throw sk::Error naming the culprit, and runs the
// quickstart fused with the kernel object given as argv[1] (examples/quickstart_kernel.c).
#include <sk.hpp>

// Every build of this file asks for C++17: libsk's C++20 must not reach its users.
static_assert(__cplusplus == 201703L, "consumer.cpp is not compiled as C++17");

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#define EXPECT(cond)                                                                       \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "consumer.cpp: %s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s QUICKSTART_KERNEL.o\n", argv[0]);
    return 2;
  }
  try {
    EXPECT(sk::version() == SK_VERSION_NUMBER);

    bool threw = false;
    try {
      sk::Device bad("no-such-backend");
    } catch (const sk::Error &e) {
      threw = e.status() == SK_ERR_INVALID_ARGUMENT && e.message().find("no-such-backend") != std::string::npos;
      std::printf("expected failure: %s\n", e.what());
    }
    EXPECT(threw);

    sk::Device opened("host:cores=2");
    sk::Device dev(std::move(opened));
    EXPECT(!opened && dev);

    const std::uint32_t n = 1024;
    sk::Buffer x = dev.alloc(n * sizeof(float)), y = dev.alloc(n * sizeof(float));
    for (std::uint32_t i = 0; i < n; ++i) x.as<float>()[i] = 1.0f, y.as<float>()[i] = 0.0f;
    float a = 2.0f, *px = x.as<float>(), *py = y.as<float>();

    sk::Module mod = dev.load_file(argv[1]);
    sk::Kernel saxpy = mod.kernel("saxpy");
    sk::Scope scope = dev.scope("consumer");
    for (int i = 0; i < 3; ++i) scope.add(saxpy, 4, sk::args(&a, &px, &py, &n));
    sk::SuperKernel fused = scope.finalize();
    fused.launch();
    dev.synchronize();
    std::printf("libsk %s, y[0] = %g (expected 6)\n", sk::version_string(), static_cast<double>(py[0]));
    EXPECT(py[0] == 6.0f && py[n - 1] == 6.0f);
  } catch (const sk::Error &e) {
    std::fprintf(stderr, "consumer.cpp: %s\n", e.what());
    return 1;
  }
  return 0;
}
