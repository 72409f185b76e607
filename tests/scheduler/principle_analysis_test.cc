#include "scheduler/analysis/principle_analysis.h"

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

// Two-sided 97.5% Student-t quantiles from a printed t-table (dof 1, 2).
constexpr double kT1 = 12.706;
constexpr double kT2 = 4.303;
constexpr double kTableTolerance = 5e-4;
const double kPi = std::acos(-1.0);

PrincipleSet Violates(bool smooth, bool baseline, bool pow2) {
  PrincipleSet set;
  set.smooth = smooth;
  set.baseline = baseline;
  set.pow2 = pow2;
  return set;
}

ScheduleDelta Observation(double mean_delta, int paired_seeds,
                          PrincipleSet violated) {
  ScheduleDelta s;
  s.mean_delta = mean_delta;
  s.paired_seeds = paired_seeds;
  s.violated = violated;
  return s;
}

const PrincipleEffect& Effect(const PrincipleAnalysis& a, Principle p) {
  return a.effects[static_cast<size_t>(p)];
}

// --- The solver.

TEST(FitWeightedLeastSquaresTest, SimpleRegressionMatchesHandComputation) {
  // x = 0..3, y = 1,3,7,7: xbar 1.5, ybar 4.5, Sxx 5, Sxy 11, so slope 2.2,
  // intercept 1.2; residuals -0.2,-0.4,1.4,-0.8, RSS 2.8, sigma^2 1.4;
  // SE(slope) = sqrt(1.4 / 5), SE(intercept) = sqrt(1.4 (1/4 + 1.5^2 / 5)).
  const std::optional<LeastSquaresFit> fit = FitWeightedLeastSquares(
      {{1, 1, 1, 1}, {0, 1, 2, 3}}, {1, 3, 7, 7}, {1, 1, 1, 1});
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->dof, 2);
  EXPECT_NEAR(fit->coefficients[0], 1.2, 1e-12);
  EXPECT_NEAR(fit->coefficients[1], 2.2, 1e-12);
  EXPECT_NEAR(fit->residual_variance, 1.4, 1e-12);
  EXPECT_NEAR(fit->standard_errors[0], std::sqrt(0.98), 1e-12);
  EXPECT_NEAR(fit->standard_errors[1], std::sqrt(0.28), 1e-12);
}

TEST(FitWeightedLeastSquaresTest, AWeightOfTwoIsARowTwice) {
  const std::optional<LeastSquaresFit> weighted = FitWeightedLeastSquares(
      {{1, 1, 1, 1}, {0, 1, 2, 3}}, {1, 3, 7, 7}, {2, 1, 1, 3});
  const std::optional<LeastSquaresFit> repeated =
      FitWeightedLeastSquares({{1, 1, 1, 1, 1, 1, 1}, {0, 0, 1, 2, 3, 3, 3}},
                              {1, 1, 3, 7, 7, 7, 7}, {1, 1, 1, 1, 1, 1, 1});
  ASSERT_TRUE(weighted.has_value());
  ASSERT_TRUE(repeated.has_value());
  EXPECT_NEAR(weighted->coefficients[0], repeated->coefficients[0], 1e-12);
  EXPECT_NEAR(weighted->coefficients[1], repeated->coefficients[1], 1e-12);
  // The same weighted RSS over fewer degrees of freedom.
  EXPECT_NEAR(weighted->residual_variance * weighted->dof,
              repeated->residual_variance * repeated->dof, 1e-12);
}

TEST(FitWeightedLeastSquaresTest, RefusesWhatItCannotSolve) {
  const std::vector<double> y = {1, 2, 3, 5};
  const std::vector<double> w = {1, 1, 1, 1};
  // Dependent: the third column is the sum of the first two.
  EXPECT_FALSE(
      FitWeightedLeastSquares({{1, 1, 1, 1}, {0, 1, 0, 1}, {1, 2, 1, 2}}, y, w)
          .has_value());
  // No degree of freedom left.
  EXPECT_FALSE(
      FitWeightedLeastSquares(
          {{1, 1, 1, 1}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}, y, w)
          .has_value());
  EXPECT_FALSE(FitWeightedLeastSquares({}, y, w).has_value());
  EXPECT_FALSE(FitWeightedLeastSquares({{1, 1, 1}}, y, w).has_value());
  EXPECT_FALSE(
      FitWeightedLeastSquares({{1, 1, 1, 1}}, y, {1, 0, 1, 1}).has_value());
  EXPECT_FALSE(FitWeightedLeastSquares({{1, 1, 1, 1}}, y, {1, 1}).has_value());
}

