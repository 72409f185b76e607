// The verdicts on known truth (scheduler/simulate/calibration.h): 200 simulated
// experiments of 120 schedules at 3 seeds per case, on generator seeds that
// none of the method's choices were made on (the bench's table uses
// 100001+, the tuning runs used 1+; these use 200001+). Each case states the
// issue's target; bench/RESULTS.md "Verdicts on known truth" has the whole
// table with the command that makes it.
#include "scheduler/simulate/calibration.h"

#include <iostream>
#include <string>

#include "gtest/gtest.h"

namespace prism {
namespace {

constexpr int kExperiments = 200;
constexpr double kNoiseSd = 0.006;

CalibrationSpec Spec(TruthStructure structure, VerdictFamily family,
                     bool adaptive) {
  CalibrationSpec spec;
  spec.experiments = kExperiments;
  spec.truth.structure = structure;
  spec.truth.noise_sd = kNoiseSd;
  spec.truth.effect = 3 * kNoiseSd;
  spec.truth.planted_fraction = 0.2;
  spec.truth.best_gap = 2 * kNoiseSd;
  spec.truth.seed = 200001;
  spec.verdicts.family = family;
  spec.adaptive = adaptive;
  return spec;
}

// Describe says what was measured; Measure prints it, so the test log holds the
// numbers whether or not a target failed.
std::string Describe(const CalibrationResult& r) {
  return "FWER " + std::to_string(r.FamilywiseErrorRate()) + ", FDR " +
         std::to_string(r.FalseDiscoveryRate()) + ", power " +
         std::to_string(r.Power()) + ", best-set coverage " +
         std::to_string(r.BestSetCoverage()) + ", best-set size " +
         std::to_string(r.MeanBestSetSize()) + ", seeds/schedule " +
         std::to_string(r.MeanSeedsPerSchedule());
}

CalibrationResult Measure(const CalibrationSpec& spec) {
  const CalibrationResult r = RunCalibration(spec);
  std::cout << "  measured: " << Describe(r) << "\n";
  return r;
}

class CalibrationTest : public ::testing::TestWithParam<bool> {};

TEST_P(CalibrationTest, NullKeepsTheFamilywiseErrorUnderHolm) {
  const CalibrationResult r =
      Measure(Spec(TruthStructure::kNull, VerdictFamily::kHolm, GetParam()));
  ASSERT_EQ(r.experiments, kExperiments);
  EXPECT_LE(r.FamilywiseErrorRate(), 0.05) << Describe(r);
  EXPECT_GE(r.BestSetCoverage(), 0.95) << Describe(r);
  EXPECT_EQ(r.fell_back, 0);
}

TEST_P(CalibrationTest, NullKeepsTheFalseDiscoveryRateUnderBH) {
  const CalibrationResult r = Measure(Spec(
      TruthStructure::kNull, VerdictFamily::kBenjaminiHochberg, GetParam()));
  EXPECT_LE(r.FalseDiscoveryRate(), 0.05) << Describe(r);
  EXPECT_GE(r.BestSetCoverage(), 0.95) << Describe(r);
}

TEST_P(CalibrationTest, ThreeSdEffectsAreFoundAndTheBestIsInTheSet) {
  const CalibrationResult r = Measure(Spec(
      TruthStructure::kPlanted, VerdictFamily::kBenjaminiHochberg, GetParam()));
  EXPECT_LE(r.FalseDiscoveryRate(), 0.05) << Describe(r);
  EXPECT_GE(r.Power(), 0.8) << Describe(r);
  EXPECT_GE(r.BestSetCoverage(), 0.95) << Describe(r);
  // The set is a screen's answer: far smaller than the grid.
  EXPECT_LT(r.MeanBestSetSize(), 40) << Describe(r);
}

TEST_P(CalibrationTest, UnequalVariancesAndDivergedTrials) {
  CalibrationSpec spec = Spec(TruthStructure::kPlanted,
                              VerdictFamily::kBenjaminiHochberg, GetParam());
  spec.truth.variance_spread = 0.25;
  spec.truth.diverged_trials = 2;
  const CalibrationResult r = Measure(spec);
  EXPECT_LE(r.FalseDiscoveryRate(), 0.06) << Describe(r);
  EXPECT_GE(r.BestSetCoverage(), 0.95) << Describe(r);
}

// Schedules that differ in noise, each one's sd 0.006 exp(0.5 Z): a null
// keeps its error rate under either family (issue 39: with limma's moderated
// variance, 10-11% of such null experiments had a false verdict). Fixed 3
// seeds, the fewest and so the hardest; about 11 s.
TEST(UnequalVariancesTest, NullAtLogSdSpreadHalfKeepsTheErrorRate) {
  for (VerdictFamily family :
       {VerdictFamily::kHolm, VerdictFamily::kBenjaminiHochberg}) {
    CalibrationSpec spec = Spec(TruthStructure::kNull, family, false);
    spec.truth.variance_spread = 0.5;
    const CalibrationResult r = Measure(spec);
    ASSERT_EQ(r.experiments, kExperiments);
    // On a null every verdict is false: FWER and FDR are the same number.
    EXPECT_LE(r.FamilywiseErrorRate(), 0.05)
        << VerdictFamilyName(family) << ": " << Describe(r);
    EXPECT_GE(r.BestSetCoverage(), 0.95)
        << VerdictFamilyName(family) << ": " << Describe(r);
    EXPECT_EQ(r.fell_back, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, CalibrationTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "AdaptiveSeeds3To6"
                                             : "FixedSeeds3";
                         });

}  // namespace
}  // namespace prism
