#include "scheduler/stats/statistics.h"

#include <cmath>
#include <limits>
#include <optional>
#include <random>
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

// The values below come from tests/scheduler/reference/statistics_reference.py
// (scipy 1.10, an independent implementation).

TEST(PolygammaTest, MatchesScipy) {
  EXPECT_NEAR(Digamma(1.0), -0.5772156649015329, 1e-12);
  EXPECT_NEAR(Digamma(0.3), -3.502524222200133, 1e-11);
  EXPECT_NEAR(Digamma(12.5), 2.4851956512749123, 1e-12);
  EXPECT_NEAR(Trigamma(1.0), 1.6449340668482266, 1e-12);
  EXPECT_NEAR(Trigamma(0.3), 12.245364546107734, 1e-10);
  EXPECT_NEAR(Trigamma(12.5), 0.08328522460157839, 1e-13);
  EXPECT_NEAR(Tetragamma(1.0), -2.404113806319188, 1e-11);
  EXPECT_NEAR(Tetragamma(0.3), -75.27253658872601, 1e-8);
  EXPECT_NEAR(Tetragamma(12.5), -0.006932436585788242, 1e-13);
  EXPECT_TRUE(std::isnan(Digamma(0.0)));
  EXPECT_TRUE(std::isnan(Trigamma(-1.0)));
}

TEST(PolygammaTest, TrigammaInverseInvertsTrigamma) {
  for (double y : {0.01, 0.3, 1.0, 2.5, 40.0, 1e4}) {
    EXPECT_NEAR(TrigammaInverse(Trigamma(y)), y, 1e-6 * y) << y;
  }
  EXPECT_TRUE(std::isnan(TrigammaInverse(0.0)));
}

TEST(NormalTest, QuantileAndCdfMatchScipy) {
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-10);
  EXPECT_NEAR(NormalQuantile(1e-6), -4.753424308822899, 1e-8);
  EXPECT_NEAR(NormalCdf(1.959963984540054), 0.975, 1e-12);
  EXPECT_TRUE(std::isnan(NormalQuantile(1.0)));
}

TEST(StudentTTest, TakesRealDegreesOfFreedom) {
  EXPECT_NEAR(StudentTTwoSidedP(2.5, 7.3), 0.039650234665600415, 1e-9);
  EXPECT_NEAR(StudentTQuantile(5.5, 0.95), 2.501858612469493, 1e-6);
  // An infinite dof is the normal.
  EXPECT_NEAR(StudentTQuantile(std::numeric_limits<double>::infinity(), 0.95),
              1.959963984540054, 1e-9);
  EXPECT_NEAR(StudentTTwoSidedP(1.959963984540054,
                                std::numeric_limits<double>::infinity()),
              0.05, 1e-12);
}

TEST(BenjaminiHochbergTest, MatchesRsPAdjust) {
  const std::vector<double> adjusted =
      BenjaminiHochbergAdjust({0.01, 0.04, 0.03, 0.005, 0.2, 0.04});
  const std::vector<double> expected = {0.03, 0.048, 0.048, 0.03, 0.2, 0.048};
  ASSERT_EQ(adjusted.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(adjusted[i], expected[i], 1e-15) << i;
  }
  EXPECT_TRUE(BenjaminiHochbergAdjust({}).empty());
  const std::vector<double> with_nan =
      BenjaminiHochbergAdjust({0.01, std::nan("")});
  EXPECT_NEAR(with_nan[0], 0.01, 1e-15);  // NaN is not counted in m
  EXPECT_TRUE(std::isnan(with_nan[1]));
}

TEST(BenjaminiHochbergTest, NeverAdjustsBelowHolmsNorAboveIt) {
  // BH is uniformly less strict than Holm: its adjusted p is never larger.
  const std::vector<double> p = {0.001, 0.008, 0.039, 0.041, 0.042,
                                 0.06,  0.074, 0.205, 0.212, 0.216};
  const std::vector<double> bh = BenjaminiHochbergAdjust(p);
  const std::vector<double> holm = HolmAdjust(p);
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_LE(bh[i], holm[i] + 1e-15) << i;
    EXPECT_GE(bh[i], p[i]) << i;
  }
}