TEST(ColumnRankTest, CountsIndependentColumns) {
  EXPECT_EQ(ColumnRank({}), 0);
  EXPECT_EQ(ColumnRank({{0, 0, 0}}), 0);
  EXPECT_EQ(ColumnRank({{1, 1, 1}, {1, 0, 0}}), 2);
  EXPECT_EQ(ColumnRank({{1, 1, 1}, {1, 0, 0}, {0, 1, 1}}), 2);
  EXPECT_EQ(ColumnRank({{1, 1, 1}, {1, 0, 0}, {0, 1, 0}}), 3);
}

// --- The analysis.

// A 2x2 factorial in smooth and pow2, one schedule per cell, 2 seeds each:
// none -0.25, smooth 0, pow2 -0.125, both +0.25. With equal weights the
// additive fit's effects are the averaged differences:
//   smooth = ((0 - -0.25) + (0.25 - -0.125)) / 2 = 0.3125,
//   pow2   = ((-0.125 - -0.25) + (0.25 - 0)) / 2 = 0.1875;
// every residual is +-e with e = (a - b - c + d) / 4 = 0.03125, so with
// dof 4 - 3 = 1 both standard errors are 2e = 0.0625 and t = 5 and 3. With
// one dof, t is Cauchy: two-sided p = (2 / pi) atan(1 / |t|).
std::vector<ScheduleDelta> Factorial(double both) {
  return {Observation(-0.25, 2, Violates(false, false, false)),
          Observation(0.0, 2, Violates(true, false, false)),
          Observation(-0.125, 2, Violates(false, false, true)),
          Observation(both, 2, Violates(true, false, true))};
}

TEST(AnalyzePrinciplesTest, FactorialDesignMatchesHandComputation) {
  const PrincipleAnalysis a = AnalyzePrinciples(Factorial(0.25));
  EXPECT_EQ(a.schedules, 4);
  EXPECT_EQ(a.dof, 1);
  const PrincipleEffect& smooth = Effect(a, Principle::kSmooth);
  ASSERT_EQ(smooth.status, EffectStatus::kEstimated);
  EXPECT_EQ(smooth.note, "");
  EXPECT_EQ(smooth.dof, 1);
  EXPECT_NEAR(*smooth.effect, 0.3125, 1e-12);
  EXPECT_NEAR(*smooth.standard_error, 0.0625, 1e-12);
  EXPECT_NEAR(*smooth.p_value, 2 / kPi * std::atan(1.0 / 5), 1e-9);
  // The interval against a t-table's 12.706 for 1 dof.
  EXPECT_NEAR(*smooth.high - 0.3125, kT1 * 0.0625, kTableTolerance * 0.0625);
  EXPECT_NEAR(0.3125 - *smooth.low, kT1 * 0.0625, kTableTolerance * 0.0625);
  const PrincipleEffect& pow2 = Effect(a, Principle::kPow2);
  ASSERT_EQ(pow2.status, EffectStatus::kEstimated);
  EXPECT_NEAR(*pow2.effect, 0.1875, 1e-12);
  EXPECT_NEAR(*pow2.standard_error, 0.0625, 1e-12);
  EXPECT_NEAR(*pow2.p_value, 2 / kPi * std::atan(1.0 / 3), 1e-9);
  // The raw counts and means are kept.
  EXPECT_EQ(smooth.satisfied, 2);
  EXPECT_EQ(smooth.violated, 2);
  EXPECT_DOUBLE_EQ(smooth.mean_delta_satisfied, -0.1875);
  EXPECT_DOUBLE_EQ(smooth.mean_delta_violated, 0.125);
}

