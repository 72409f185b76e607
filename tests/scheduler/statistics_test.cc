#include "scheduler/statistics.h"

#include <cmath>
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

TEST(MeanIntervalTest, OneValueCollapsesAndNoneIsZero) {
  const Interval one = MeanInterval({2.5});
  EXPECT_EQ(one.n, 1);
  EXPECT_EQ(one.mean, 2.5);
  EXPECT_EQ(one.low, 2.5);
  EXPECT_EQ(one.high, 2.5);
  const Interval none = MeanInterval({});
  EXPECT_EQ(none.n, 0);
  EXPECT_EQ(none.mean, 0.0);
  EXPECT_EQ(none.low, 0.0);
  EXPECT_EQ(none.high, 0.0);
}

TEST(MeanIntervalTest, WithCriticalUsesTheGivenValue) {
  const Interval ci = MeanIntervalWithCritical({1.0, 3.0}, 2.0);
  // sd = sqrt(2), half = 2 * sqrt(2) / sqrt(2) = 2.
  EXPECT_DOUBLE_EQ(ci.mean, 2.0);
  EXPECT_NEAR(ci.low, 0.0, 1e-12);
  EXPECT_NEAR(ci.high, 4.0, 1e-12);
}

}  // namespace
}  // namespace prism
