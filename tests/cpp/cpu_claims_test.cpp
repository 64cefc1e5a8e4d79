// Where the cores of several executors (host devices) go, and when they know they share CPUs
// (host/cpu_claims.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "host/cpu_claims.hpp"

namespace sk::host {
namespace {

using Cpus = std::vector<int>;

TEST(CpuClaims, OneOwnerTakesTheOrderAndWrapsAroundIt) {
  CpuClaims claims;
  std::atomic<bool> shared{true};
  int owner = 0;
  EXPECT_EQ(claims.claim(&owner, {4, 6, 5}, 5, &shared), (Cpus{4, 6, 5, 4, 6}));
  EXPECT_FALSE(shared.load()) << "an owner with more cores than CPUs shares with itself only";
}

TEST(CpuClaims, ASecondOwnerStartsWhereTheFirstStopped) {
  CpuClaims claims;
  std::atomic<bool> a_shared{true}, b_shared{true};
  int a = 0, b = 0;
  const Cpus order{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(claims.claim(&a, order, 3, &a_shared), (Cpus{0, 1, 2}));
  EXPECT_EQ(claims.claim(&b, order, 4, &b_shared), (Cpus{3, 4, 5, 6}));
  EXPECT_FALSE(a_shared.load());
  EXPECT_FALSE(b_shared.load());
  // Once `a` is gone its CPUs are the least claimed again.
  claims.release(&a);
  int c = 0;
  std::atomic<bool> c_shared{true};
  EXPECT_EQ(claims.claim(&c, order, 2, &c_shared), (Cpus{0, 1}));
  EXPECT_FALSE(c_shared.load());
}

TEST(CpuClaims, OwnersThatMustShareKnowItUntilOneLeaves) {
  CpuClaims claims;
  std::atomic<bool> a_shared{true}, b_shared{false};
  int a = 0, b = 0;
  EXPECT_EQ(claims.claim(&a, {0, 1}, 2, &a_shared), (Cpus{0, 1}));
  EXPECT_FALSE(a_shared.load());
  EXPECT_EQ(claims.claim(&b, {0, 1}, 1, &b_shared), (Cpus{0}));
  EXPECT_TRUE(a_shared.load());
  EXPECT_TRUE(b_shared.load());
  claims.release(&b);
  EXPECT_FALSE(a_shared.load());
  claims.release(&b);  // twice, or an owner never seen: nothing to give back
  EXPECT_FALSE(a_shared.load());
}

TEST(CpuClaims, NoCpusToChooseFromClaimsNothing) {
  CpuClaims claims;
  std::atomic<bool> shared{true};
  int owner = 0;
  EXPECT_TRUE(claims.claim(&owner, {}, 3, &shared).empty());
  EXPECT_FALSE(shared.load());
  claims.release(&owner);
}

}  // namespace
}  // namespace sk::host