TEST(AnalyzePrinciplesTest, WithoutInteractionEffectsAreExactDifferences) {
  // both = none + (smooth - none) + (pow2 - none) = 0.125: no residual.
  const PrincipleAnalysis a = AnalyzePrinciples(Factorial(0.125));
  const PrincipleEffect& smooth = Effect(a, Principle::kSmooth);
  const PrincipleEffect& pow2 = Effect(a, Principle::kPow2);
  ASSERT_EQ(smooth.status, EffectStatus::kEstimated);
  ASSERT_EQ(pow2.status, EffectStatus::kEstimated);
  EXPECT_NEAR(*smooth.effect, 0.0 - -0.25, 1e-12);
  EXPECT_NEAR(*pow2.effect, -0.125 - -0.25, 1e-12);
  EXPECT_NEAR(*smooth.standard_error, 0.0, 1e-12);
}

TEST(AnalyzePrinciplesTest, NothingViolatingIsNotEstimableAndOthersStillAre) {
  const PrincipleAnalysis a = AnalyzePrinciples(Factorial(0.25));
  const PrincipleEffect& baseline = Effect(a, Principle::kBaseline);
  EXPECT_EQ(baseline.status, EffectStatus::kNothingViolates);
  EXPECT_EQ(baseline.note, "nothing violates it");
  EXPECT_FALSE(baseline.effect.has_value());
  EXPECT_FALSE(baseline.low.has_value());
  EXPECT_FALSE(baseline.p_value.has_value());
  EXPECT_EQ(baseline.satisfied, 4);
  EXPECT_EQ(baseline.violated, 0);
  EXPECT_EQ(Effect(a, Principle::kSmooth).status, EffectStatus::kEstimated);
}

TEST(AnalyzePrinciplesTest, WeightsAreThePairedSeeds) {
  // One principle varies: the effect is the difference of weighted means.
  // Satisfying: 0 (2 seeds), 0.3 (1): 0.1. Violating: 0.5 (1), 0.2 (2): 0.3.
  // Effect 0.2; weighted residuals 2(0.1^2) + 0.2^2 + 0.2^2 + 2(0.1^2) =
  // 0.12 over dof 2: sigma^2 0.06; Var = 0.06 (1/3 + 1/3) = 0.04, SE 0.2,
  // t = 1, and with 2 dof p = 1 - t / sqrt(t^2 + 2) = 1 - 1/sqrt(3).
  const PrincipleAnalysis a =
      AnalyzePrinciples({Observation(0.0, 2, Violates(false, false, false)),
                         Observation(0.3, 1, Violates(false, false, false)),
                         Observation(0.5, 1, Violates(false, true, false)),
                         Observation(0.2, 2, Violates(false, true, false))});
  const PrincipleEffect& baseline = Effect(a, Principle::kBaseline);
  ASSERT_EQ(baseline.status, EffectStatus::kEstimated);
  EXPECT_EQ(baseline.dof, 2);
  EXPECT_NEAR(*baseline.effect, 0.2, 1e-12);
  EXPECT_NEAR(*baseline.standard_error, 0.2, 1e-12);
  EXPECT_NEAR(*baseline.p_value, 1 - 1 / std::sqrt(3.0), 1e-9);
  // Against a t-table's 4.303 for 2 dof.
  EXPECT_NEAR(*baseline.high, 0.2 + kT2 * 0.2, kTableTolerance * 0.2);
  EXPECT_NEAR(*baseline.low, 0.2 - kT2 * 0.2, kTableTolerance * 0.2);
  // Unweighted, the raw means would be 0.15 and 0.35.
  EXPECT_DOUBLE_EQ(baseline.mean_delta_satisfied, 0.15);
  EXPECT_DOUBLE_EQ(baseline.mean_delta_violated, 0.35);
  EXPECT_EQ(Effect(a, Principle::kSmooth).status,
            EffectStatus::kNothingViolates);
}

TEST(AnalyzePrinciplesTest, EverythingViolatingIsNotEstimable) {
  const PrincipleAnalysis a =
      AnalyzePrinciples({Observation(0.1, 2, Violates(true, false, false)),
                         Observation(0.2, 2, Violates(true, true, false)),
                         Observation(0.4, 2, Violates(true, false, false))});
  const PrincipleEffect& smooth = Effect(a, Principle::kSmooth);
  EXPECT_EQ(smooth.status, EffectStatus::kEverythingViolates);
  EXPECT_THAT(smooth.note, ::testing::StartsWith("every schedule violates it"));
  EXPECT_FALSE(smooth.effect.has_value());
  EXPECT_EQ(Effect(a, Principle::kBaseline).status, EffectStatus::kEstimated);
}

