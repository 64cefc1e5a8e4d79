// Where the cores of several executors (host devices) go (host/executor/cpu_claims.hpp).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "host/executor/cpu_claims.hpp"

namespace sk::host {
namespace {

using Cpus = std::vector<int>;

TEST(CpuClaims, OneOwnerTakesTheOrderAndWrapsAroundIt) {
  CpuClaims claims;
  int owner = 0;
  EXPECT_EQ(claims.claim(&owner, {4, 6, 5}, 5), (Cpus{4, 6, 5, 4, 6}));
}

TEST(CpuClaims, ASecondOwnerStartsWhereTheFirstStopped) {
  CpuClaims claims;
  int a = 0, b = 0, c = 0;
  const Cpus order{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(claims.claim(&a, order, 3), (Cpus{0, 1, 2}));
  EXPECT_EQ(claims.claim(&b, order, 4), (Cpus{3, 4, 5, 6}));
  // Once `a` is gone its CPUs are the least claimed again.
  claims.release(&a);
  EXPECT_EQ(claims.claim(&c, order, 2), (Cpus{0, 1}));
}

// The parent's claims name executors whose cores did not come through the fork: a device
// opened in the child pins as in a fresh process, and the parent's claims stay.
TEST(CpuClaims, AForkedChildClaimsAsAFreshProcess) {
  CpuClaims claims;
  int a = 0, b = 0;
  const Cpus order{0, 1, 2, 3};
  ASSERT_EQ(claims.claim(&a, order, 2), (Cpus{0, 1}));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(claims.claim(&b, order, 2) == Cpus{0, 1} ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's claim met the parent's";
  EXPECT_EQ(claims.claim(&b, order, 2), (Cpus{2, 3}));
}

TEST(CpuClaims, OwnersThatMustShareTakeTheLeastClaimedFirst) {
  CpuClaims claims;
  int a = 0, b = 0;
  EXPECT_EQ(claims.claim(&a, {0, 1, 2}, 2), (Cpus{0, 1}));
  // CPU 2 is free; then every CPU holds one claim, and the order decides.
  EXPECT_EQ(claims.claim(&b, {0, 1, 2}, 3), (Cpus{2, 0, 1}));
  claims.release(&b);
  claims.release(&b);  // twice, or an owner never seen: nothing to give back
  int c = 0;
  EXPECT_EQ(claims.claim(&c, {0, 1, 2}, 1), (Cpus{2}));
}

TEST(CpuClaims, NoCpusToChooseFromClaimsNothing) {
  CpuClaims claims;
  int owner = 0;
  EXPECT_TRUE(claims.claim(&owner, {}, 3).empty());
  claims.release(&owner);
}

}  // namespace
}  // namespace sk::host
