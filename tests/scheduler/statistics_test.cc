#include "scheduler/statistics.h"

#include <cmath>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace prism {
namespace {

TEST(StudentTQuantileTest, MatchesTableValues) {
  // Two-sided critical values from standard t tables.
  EXPECT_NEAR(StudentTQuantile(1, 0.95), 12.7062, 1e-3);
  EXPECT_NEAR(StudentTQuantile(2, 0.95), 4.3027, 1e-3);
  EXPECT_NEAR(StudentTQuantile(4, 0.95), 2.7764, 1e-3);
  EXPECT_NEAR(StudentTQuantile(10, 0.95), 2.2281, 1e-3);
  EXPECT_NEAR(StudentTQuantile(30, 0.95), 2.0423, 1e-3);
  EXPECT_NEAR(StudentTQuantile(1, 0.99), 63.6567, 1e-2);
  EXPECT_NEAR(StudentTQuantile(5, 0.90), 2.0150, 1e-3);
  EXPECT_NEAR(StudentTQuantile(20, 0.99), 2.8453, 1e-3);
  EXPECT_NEAR(StudentTQuantile(1, 0.5), 1.0, 1e-6);  // Cauchy quartile
  // Large dof tends to the normal quantile.
  EXPECT_NEAR(StudentTQuantile(100000, 0.95), 1.95996, 1e-3);
}

// The coordinator ranks on several threads at once. Each thread here gets
// the single-threaded answers; under `make test-tsan` this also shows that
// the quantile touches no shared state (std::lgamma wrote the global
// `signgam`: a data race TSan reported from server_coordinator_test).
TEST(StudentTQuantileTest, ManyThreadsAtOnceGetTheSameValues) {
  std::vector<double> expected;
  for (int dof = 1; dof <= 40; ++dof) {
    expected.push_back(StudentTQuantile(dof, 0.95));
  }
  constexpr int kThreads = 4;
  std::vector<std::vector<double>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&got, t] {
      for (int round = 0; round < 50; ++round) {
        got[t].clear();
        for (int dof = 1; dof <= 40; ++dof) {
          got[t].push_back(StudentTQuantile(dof, 0.95));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[t], expected);
}

TEST(StudentTQuantileTest, InvalidArgumentsGiveNaN) {
  EXPECT_TRUE(std::isnan(StudentTQuantile(0, 0.95)));
  EXPECT_TRUE(std::isnan(StudentTQuantile(3, 0.0)));
  EXPECT_TRUE(std::isnan(StudentTQuantile(3, 1.0)));
  EXPECT_TRUE(std::isnan(StudentTQuantile(3, std::nan(""))));
}

TEST(MeanIntervalTest, ComputesTheStudentTInterval) {
  // mean 3.36, sample sd 0.01, n 3: half width 4.3027 * 0.01 / sqrt(3).
  const Interval ci = MeanInterval({3.36, 3.35, 3.37});
  EXPECT_EQ(ci.n, 3);
  EXPECT_NEAR(ci.mean, 3.36, 1e-12);
  const double half = 4.302653 * 0.01 / std::sqrt(3.0);
  EXPECT_NEAR(ci.low, 3.36 - half, 1e-6);
  EXPECT_NEAR(ci.high, 3.36 + half, 1e-6);
}

TEST(MeanIntervalTest, OneValueHasNoIntervalAndNoneIsZero) {
  const Interval one = MeanInterval({2.5});
  EXPECT_EQ(one.n, 1);
  EXPECT_EQ(one.mean, 2.5);
  EXPECT_FALSE(one.has_bounds);
  EXPECT_EQ(one.low, 0.0);
  EXPECT_EQ(one.high, 0.0);
  const Interval none = MeanInterval({});
  EXPECT_EQ(none.n, 0);
  EXPECT_EQ(none.mean, 0.0);
  EXPECT_FALSE(none.has_bounds);
  EXPECT_TRUE(MeanInterval({2.5, 2.6}).has_bounds);
}

TEST(MeanIntervalTest, WithCriticalUsesTheGivenValue) {
  const Interval ci = MeanIntervalWithCritical({1.0, 3.0}, 2.0);
  // sd = sqrt(2), half = 2 * sqrt(2) / sqrt(2) = 2.
  EXPECT_DOUBLE_EQ(ci.mean, 2.0);
  EXPECT_NEAR(ci.low, 0.0, 1e-12);
  EXPECT_NEAR(ci.high, 4.0, 1e-12);
}

TEST(StudentTCdfTest, MatchesTableQuantiles) {
  // Two-sided 5% critical values from standard t tables: the upper tail
  // beyond each is 0.025.
  EXPECT_NEAR(StudentTCdf(12.706, 1), 0.975, 1e-5);
  EXPECT_NEAR(StudentTCdf(4.303, 2), 0.975, 1e-5);
  EXPECT_NEAR(StudentTCdf(2.776, 4), 0.975, 1e-4);
  EXPECT_NEAR(StudentTCdf(2.228, 10), 0.975, 1e-4);
  EXPECT_NEAR(StudentTCdf(2.042, 30), 0.975, 1e-4);
  // One-sided 1% critical value for 5 dof.
  EXPECT_NEAR(StudentTCdf(3.365, 5), 0.99, 1e-4);
  EXPECT_NEAR(StudentTCdf(-2.776, 4), 0.025, 1e-4);
  EXPECT_DOUBLE_EQ(StudentTCdf(0.0, 7), 0.5);
}

TEST(StudentTCdfTest, MatchesClosedFormsForOneAndTwoDof) {
  // 1 dof is the Cauchy distribution: 1/2 + atan(t) / pi.
  // 2 dof: 1/2 + t / (2 sqrt(2 + t^2)).
  const double pi = std::acos(-1.0);
  for (double t : {-30.0, -3.0, -0.5, 0.1, 1.0, 2.5, 100.0}) {
    EXPECT_NEAR(StudentTCdf(t, 1), 0.5 + std::atan(t) / pi, 1e-12) << t;
    EXPECT_NEAR(StudentTCdf(t, 2), 0.5 + t / (2.0 * std::sqrt(2.0 + t * t)),
                1e-12)
        << t;
  }
}

TEST(StudentTTwoSidedPTest, MatchesTableValuesAndLimits) {
  EXPECT_NEAR(StudentTTwoSidedP(2.776, 4), 0.05, 2e-4);
  EXPECT_NEAR(StudentTTwoSidedP(-2.776, 4), 0.05, 2e-4);
  EXPECT_NEAR(StudentTTwoSidedP(12.706, 1), 0.05, 1e-5);
  EXPECT_NEAR(StudentTTwoSidedP(4.604, 4), 0.01, 1e-4);
  EXPECT_DOUBLE_EQ(StudentTTwoSidedP(0.0, 3), 1.0);
  EXPECT_EQ(StudentTTwoSidedP(INFINITY, 3), 0.0);
  // Consistent with the quantile it inverts.
  EXPECT_NEAR(StudentTTwoSidedP(StudentTQuantile(9, 0.95), 9), 0.05, 1e-9);
  EXPECT_TRUE(std::isnan(StudentTTwoSidedP(1.0, 0)));
  EXPECT_TRUE(std::isnan(StudentTCdf(std::nan(""), 3)));
}

TEST(PairedTTestPTest, ComputesTheTwoSidedPValueByHand) {
  // mean -2, sd 1, n 3: t = -2 / (1 / sqrt(3)) = -sqrt(12), 2 dof, and
  // p = 1 - |t| / sqrt(2 + t^2) = 1 - sqrt(12 / 14) = 0.0741799...
  const std::optional<double> p = PairedTTestP({-1.0, -2.0, -3.0});
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(*p, 1.0 - std::sqrt(12.0 / 14.0), 1e-12);
  EXPECT_NEAR(*p, 0.07418, 1e-5);
}

TEST(PairedTTestPTest, NeedsTwoValuesAndHandlesZeroSpread) {
  EXPECT_FALSE(PairedTTestP({}).has_value());
  EXPECT_FALSE(PairedTTestP({-0.5}).has_value());
  EXPECT_EQ(PairedTTestP({-0.125, -0.125, -0.125}), 0.0);
  // Not exactly equal after rounding: a huge t, p about 0.
  EXPECT_LT(*PairedTTestP({-0.1, -0.1, -0.1}), 1e-20);
  EXPECT_EQ(PairedTTestP({0.0, 0.0}), 1.0);
}

TEST(HolmAdjustTest, MatchesAHandExample) {
  // Sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06),
  // 0.04 (x1 = 0.04, raised to the running maximum 0.06).
  const std::vector<double> adjusted = HolmAdjust({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(adjusted.size(), 4u);
  EXPECT_NEAR(adjusted[0], 0.03, 1e-15);
  EXPECT_NEAR(adjusted[1], 0.06, 1e-15);
  EXPECT_NEAR(adjusted[2], 0.06, 1e-15);
  EXPECT_NEAR(adjusted[3], 0.02, 1e-15);
}

TEST(HolmAdjustTest, CapsAtOneAndKeepsASingleTest) {
  EXPECT_EQ(HolmAdjust({0.3, 0.6}), (std::vector<double>{0.6, 0.6}));
  EXPECT_EQ(HolmAdjust({0.7, 0.9}), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(HolmAdjust({0.04}), (std::vector<double>{0.04}));
  EXPECT_TRUE(HolmAdjust({}).empty());
}

}  // namespace
}  // namespace prism