TEST(AnalyzePrinciplesTest, PerfectlyCovaryingPrinciplesAreNotSeparable) {
  // smooth and pow2 are violated by the same schedules; baseline varies on
  // its own.
  const std::vector<ScheduleDelta> covarying = {
      Observation(-0.25, 2, Violates(false, false, false)),
      Observation(0.0, 2, Violates(true, false, true)),
      Observation(-0.125, 2, Violates(false, true, false)),
      Observation(0.25, 2, Violates(true, true, true)),
      Observation(0.0625, 1, Violates(true, false, true))};
  const PrincipleAnalysis a = AnalyzePrinciples(covarying);
  for (Principle p : {Principle::kSmooth, Principle::kPow2}) {
    EXPECT_EQ(Effect(a, p).status, EffectStatus::kNotSeparable);
    EXPECT_EQ(Effect(a, p).note,
              "smooth and pow2 co-vary completely: effects not separable");
    EXPECT_FALSE(Effect(a, p).effect.has_value());
  }
  // baseline is estimated with the pair held fixed: the same as with pow2
  // never violated at all.
  std::vector<ScheduleDelta> smooth_only = covarying;
  for (ScheduleDelta& s : smooth_only) s.violated.pow2 = false;
  const PrincipleAnalysis b = AnalyzePrinciples(smooth_only);
  const PrincipleEffect& with_pair = Effect(a, Principle::kBaseline);
  const PrincipleEffect& alone = Effect(b, Principle::kBaseline);
  ASSERT_EQ(with_pair.status, EffectStatus::kEstimated);
  ASSERT_EQ(alone.status, EffectStatus::kEstimated);
  EXPECT_NEAR(*with_pair.effect, *alone.effect, 1e-12);
  EXPECT_NEAR(*with_pair.standard_error, *alone.standard_error, 1e-12);
  EXPECT_EQ(with_pair.dof, 2);
}

TEST(AnalyzePrinciplesTest, ComplementaryPrinciplesAreNotSeparable) {
  const PrincipleAnalysis a =
      AnalyzePrinciples({Observation(-0.25, 2, Violates(true, false, false)),
                         Observation(0.0, 2, Violates(false, false, true)),
                         Observation(-0.125, 2, Violates(true, false, false)),
                         Observation(0.25, 2, Violates(false, false, true))});
  EXPECT_EQ(Effect(a, Principle::kSmooth).status, EffectStatus::kNotSeparable);
  EXPECT_EQ(Effect(a, Principle::kPow2).note,
            "smooth and pow2 co-vary completely (every schedule violates "
            "exactly one): effects not separable");
}

TEST(AnalyzePrinciplesTest, ThreeWayDependenceIsNamed) {
  // smooth is violated exactly where baseline or pow2 is (never both).
  const PrincipleAnalysis a =
      AnalyzePrinciples({Observation(-0.25, 1, Violates(false, false, false)),
                         Observation(0.0, 1, Violates(true, true, false)),
                         Observation(-0.125, 1, Violates(true, false, true)),
                         Observation(0.25, 1, Violates(false, false, false)),
                         Observation(0.5, 1, Violates(true, true, false))});
  for (Principle p : kAllPrinciples) {
    EXPECT_EQ(Effect(a, p).status, EffectStatus::kNotSeparable);
    EXPECT_EQ(Effect(a, p).note,
              "smooth, baseline and pow2 are linearly dependent over these "
              "schedules: effects not separable");
  }
  EXPECT_EQ(a.dof, 0);
}