TEST(VariancePriorTest, MatchesTheReferenceFit) {
  // Variances as spread as 2 dof alone makes them: the prior pools them.
  const VariancePrior pooled = FitVariancePrior(
      {1.1e-4, 0.6e-4, 2.3e-4, 0.9e-4, 1.4e-4, 0.3e-4, 1.8e-4, 1.0e-4},
      std::vector<double>(8, 2.0));
  ASSERT_TRUE(pooled.fitted);
  EXPECT_TRUE(std::isinf(pooled.dof));
  EXPECT_NEAR(pooled.variance, 0.0001788282339826774, 1e-12);
  EXPECT_DOUBLE_EQ(PosteriorVariance(pooled, 5e-4, 2.0), pooled.variance);

  // Log-normally spread true variances (sd 1 on the log), 4 dof each.
  const std::vector<double> s2 = {
      1.231303, 0.027413, 2.096937,  0.041009, 0.676329, 1.885782, 0.14377,
      1.673388, 0.259061, 68.210241, 1.780372, 0.75885,  0.314122, 1.060001,
      0.175676, 0.66765,  0.419588,  0.65423,  3.710102, 0.528118, 0.702767,
      1.963614, 1.317483, 0.595469,  1.851809, 0.151795, 3.455247, 1.320564,
      0.272645, 2.347481, 1.227026,  1.070729, 6.196722, 3.690624, 0.783851,
      4.360639, 0.038516, 3.295993,  0.139964, 0.687826, 0.690277, 0.472482,
      0.969153, 0.363644, 0.950589,  0.638571, 3.700281, 1.186841, 0.772104,
      1.815914, 1.202337, 0.981095,  2.721919, 1.653304, 1.408766, 0.428558,
      0.83462,  0.120837, 6.283351,  5.188431};
  const VariancePrior spread =
      FitVariancePrior(s2, std::vector<double>(s2.size(), 4.0));
  ASSERT_TRUE(spread.fitted);
  EXPECT_NEAR(spread.dof, 2.314320547759966, 1e-6);
  EXPECT_NEAR(spread.variance, 0.724760481157083, 1e-7);
  // The posterior lies between the sample variance and the prior's.
  const double post = PosteriorVariance(spread, 10.0, 4.0);
  EXPECT_NEAR(post,
              (2.314320547759966 * 0.724760481157083 + 40.0) /
                  (2.314320547759966 + 4.0),
              1e-6);

  EXPECT_FALSE(FitVariancePrior({1.0}, {2.0}).fitted);
  EXPECT_DOUBLE_EQ(PosteriorVariance(VariancePrior{}, 3.0, 2.0), 3.0);
}

TEST(VariancePriorTest, MaximumLikelihoodPoolsEqualVariances) {
  // As spread as 2 dof alone makes them: pooled, at the dof-weighted mean.
  const std::vector<double> s2 = {1.1e-4, 0.6e-4, 2.3e-4, 0.9e-4,
                                  1.4e-4, 0.3e-4, 1.8e-4, 1.0e-4};
  const VariancePrior pooled =
      FitVariancePriorMaximumLikelihood(s2, std::vector<double>(8, 2.0));
  ASSERT_TRUE(pooled.fitted);
  EXPECT_TRUE(std::isinf(pooled.dof));
  EXPECT_NEAR(pooled.variance, 1.175e-4, 1e-12);
  EXPECT_FALSE(FitVariancePriorMaximumLikelihood({1.0}, {2.0}).fitted);
}

TEST(VariancePriorTest, MaximumLikelihoodRecoversAKnownPrior) {
  // 4,000 variances on 2 dof whose true variances are drawn from the prior
  // itself (s0^2 = 2, d0 = 4): the fit lands near both.
  std::mt19937_64 rng(7);
  std::chi_squared_distribution<double> prior_draw(4.0);
  std::chi_squared_distribution<double> sample_draw(2.0);
  std::vector<double> s2;
  for (int i = 0; i < 4000; ++i) {
    const double sigma2 = 2.0 * 4.0 / prior_draw(rng);
    s2.push_back(sigma2 * sample_draw(rng) / 2.0);
  }
  const VariancePrior fit =
      FitVariancePriorMaximumLikelihood(s2, std::vector<double>(s2.size(), 2));
  ASSERT_TRUE(fit.fitted);
  EXPECT_NEAR(fit.dof, 4.0, 0.6);
  EXPECT_NEAR(fit.variance, 2.0, 0.2);
}

TEST(VariancePriorTest, PosteriorMeanIsTheModeratedVarianceOverTwoFewerDof) {
  const VariancePrior prior{/*variance=*/1.0, /*dof=*/4.0, /*fitted=*/true};
  // (4 * 1 + 2 * 3) / (4 + 2 - 2) against the moderated (4 + 2).
  EXPECT_DOUBLE_EQ(PosteriorMeanVariance(prior, 3.0, 2.0), 2.5);
  EXPECT_DOUBLE_EQ(PosteriorVariance(prior, 3.0, 2.0), 10.0 / 6.0);
  // Below 2 dof in all the mean is infinite: the denominator stays at 1.
  const VariancePrior wide{1.0, 0.5, true};
  EXPECT_DOUBLE_EQ(PosteriorMeanVariance(wide, 3.0, 1.0), 3.5);
  const VariancePrior pooled{1.0, std::numeric_limits<double>::infinity(),
                             true};
  EXPECT_DOUBLE_EQ(PosteriorMeanVariance(pooled, 3.0, 2.0), 1.0);
  EXPECT_DOUBLE_EQ(PosteriorMeanVariance(VariancePrior{}, 3.0, 4.0), 6.0);
}

TEST(DunnettTest, MatchesTheMultivariateNormalAndTables) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NEAR(DunnettOneSidedCritical(2, inf, 0.95), 1.9163321213390885, 1e-3);
  EXPECT_NEAR(DunnettOneSidedCritical(5, inf, 0.95), 2.233816440887034, 1e-3);
  EXPECT_NEAR(DunnettOneSidedCritical(9, inf, 0.95), 2.417011575194006, 1e-3);
  // k = 5 comparisons on 20 dof: the reference's Monte Carlo (10^6 draws)
  // covers 0.950 at 2.389 and 0.941 at 2.30.
  EXPECT_NEAR(DunnettOneSidedCritical(5, 20, 0.95), 2.389, 0.005);
  // One comparison is the one-sided t quantile.
  EXPECT_NEAR(DunnettOneSidedCritical(1, 10, 0.95), StudentTQuantile(10, 0.90),
              1e-9);
  EXPECT_TRUE(std::isnan(DunnettOneSidedCritical(0, 10, 0.95)));
}

}  // namespace
}  // namespace prism
