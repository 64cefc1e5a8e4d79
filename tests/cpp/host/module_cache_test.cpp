// The host device's module cache (host/host_device.hpp): the same bytes link once, different
// bytes never share a link even when their hashes collide, many distinct loads sweep the cache
// only logarithmically often, and a link that runs into vm.max_map_count says so.
#include <elf.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "host/host_device.hpp"
#include "linker_test_support.hpp"

namespace sk::test {
namespace {

using host::HostDevice;
using host::LinkedModule;

std::unique_ptr<HostDevice> open_host() {
  std::unique_ptr<HostDevice> dev;
  DeviceSpec spec;
  spec.backend = "host";
  spec.keys.emplace_back("cores", "1");
  EXPECT_EQ(HostDevice::open(spec, &dev), SK_OK) << last_error();
  return dev;
}

// A test kernel object whose .comment section (not loaded) can be overwritten with a number:
// as many distinct, valid objects as a test needs, all linking the same code.
class Variants {
 public:
  Variants() : bytes_(kernel_bytes(kernel_variants().at(0), "capi_misc")) {
    if (bytes_.size() < sizeof(Elf64_Ehdr)) return;
    Elf64_Ehdr eh;
    std::memcpy(&eh, bytes_.data(), sizeof eh);
    auto header = [&](size_t i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, bytes_.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
      return sh;
    };
    const Elf64_Shdr names = header(eh.e_shstrndx);
    for (size_t i = 1; i < eh.e_shnum; ++i) {
      const Elf64_Shdr sh = header(i);
      const char *name = reinterpret_cast<const char *>(bytes_.data() + names.sh_offset + sh.sh_name);
      if (std::strcmp(name, ".comment") == 0 && sh.sh_size >= sizeof(uint64_t)) comment_ = sh.sh_offset;
    }
  }
  bool usable() const { return comment_ != 0; }
  const std::vector<uint8_t> &make(uint64_t n) {
    std::memcpy(bytes_.data() + comment_, &n, sizeof n);
    return bytes_;
  }

 private:
  std::vector<uint8_t> bytes_;
  size_t comment_ = 0;
};

std::shared_ptr<LinkedModule> load(HostDevice &dev, const std::vector<uint8_t> &bytes) {
  std::shared_ptr<LinkedModule> mod;
  EXPECT_EQ(dev.load_module(bytes.data(), bytes.size(), "variant", &mod), SK_OK) << last_error();
  return mod;
}

TEST(ModuleCache, DistinctModulesSweepTheCacheOnlyAsItDoubles) {
  auto dev = open_host();
  Variants v;
  ASSERT_TRUE(dev && v.usable());
  constexpr size_t kModules = 5000;
  std::vector<std::shared_ptr<LinkedModule>> live;
  for (uint64_t i = 0; i < kModules; ++i) {
    live.push_back(load(*dev, v.make(i)));
    ASSERT_TRUE(live.back()) << "load " << i;
  }
  EXPECT_EQ(dev->module_cache_entries(), kModules);
  // A sweep each time the cache doubles: about log2(5000 / 64) of them, not one per load.
  EXPECT_LE(dev->module_cache_sweeps(), 12u);
  EXPECT_GE(dev->module_cache_sweeps(), 1u);
  // Every one linked apart; the same bytes again reuse their link.
  std::set<LinkedModule *> distinct;
  for (const auto &m : live) distinct.insert(m.get());
  EXPECT_EQ(distinct.size(), kModules);
  EXPECT_EQ(load(*dev, v.make(1234)).get(), live[1234].get());
}

TEST(ModuleCache, UnloadedModulesDoNotAccumulate) {
  auto dev = open_host();
  Variants v;
  ASSERT_TRUE(dev && v.usable());
  for (uint64_t i = 0; i < 3000; ++i) ASSERT_TRUE(load(*dev, v.make(i))) << "load " << i;  // dropped at once
  EXPECT_LT(dev->module_cache_entries(), 200u);
}

std::pair<uint64_t, uint64_t> everything_collides(const void *, size_t) { return {42, 42}; }

TEST(ModuleCache, ObjectsWhoseHashesCollideAreNotMerged) {
  auto dev = open_host();
  Variants v;
  ASSERT_TRUE(dev && v.usable());
  dev->set_content_hash(everything_collides);
  const auto a = load(*dev, v.make(1));
  const auto b = load(*dev, v.make(2));
  ASSERT_TRUE(a && b);
  EXPECT_NE(a.get(), b.get()) << "different bytes with the same hash share one link";
  EXPECT_EQ(load(*dev, v.make(1)).get(), a.get());
  EXPECT_EQ(load(*dev, v.make(2)).get(), b.get());
  EXPECT_EQ(a->content_hash, b->content_hash);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SK_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SK_TEST_SANITIZED 1
#endif
#endif

long max_map_count() {
  FILE *f = std::fopen("/proc/sys/vm/max_map_count", "r");
  long n = -1;
  if (f && std::fscanf(f, "%ld", &n) != 1) n = -1;
  if (f) std::fclose(f);
  return n;
}

// In a forked child (the limit is the whole process's), with one module loaded: use up
// vm.max_map_count with pages of alternating protection, then load another. Each load, as
// mappings are freed two at a time, either fails naming the limit and the loaded module or
// succeeds; the first must fail.
TEST(ModuleCache, RunningIntoTheMappingLimitNamesIt) {
#if defined(SK_TEST_SANITIZED) || defined(SK_TEST_EMULATED)
  GTEST_SKIP() << "the sanitizers' and emulators' own mappings fail first";
#endif
  const long limit = max_map_count();
  if (limit <= 0 || limit > (1l << 20)) GTEST_SKIP() << "vm.max_map_count is " << limit;
  Variants v;
  ASSERT_TRUE(v.usable());
  const std::vector<uint8_t> bytes = v.make(7);
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(out[0]);
    auto dev = open_host();
    const auto kept = dev ? load(*dev, v.make(8)) : nullptr;  // counted in the message
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t pages = 2 * static_cast<size_t>(limit) + 16;
    auto *region = static_cast<uint8_t *>(
        mmap(nullptr, pages * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (!kept || region == MAP_FAILED) _exit(2);
    size_t last = 0;
    for (size_t i = 1; i < pages && mprotect(region + i * page, page, PROT_READ) == 0; i += 2) last = i;
    if (last < 16) _exit(4);
    std::string report;
    for (int attempt = 0; attempt < 4; ++attempt) {
      std::shared_ptr<LinkedModule> mod;
      const sk_status st = dev->load_module(bytes.data(), bytes.size(), "limit.o", &mod);
      report += std::to_string(st) + " " + (st == SK_OK ? "" : last_error()) + "\n";
      mod.reset();
      mprotect(region + last * page, page, PROT_NONE);  // merges with both neighbours
      last -= 2;
    }
    if (write(out[1], report.data(), report.size()) < 0) _exit(3);
    _exit(0);
  }
  close(out[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = report.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(report.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 4u) << report;
  EXPECT_NE(lines[0].rfind(std::to_string(SK_OK) + " ", 0), 0u) << "the first load succeeded at the limit";
  for (const std::string &line : lines) {
    if (line.rfind(std::to_string(SK_OK) + " ", 0) == 0) continue;
    EXPECT_EQ(line.rfind(std::to_string(SK_ERR_OUT_OF_MEMORY) + " ", 0), 0u) << line;
    EXPECT_NE(line.find("vm.max_map_count ("), std::string::npos) << line;
    EXPECT_NE(line.find(" 1 linked kernel objects are loaded"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace sk::test