TEST(AnalyzePrinciplesTest, TooFewSchedulesForAResidualIsNotEstimable) {
  // Intercept, smooth and pow2 are 3 coefficients: 3 schedules leave none.
  const PrincipleAnalysis a =
      AnalyzePrinciples({Observation(-0.25, 2, Violates(false, false, false)),
                         Observation(0.0, 2, Violates(true, false, false)),
                         Observation(0.375, 1, Violates(true, false, true))});
  for (Principle p : {Principle::kSmooth, Principle::kPow2}) {
    EXPECT_EQ(Effect(a, p).status, EffectStatus::kTooFewSchedules);
    EXPECT_EQ(Effect(a, p).note,
              "too few schedules: 3 with a paired delta, at least 4 needed");
    EXPECT_FALSE(Effect(a, p).effect.has_value());
  }
  EXPECT_EQ(Effect(a, Principle::kBaseline).status,
            EffectStatus::kNothingViolates);
  EXPECT_EQ(a.dof, 0);
}

TEST(AnalyzePrinciplesTest, NoObservationsLeaveEverythingNotEstimable) {
  // A schedule without a paired seed, or with a non-finite delta, is not an
  // observation.
  const PrincipleAnalysis a = AnalyzePrinciples(
      {Observation(0.5, 0, Violates(true, true, true)),
       Observation(std::nan(""), 2, Violates(true, false, false)),
       Observation(HUGE_VAL, 2, Violates(false, true, false))});
  EXPECT_EQ(a.schedules, 0);
  ASSERT_EQ(a.effects.size(), 3u);
  for (const PrincipleEffect& e : a.effects) {
    EXPECT_EQ(e.status, EffectStatus::kTooFewSchedules);
    EXPECT_EQ(e.note, "no schedule has a paired delta vs the baseline yet");
    EXPECT_EQ(e.satisfied + e.violated, 0);
  }
}

// Simulated experiments that follow the model: 10 schedules with random
// violations and 1-4 paired seeds, y = b0 + (per-seed noise) / sqrt(seeds).
// Returns, over the estimated effects of violating smooth, the fraction of
// intervals that cover `planted` and the fraction with p < 0.05.
struct Coverage {
  double covered = 0.0;
  double significant = 0.0;
  int estimated = 0;
};
Coverage Simulate(double planted, int experiments) {
  std::mt19937_64 rng(11);
  std::bernoulli_distribution coin(0.4);
  std::uniform_int_distribution<int> seeds(1, 4);
  std::normal_distribution<double> noise(0.0, 0.02);
  Coverage c;
  int covered = 0, significant = 0;
  for (int e = 0; e < experiments; ++e) {
    std::vector<ScheduleDelta> schedules;
    for (int s = 0; s < 10; ++s) {
      const PrincipleSet v = Violates(coin(rng), coin(rng), coin(rng));
      const int n = seeds(rng);
      double sum = 0.0;
      for (int k = 0; k < n; ++k) sum += noise(rng);
      schedules.push_back(
          Observation(0.01 + (v.smooth ? planted : 0.0) + sum / n, n, v));
    }
    const PrincipleAnalysis a = AnalyzePrinciples(schedules);
    const PrincipleEffect& smooth = Effect(a, Principle::kSmooth);
    if (smooth.status != EffectStatus::kEstimated) continue;
    ++c.estimated;
    covered += *smooth.low <= planted && planted <= *smooth.high;
    significant += *smooth.p_value < 0.05;
  }
  c.covered = static_cast<double>(covered) / c.estimated;
  c.significant = static_cast<double>(significant) / c.estimated;
  return c;
}

TEST(AnalyzePrinciplesTest, IntervalsCoverTheTrueEffectAtTheirLevel) {
  // 2,000 experiments without an effect: about 95% of the intervals cover 0
  // (binomial sd 0.5%) and about 5% of the p-values are below 0.05.
  const Coverage none = Simulate(/*planted=*/0.0, 2000);
  EXPECT_GT(none.estimated, 1900);
  EXPECT_NEAR(none.covered, 0.95, 0.02);
  EXPECT_NEAR(none.significant, 0.05, 0.02);
  // A planted effect of 0.05 (2.5 per-seed sds) is covered as often, and
  // found nearly always.
  const Coverage planted = Simulate(/*planted=*/0.05, 2000);
  EXPECT_NEAR(planted.covered, 0.95, 0.02);
  EXPECT_GT(planted.significant, 0.9);
}

}  // namespace
}  // namespace prism
