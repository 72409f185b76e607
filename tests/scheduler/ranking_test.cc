#include "scheduler/analysis/ranking.h"

#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/simulate/known_truth.h"

namespace prism {
namespace {

// The tests written for the per-schedule paired t under Holm; the defaults
// (moderated t, Benjamini-Hochberg) have tests of their own below.
VerdictOptions PairedHolm() {
  VerdictOptions options;
  options.method = VerdictMethod::kPairedT;
  options.family = VerdictFamily::kHolm;
  return options;
}

// Losses are dyadic fractions so means compare exactly (the tie below).
TrialOutcome Trial(int64_t id, const std::string& schedule, int64_t seed,
                   double final_loss, std::vector<double> curve,
                   double tokens_per_second = 1000.0,
                   std::vector<double> attention = {}) {
  TrialOutcome t;
  t.trial_id = id;
  t.schedule = schedule;
  t.seed = seed;
  t.is_baseline = schedule == "12x12";
  t.final_val_loss = final_loss;
  t.min_val_loss = final_loss;
  for (double l : curve) t.min_val_loss = std::min(t.min_val_loss, l);
  t.tokens_per_second = tokens_per_second;
  for (size_t i = 0; i < curve.size(); ++i) {
    t.val_steps.push_back(100 * static_cast<int64_t>(i + 1));
  }
  t.val_losses = std::move(curve);
  t.attention_distance = std::move(attention);
  return t;
}

SpaceSpec Shape() {
  SpaceSpec spec;
  spec.d_model = 768;
  spec.layers = 12;
  spec.base_heads = 12;
  return spec;
}
constexpr char kA[] = "3x3,6x3,12x6";
constexpr char kB[] = "1x1,4x1,12x10";
constexpr char kC[] = "6x6,12x6";

std::vector<TrialOutcome> Example() {
  return {
      Trial(1, "12x12", 1, 3.5, {4.0, 3.75, 3.625, 3.5}, 1000, {1, 2}),
      Trial(2, "12x12", 2, 3.75, {4.25, 4.0, 3.875, 3.75}, 1100, {3, 4}),
      // A reaches seed 1's 3.5 at step 200 and seed 2's 3.75 at step 300.
      Trial(3, kA, 1, 3.25, {3.75, 3.5, 3.375, 3.25}, 1000, {0.5, 2.5}),
      Trial(4, kA, 2, 3.5, {4.0, 3.875, 3.75, 3.5}, 1000, {1.5, 3.5}),
      // C ties A on mean final loss; its curves reach the bar at step 400.
      Trial(6, kC, 2, 3.375, {4.5, 4.5, 4.5, 3.375}),
      Trial(5, kC, 1, 3.375, {4.5, 4.5, 4.5, 3.375}),
      // B never reaches the bar; seed 3 has no baseline, so no delta.
      Trial(7, kB, 1, 3.875, {4.5, 4.25, 4.0, 3.875}),
      Trial(8, kB, 3, 3.625, {4.5, 4.25, 4.0, 3.625}),
  };
}

TEST(RankSchedulesTest, RanksByPairedDeltaWithTextTieBreak) {
  const Ranking r = RankSchedules(Shape(), "12x12", Example(), PairedHolm());
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].schedule, kA);
  EXPECT_EQ(r.rows[1].schedule, kC);
  EXPECT_EQ(r.rows[2].schedule, "12x12");
  EXPECT_EQ(r.rows[3].schedule, kB);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r.rows[i].rank, i + 1);
  EXPECT_TRUE(r.rows[2].is_baseline);
  EXPECT_FALSE(r.rows[0].is_baseline);
  ASSERT_TRUE(r.baseline.has_value());
  EXPECT_EQ(r.baseline->schedule, "12x12");
  EXPECT_EQ(r.rows[1].trial_ids, std::vector<int64_t>({5, 6}));
}

TEST(RankSchedulesTest, PairedDeltaOrderDiffersFromUnpairedMean) {
  // The baseline's seeds differ a lot; X ran on the easy seeds, Y on the
  // hard ones. By unpaired mean X (3.4375) is ahead of Y (4.375); paired, Y
  // beats the baseline by 0.125 on its seeds and X by only 0.0625.
  const std::vector<TrialOutcome> trials = {
      Trial(1, "12x12", 1, 3.0, {}), Trial(2, "12x12", 2, 4.0, {}),
      Trial(3, "12x12", 3, 5.0, {}), Trial(4, kA, 1, 2.9375, {}),
      Trial(5, kA, 2, 3.9375, {}),   Trial(6, kC, 2, 3.875, {}),
      Trial(7, kC, 3, 4.875, {}),
  };
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].schedule, kC);
  EXPECT_DOUBLE_EQ(r.rows[0].delta_vs_baseline.mean, -0.125);
  EXPECT_EQ(r.rows[1].schedule, kA);
  EXPECT_DOUBLE_EQ(r.rows[1].delta_vs_baseline.mean, -0.0625);
  EXPECT_EQ(r.rows[2].schedule, "12x12");
  // Constant deltas: t is infinite, p 0, and both survive Holm.
  EXPECT_EQ(r.rows[0].verdict, Verdict::kBetter);
  EXPECT_EQ(r.rows[1].verdict, Verdict::kBetter);
  EXPECT_EQ(r.compared_schedules, 2);
}

TEST(RankSchedulesTest, PairsDeltasPerSeedAndMeasuresConvergence) {
  const Ranking r = RankSchedules(Shape(), "12x12", Example(), PairedHolm());
  const RankedRow& a = r.rows[0];
  EXPECT_DOUBLE_EQ(a.final_val_loss.mean, 3.375);
  EXPECT_EQ(a.final_val_loss.n, 2);
  EXPECT_EQ(a.delta_vs_baseline.n, 2);
  EXPECT_DOUBLE_EQ(a.delta_vs_baseline.mean, -0.25);
  EXPECT_DOUBLE_EQ(a.delta_vs_baseline.low, -0.25);  // equal deltas
  EXPECT_DOUBLE_EQ(a.min_val_loss, 3.25);
  EXPECT_DOUBLE_EQ(a.steps_to_baseline, 250.0);  // (200 + 300) / 2
  EXPECT_NEAR(a.convergence_speedup, (2.0 + 4.0 / 3.0) / 2, 1e-12);
  EXPECT_EQ(a.speedup.n, 2);
  EXPECT_EQ(a.speedup_seeds, 2);
  EXPECT_NEAR(a.tokens_per_second_ratio, 1000.0 / 1050.0, 1e-12);
  // Paired by seed: 1000 / 1000 and 1000 / 1100, hardware unknown.
  EXPECT_NEAR(a.throughput_ratio.mean, (1.0 + 1000.0 / 1100) / 2, 1e-12);
  EXPECT_EQ(a.throughput_ratio.n, 2);
  EXPECT_EQ(a.throughput_pairs, 2);
  EXPECT_EQ(a.throughput_pairing, ThroughputPairing::kUnpaired);
  EXPECT_EQ(a.throughput_hardware, "unknown device vs unknown device");
  EXPECT_EQ(a.attention_distance, std::vector<double>({1.0, 3.0}));
  EXPECT_EQ(a.attention_distance_shift, std::vector<double>({-1.0, 0.0}));
  EXPECT_TRUE(a.principles.smooth);
  EXPECT_TRUE(a.principles.baseline);
  EXPECT_TRUE(a.principles.pow2);
  EXPECT_EQ(a.verdict, Verdict::kBetter);
  EXPECT_EQ(a.p_value, 0.0);
  EXPECT_EQ(a.adjusted_p_value, 0.0);
  EXPECT_EQ(a.seeds_completed, 2);
  EXPECT_EQ(a.paired_seeds, 2);

  const RankedRow& c = r.rows[1];
  EXPECT_DOUBLE_EQ(c.delta_vs_baseline.mean, -0.25);  // -0.125 and -0.375
  // sd = 0.125 * sqrt(2); half width = t(1) * sd / sqrt(2) = 12.706 * 0.125.
  EXPECT_NEAR(c.delta_vs_baseline.high - c.delta_vs_baseline.mean,
              12.7062 * 0.125, 1e-3);
  // Interpolated between 300 (4.5) and 400 (3.375): seed 1's bar 3.5 at
  // 300 + 100 * 1 / 1.125 = 3500 / 9, seed 2's 3.75 at 300 + 100 * 0.75 /
  // 1.125 = 1100 / 3; ratios 400 / those: 36 / 35 and 12 / 11.
  EXPECT_NEAR(c.steps_to_baseline, 3400.0 / 9, 1e-9);
  EXPECT_NEAR(c.convergence_speedup, (36.0 / 35 + 12.0 / 11) / 2, 1e-12);
  EXPECT_EQ(c.speedup.n, 2);
  EXPECT_EQ(c.speedup_seeds, 2);
  EXPECT_TRUE(c.attention_distance.empty());
  EXPECT_TRUE(c.attention_distance_shift.empty());
  // t = -0.25 / 0.125 = -2 with 1 dof: p = 1 - 2 atan(2) / pi = 0.2952;
  // second smallest of 2, so Holm multiplies it by 1.
  ASSERT_TRUE(c.p_value.has_value());
  EXPECT_NEAR(*c.p_value, 1.0 - 2.0 * std::atan(2.0) / std::acos(-1.0), 1e-12);
  EXPECT_NEAR(*c.adjusted_p_value, *c.p_value, 1e-15);
  EXPECT_EQ(c.verdict, Verdict::kInconclusive);

  const RankedRow& base = r.rows[2];
  EXPECT_DOUBLE_EQ(base.delta_vs_baseline.mean, 0.0);
  EXPECT_EQ(base.delta_vs_baseline.n, 2);
  EXPECT_DOUBLE_EQ(base.steps_to_baseline, 400.0);
  EXPECT_DOUBLE_EQ(base.convergence_speedup, 1.0);
  EXPECT_DOUBLE_EQ(base.tokens_per_second, 1050.0);
  EXPECT_DOUBLE_EQ(base.tokens_per_second_ratio, 1.0);
  EXPECT_DOUBLE_EQ(base.speedup.mean, 1.0);
  EXPECT_EQ(base.speedup.n, 2);
  // Each baseline trial pairs with itself: the same worker by definition.
  EXPECT_DOUBLE_EQ(base.throughput_ratio.mean, 1.0);
  EXPECT_EQ(base.throughput_pairing, ThroughputPairing::kWorker);
  EXPECT_EQ(base.verdict, Verdict::kNone);
  EXPECT_FALSE(base.p_value.has_value());
  EXPECT_FALSE(base.adjusted_p_value.has_value());

  const RankedRow& b = r.rows[3];
  EXPECT_DOUBLE_EQ(b.final_val_loss.mean, 3.75);
  EXPECT_EQ(b.final_val_loss.n, 2);
  EXPECT_EQ(b.delta_vs_baseline.n, 1);  // seed 3 has no baseline
  EXPECT_DOUBLE_EQ(b.delta_vs_baseline.mean, 0.375);
  EXPECT_FALSE(b.delta_vs_baseline.has_bounds);  // one paired seed
  EXPECT_TRUE(b.final_val_loss.has_bounds);
  EXPECT_EQ(b.verdict, Verdict::kNeedsSeeds);
  EXPECT_FALSE(b.p_value.has_value());
  EXPECT_EQ(b.paired_seeds, 1);
  EXPECT_EQ(r.compared_schedules, 2);  // A and C
  EXPECT_EQ(b.steps_to_baseline, 0.0);
  EXPECT_EQ(b.convergence_speedup, 0.0);
  // Seed 1 is paired and never reached: 0 of 1, not dropped.
  EXPECT_EQ(b.speedup.n, 0);
  EXPECT_EQ(b.speedup_seeds, 1);
  EXPECT_FALSE(b.principles.smooth);
  EXPECT_FALSE(b.principles.pow2);
}

TEST(RankSchedulesTest, PrincipleEffectsCompareSatisfyingAndViolating) {
  const Ranking r = RankSchedules(Shape(), "12x12", Example(), PairedHolm());
  ASSERT_EQ(r.principle_effects.size(), 3u);
  // Baseline excluded: A -0.25 (all three), C -0.25 (not smooth),
  // B +0.375 (only baseline).
  const PrincipleEffect& smooth = r.principle_effects[0];
  EXPECT_EQ(smooth.principle, Principle::kSmooth);
  EXPECT_EQ(smooth.satisfied, 1);
  EXPECT_EQ(smooth.violated, 2);
  EXPECT_DOUBLE_EQ(smooth.mean_delta_satisfied, -0.25);
  EXPECT_DOUBLE_EQ(smooth.mean_delta_violated, 0.0625);
  const PrincipleEffect& baseline = r.principle_effects[1];
  EXPECT_EQ(baseline.satisfied, 3);
  EXPECT_EQ(baseline.violated, 0);
  EXPECT_NEAR(baseline.mean_delta_satisfied, -0.125 / 3, 1e-12);
  EXPECT_EQ(baseline.mean_delta_violated, 0.0);
  const PrincipleEffect& pow2 = r.principle_effects[2];
  EXPECT_EQ(pow2.satisfied, 2);
  EXPECT_EQ(pow2.violated, 1);
  EXPECT_DOUBLE_EQ(pow2.mean_delta_satisfied, -0.25);
  EXPECT_DOUBLE_EQ(pow2.mean_delta_violated, 0.375);
  // No schedule violates baseline; 3 schedules cannot fit an intercept,
  // smooth and pow2 and leave a residual.
  EXPECT_EQ(baseline.status, EffectStatus::kNothingViolates);
  EXPECT_EQ(smooth.status, EffectStatus::kTooFewSchedules);
  EXPECT_EQ(pow2.status, EffectStatus::kTooFewSchedules);
  EXPECT_FALSE(smooth.effect.has_value());
}

TEST(RankSchedulesTest, PrincipleEffectsRegressPairedDeltasOnViolations) {
  // A 2x2 factorial in smooth and pow2, 2 seeds per schedule: A none,
  // C smooth, D pow2, B both, with mean deltas -0.25, 0, -0.125, +0.25
  // (principle_analysis_test works the same numbers by hand: effects 0.3125
  // and 0.1875, standard errors 0.0625, 1 dof).
  constexpr char kD[] = "4x2,12x10";  // d_head 192: violates pow2 only
  const std::vector<TrialOutcome> trials = {
      Trial(1, "12x12", 1, 3.5, {}),  Trial(2, "12x12", 2, 3.75, {}),
      Trial(3, kA, 1, 3.25, {}),      Trial(4, kA, 2, 3.5, {}),
      Trial(5, kC, 1, 3.375, {}),     Trial(6, kC, 2, 3.875, {}),
      Trial(7, kD, 1, 3.5, {}),       Trial(8, kD, 2, 3.5, {}),
      Trial(9, kB, 1, 3.875, {}),     Trial(10, kB, 2, 3.875, {}),
      Trial(11, "12x12", 3, 3.0, {}),  // unpaired seeds do not count
  };
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  for (const RankedRow& row : r.rows) {
    if (row.schedule == kD) {
      EXPECT_TRUE(row.principles.smooth);
      EXPECT_TRUE(row.principles.baseline);
      EXPECT_FALSE(row.principles.pow2);
    }
  }
  const PrincipleEffect& smooth = r.principle_effects[0];
  const PrincipleEffect& pow2 = r.principle_effects[2];
  ASSERT_EQ(smooth.status, EffectStatus::kEstimated);
  ASSERT_EQ(pow2.status, EffectStatus::kEstimated);
  EXPECT_NEAR(*smooth.effect, 0.3125, 1e-12);
  EXPECT_NEAR(*pow2.effect, 0.1875, 1e-12);
  EXPECT_NEAR(*smooth.standard_error, 0.0625, 1e-12);
  EXPECT_EQ(smooth.dof, 1);
  EXPECT_LT(*smooth.low, 0.0);  // 12.706 * 0.0625 = 0.794 > 0.3125
  EXPECT_EQ(r.principle_effects[1].status, EffectStatus::kNothingViolates);
}

TEST(RankSchedulesTest, InputOrderDoesNotChangeTheResult) {
  std::vector<TrialOutcome> trials = Example();
  const Ranking forward = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  std::reverse(trials.begin(), trials.end());
  const Ranking backward =
      RankSchedules(Shape(), "12x12", trials, PairedHolm());
  ASSERT_EQ(forward.rows.size(), backward.rows.size());
  for (size_t i = 0; i < forward.rows.size(); ++i) {
    EXPECT_EQ(forward.rows[i].schedule, backward.rows[i].schedule);
    EXPECT_DOUBLE_EQ(forward.rows[i].delta_vs_baseline.mean,
                     backward.rows[i].delta_vs_baseline.mean);
  }
}

TEST(RankSchedulesTest, DuplicateBaselineSeedUsesLowestTrialId) {
  std::vector<TrialOutcome> trials = Example();
  trials.push_back(Trial(99, "12x12", 1, 3.0, {3.0}));
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  // A's seed-1 delta still uses trial 1's 3.5.
  EXPECT_DOUBLE_EQ(r.rows[0].delta_vs_baseline.mean, -0.25);
}

TEST(RankSchedulesTest, EmptyBaselineTextFallsBackToTheFlag) {
  const Ranking r = RankSchedules(Shape(), "", Example(), PairedHolm());
  ASSERT_TRUE(r.baseline.has_value());
  EXPECT_EQ(r.baseline->schedule, "12x12");
}

TEST(RankSchedulesTest, WithoutABaselineThereAreNoDeltasOrRatios) {
  std::vector<TrialOutcome> trials;
  for (const TrialOutcome& t : Example()) {
    if (t.schedule != "12x12") trials.push_back(t);
  }
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  EXPECT_FALSE(r.baseline.has_value());
  ASSERT_EQ(r.rows.size(), 3u);
  // Without deltas every schedule needs seeds, ordered by mean final loss.
  EXPECT_EQ(r.rows[0].schedule, kA);
  EXPECT_EQ(r.rows[1].schedule, kC);
  EXPECT_EQ(r.rows[2].schedule, kB);
  EXPECT_EQ(r.compared_schedules, 0);
  for (const RankedRow& row : r.rows) {
    EXPECT_EQ(row.verdict, Verdict::kNeedsSeeds);
    EXPECT_EQ(row.delta_vs_baseline.n, 0);
    EXPECT_EQ(row.tokens_per_second_ratio, 0.0);
    EXPECT_EQ(row.steps_to_baseline, 0.0);
  }
  for (const PrincipleEffect& e : r.principle_effects) {
    EXPECT_EQ(e.satisfied + e.violated, 0);
  }
}

TEST(RankSchedulesTest, FloatCurvesReachTheirOwnDoubleFinalLoss) {
  // The trainer reports the final val loss as a double and stores the curve
  // as float; here the float rounds up, above the double.
  const float stored = 3.3f;
  const double final_loss = std::nextafter(static_cast<double>(stored), 0.0);
  ASSERT_GT(static_cast<double>(stored), final_loss);
  ASSERT_EQ(static_cast<float>(final_loss), stored);
  const std::vector<TrialOutcome> trials = {
      Trial(1, "12x12", 1, final_loss, {4.0, 3.5, stored}),
      Trial(2, kA, 1, 3.25, {3.75, stored, 3.25}),
  };
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  ASSERT_EQ(r.rows.size(), 2u);
  // One seed: A needs seeds, so it ranks after the baseline.
  EXPECT_EQ(r.rows[0].schedule, "12x12");
  EXPECT_DOUBLE_EQ(r.rows[0].steps_to_baseline, 300.0);
  EXPECT_DOUBLE_EQ(r.rows[0].convergence_speedup, 1.0);
  EXPECT_EQ(r.rows[1].schedule, kA);
  EXPECT_DOUBLE_EQ(r.rows[1].steps_to_baseline, 200.0);
  EXPECT_DOUBLE_EQ(r.rows[1].convergence_speedup, 1.5);
}

TEST(RankSchedulesTest, StepsToTheTargetAreInterpolatedBetweenEvals) {
  // The baseline dips below its final 3.0 between steps 200 (3.5) and 300
  // (2.875): its own steps are 200 + 100 * 0.5 / 0.625 = 280, not 300. The
  // schedule crosses 3.0 between 200 (3.25) and 300 (2.75): 250, not 300.
  const std::vector<TrialOutcome> trials = {
      Trial(1, "12x12", 1, 3.0, {4.0, 3.5, 2.875, 3.0}),
      Trial(2, kA, 1, 2.5, {3.75, 3.25, 2.75, 2.5}),
  };
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  ASSERT_EQ(r.rows.size(), 2u);
  const RankedRow& base = r.rows[0];
  ASSERT_TRUE(base.is_baseline);
  EXPECT_DOUBLE_EQ(base.steps_to_baseline, 280.0);
  const RankedRow& a = r.rows[1];
  EXPECT_DOUBLE_EQ(a.steps_to_baseline, 250.0);
  EXPECT_DOUBLE_EQ(a.speedup.mean, 280.0 / 250.0);
  EXPECT_EQ(a.speedup.n, 1);
  EXPECT_FALSE(a.speedup.has_bounds);  // one seed: no interval
  EXPECT_EQ(a.speedup_seeds, 1);
}

TEST(RankSchedulesTest, SpeedupIntervalIsOverReachedSeedsOfAllPaired) {
  // A flat baseline reaching its final 3.0 at step 400 on each of 4 seeds.
  // The schedule reaches 3.0 at 320 (300 + 100 * 0.25 / 1.25), 200 (exact)
  // and 160 (100 + 100 * 0.375 / 0.625): ratios 1.25, 2 and 2.5; seed 4
  // never gets there and counts in n, not in m.
  std::vector<TrialOutcome> trials;
  for (int64_t seed = 1; seed <= 4; ++seed) {
    trials.push_back(Trial(seed, "12x12", seed, 3.0, {4.0, 3.5, 3.25, 3.0}));
  }
  trials.push_back(Trial(11, kA, 1, 2.0, {4.0, 3.75, 3.25, 2.0}));
  trials.push_back(Trial(12, kA, 2, 2.5, {3.5, 3.0, 2.75, 2.5}));
  trials.push_back(Trial(13, kA, 3, 2.5, {3.375, 2.75, 2.5, 2.5}));
  trials.push_back(Trial(14, kA, 4, 3.25, {4.0, 3.75, 3.5, 3.25}));
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  const RankedRow* a = nullptr;
  for (const RankedRow& row : r.rows) {
    if (row.schedule == kA) a = &row;
  }
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->speedup_seeds, 4);
  EXPECT_EQ(a->speedup.n, 3);
  EXPECT_NEAR(a->steps_to_baseline, (320.0 + 200.0 + 160.0) / 3, 1e-9);
  EXPECT_NEAR(a->speedup.mean, 5.75 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(a->convergence_speedup, a->speedup.mean);
  // sd of (1.25, 2, 2.5) = sqrt(0.7916667 / 2); t(2 dof, 97.5%) = 4.303 from
  // the table: half-width 4.303 * sd / sqrt(3) = 1.5630.
  ASSERT_TRUE(a->speedup.has_bounds);
  const double half = 4.303 * std::sqrt(0.7916667 / 2) / std::sqrt(3.0);
  EXPECT_NEAR(a->speedup.high - a->speedup.mean, half, 1e-3);
  EXPECT_NEAR(a->speedup.mean - a->speedup.low, half, 1e-3);
  EXPECT_NEAR(half, 1.5630, 1e-4);
}

// Ran sets where a trial ran: the worker that finished it and its device.
TrialOutcome Ran(TrialOutcome t, const std::string& worker,
                 const std::string& device) {
  t.worker_id = worker;
  t.device = device;
  return t;
}
constexpr char kCpu[] = "cpu (4 threads)";
constexpr char kGpu[] = "cuda:0";

const RankedRow& RowOf(const Ranking& r, const std::string& schedule) {
  for (const RankedRow& row : r.rows) {
    if (row.schedule == schedule) return row;
  }
  ADD_FAILURE() << "no row " << schedule;
  return r.rows.front();
}
// A row of a temporary Ranking would dangle (ASan found two such tests).
const RankedRow& RowOf(Ranking&& r, const std::string& schedule) = delete;

TEST(RankSchedulesTest, ThroughputPairsOnTheSameWorker) {
  const std::vector<TrialOutcome> trials = {
      Ran(Trial(1, "12x12", 1, 3.0, {}, 1000), "w1", kCpu),
      Ran(Trial(2, "12x12", 2, 3.0, {}, 2000), "w2", kCpu),
      Ran(Trial(3, kA, 1, 3.0, {}, 1100), "w1", kCpu),
      Ran(Trial(4, kA, 2, 3.0, {}, 2400), "w2", kCpu),
  };
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  const RankedRow& a = RowOf(r, kA);
  EXPECT_EQ(a.throughput_pairing, ThroughputPairing::kWorker);
  EXPECT_EQ(a.throughput_pairs, 2);
  EXPECT_EQ(a.throughput_ratio.n, 2);
  // Ratios 1.1 and 1.2: mean 1.15, sd 0.0707; t(1 dof) = 12.706 from the
  // table: half-width 12.706 * 0.05 = 0.6353.
  EXPECT_NEAR(a.throughput_ratio.mean, 1.15, 1e-12);
  EXPECT_NEAR(a.throughput_ratio.high - a.throughput_ratio.mean, 0.6353, 1e-3);
  EXPECT_EQ(a.throughput_hardware, kCpu);
  // The unpaired ratio of means mixes the seeds: 1750 / 1500.
  EXPECT_NEAR(a.tokens_per_second_ratio, 1750.0 / 1500, 1e-12);
}

TEST(RankSchedulesTest, ThroughputFallsBackToTheSameDeviceThenUnpaired) {
  const std::vector<TrialOutcome> trials = {
      Ran(Trial(1, "12x12", 1, 3.0, {}, 1000), "w1", kCpu),
      Ran(Trial(2, "12x12", 2, 3.0, {}, 1000), "w1", kCpu),
      // A: seed 1 on the same worker, seed 2 on another with the same device.
      Ran(Trial(3, kA, 1, 3.0, {}, 900), "w1", kCpu),
      Ran(Trial(4, kA, 2, 3.0, {}, 1100), "w2", kCpu),
      // B: both seeds on a GPU: nothing matches.
      Ran(Trial(5, kB, 1, 3.0, {}, 5000), "g1", kGpu),
      Ran(Trial(6, kB, 2, 3.0, {}, 7000), "g1", kGpu),
      // C: one seed on the same worker, one on the GPU: only the match
      // counts.
      Ran(Trial(7, kC, 1, 3.0, {}, 1200), "w1", kCpu),
      Ran(Trial(8, kC, 2, 3.0, {}, 9000), "g1", kGpu),
  };
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  const RankedRow& a = RowOf(r, kA);
  EXPECT_EQ(a.throughput_pairing, ThroughputPairing::kDevice);
  EXPECT_EQ(a.throughput_ratio.n, 2);
  EXPECT_NEAR(a.throughput_ratio.mean, 1.0, 1e-12);
  EXPECT_EQ(a.throughput_hardware, kCpu);

  const RankedRow& b = RowOf(r, kB);
  EXPECT_EQ(b.throughput_pairing, ThroughputPairing::kUnpaired);
  EXPECT_EQ(b.throughput_ratio.n, 2);
  EXPECT_EQ(b.throughput_pairs, 2);
  EXPECT_NEAR(b.throughput_ratio.mean, 6.0, 1e-12);
  EXPECT_EQ(b.throughput_hardware, "cuda:0 vs cpu (4 threads)");

  const RankedRow& c = RowOf(r, kC);
  EXPECT_EQ(c.throughput_pairing, ThroughputPairing::kWorker);
  EXPECT_EQ(c.throughput_ratio.n, 1);
  EXPECT_EQ(c.throughput_pairs, 2);
  EXPECT_NEAR(c.throughput_ratio.mean, 1.2, 1e-12);
  EXPECT_FALSE(c.throughput_ratio.has_bounds);
}

// Shared sets the share of its cores a CPU trial got.
TrialOutcome Shared(TrialOutcome t, double cpu_share) {
  t.cpu_share = cpu_share;
  return t;
}

TEST(RankSchedulesTest, ThroughputDoesNotPairCpuTrialsThatSharedTheirCores) {
  const std::vector<TrialOutcome> trials = {
      // The baseline trained beside another trial (half the cores each).
      Shared(Ran(Trial(1, "12x12", 1, 3.0, {}, 1000), "w1", kCpu), 0.5),
      Shared(Ran(Trial(2, "12x12", 2, 3.0, {}, 1000), "w1", kCpu), 0.5),
      // A: seed 1 also beside another (0.5 vs 0.6: within 0.15, pairs);
      // seed 2 alone, twice as fast for it (0.97 vs 0.5: not paired).
      Shared(Ran(Trial(3, kA, 1, 3.0, {}, 1100), "w1", kCpu), 0.6),
      Shared(Ran(Trial(4, kA, 2, 3.0, {}, 2000), "w1", kCpu), 0.97),
      // B: alone on both seeds: nothing pairs, so both count, unpaired,
      // labelled with the shares.
      Shared(Ran(Trial(5, kB, 1, 3.0, {}, 1900), "w1", kCpu), 0.96),
      Shared(Ran(Trial(6, kB, 2, 3.0, {}, 2100), "w1", kCpu), 0.96),
      // C: one side unknown (0): paired as before.
      Shared(Ran(Trial(7, kC, 1, 3.0, {}, 1500), "w1", kCpu), 0.0),
  };
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  const RankedRow& a = RowOf(r, kA);
  EXPECT_EQ(a.throughput_pairing, ThroughputPairing::kWorker);
  EXPECT_EQ(a.throughput_pairs, 2);
  EXPECT_EQ(a.throughput_ratio.n, 1);
  EXPECT_NEAR(a.throughput_ratio.mean, 1.1, 1e-12);

  const RankedRow& b = RowOf(r, kB);
  EXPECT_EQ(b.throughput_pairing, ThroughputPairing::kUnpaired);
  EXPECT_EQ(b.throughput_ratio.n, 2);
  EXPECT_NEAR(b.throughput_ratio.mean, 2.0, 1e-12);
  EXPECT_EQ(b.throughput_hardware,
            "cpu (4 threads) at 96% of its cores vs cpu (4 threads) at 50% of "
            "its cores");

  const RankedRow& c = RowOf(r, kC);
  EXPECT_EQ(c.throughput_pairing, ThroughputPairing::kWorker);
  EXPECT_NEAR(c.throughput_ratio.mean, 1.5, 1e-12);
}

TEST(RankSchedulesTest, ThroughputNeedsTokensPerSecondOnBothSides) {
  const std::vector<TrialOutcome> trials = {
      Ran(Trial(1, "12x12", 1, 3.0, {}, 0.0), "w1", kCpu),
      Ran(Trial(2, kA, 1, 3.0, {}, 1000), "w1", kCpu),
  };
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  const RankedRow& a = RowOf(r, kA);
  EXPECT_EQ(a.throughput_pairs, 0);
  EXPECT_EQ(a.throughput_ratio.n, 0);
  EXPECT_EQ(a.throughput_pairing, ThroughputPairing::kNone);
  EXPECT_EQ(a.throughput_hardware, "");
}

// Marginal is a schedule whose deltas vs a flat 3.0 baseline are -0.625, -1
// and -1.375: mean -1, sd 0.375, t = -1 / (0.375 / sqrt(3)) = -4.6188 with 2
// dof, so p = 1 - |t| / sqrt(2 + t^2) = 0.04382: significant alone.
std::vector<TrialOutcome> Marginal(int64_t first_id, const std::string& s) {
  return {Trial(first_id, s, 1, 2.375, {}), Trial(first_id + 1, s, 2, 2.0, {}),
          Trial(first_id + 2, s, 3, 1.625, {})};
}
std::vector<TrialOutcome> FlatBaseline() {
  return {Trial(1, "12x12", 1, 3.0, {}), Trial(2, "12x12", 2, 3.0, {}),
          Trial(3, "12x12", 3, 3.0, {})};
}
constexpr double kMarginalP = 0.0438171;

TEST(RankSchedulesTest, OneMarginalScheduleIsBetter) {
  std::vector<TrialOutcome> trials = FlatBaseline();
  for (TrialOutcome& t : Marginal(10, kA)) trials.push_back(t);
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  ASSERT_EQ(r.rows[0].schedule, kA);
  EXPECT_NEAR(*r.rows[0].p_value, kMarginalP, 1e-6);
  EXPECT_NEAR(*r.rows[0].adjusted_p_value, kMarginalP, 1e-6);
  EXPECT_EQ(r.rows[0].verdict, Verdict::kBetter);
  EXPECT_EQ(r.compared_schedules, 1);
}

TEST(RankSchedulesTest, HolmTurnsTwoMarginalWinsInconclusive) {
  std::vector<TrialOutcome> trials = FlatBaseline();
  for (TrialOutcome& t : Marginal(10, kA)) trials.push_back(t);
  for (TrialOutcome& t : Marginal(20, kC)) trials.push_back(t);
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  EXPECT_EQ(r.compared_schedules, 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(*r.rows[i].p_value, kMarginalP, 1e-6);
    // Both at the smallest p: 2p, and the second raised to the first's.
    EXPECT_NEAR(*r.rows[i].adjusted_p_value, 2 * kMarginalP, 1e-6);
    EXPECT_EQ(r.rows[i].verdict, Verdict::kInconclusive);
  }
}

// A finalist of a screening search was chosen among every screened
// schedule: those that stopped at a rung join the family with p = 1.
TEST(RankSchedulesTest, ScreenedSchedulesJoinTheFamily) {
  std::vector<TrialOutcome> trials = FlatBaseline();
  for (TrialOutcome& t : Marginal(10, kA)) trials.push_back(t);
  VerdictOptions options = PairedHolm();
  options.screened_schedules = 2;
  const Ranking two = RankSchedules(Shape(), "12x12", trials, options);
  ASSERT_EQ(two.rows[0].schedule, kA);
  EXPECT_NEAR(*two.rows[0].p_value, kMarginalP, 1e-6);
  EXPECT_NEAR(*two.rows[0].adjusted_p_value, 2 * kMarginalP, 1e-6);
  EXPECT_EQ(two.rows[0].verdict, Verdict::kInconclusive);
  ASSERT_EQ(two.verdicts.looks.size(), 1u);
  EXPECT_EQ(two.verdicts.looks[0].family, 2);
  // Benjamini-Hochberg: the smallest of m p-values times m.
  options.family = VerdictFamily::kBenjaminiHochberg;
  options.screened_schedules = 3;
  const Ranking bh = RankSchedules(Shape(), "12x12", trials, options);
  EXPECT_NEAR(*bh.rows[0].adjusted_p_value, 3 * kMarginalP, 1e-6);
  // Fewer screened than tested changes nothing.
  options.screened_schedules = 1;
  const Ranking one = RankSchedules(Shape(), "12x12", trials, options);
  EXPECT_EQ(one.rows[0].verdict, Verdict::kBetter);
  EXPECT_EQ(one.verdicts.looks[0].family, 1);
}

TEST(RankSchedulesTest, WorseNeedsTheAdjustedTestToo) {
  std::vector<TrialOutcome> trials = FlatBaseline();
  trials.push_back(Trial(10, kA, 1, 3.5, {}));
  trials.push_back(Trial(11, kA, 2, 3.5, {}));
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  EXPECT_EQ(r.rows.back().schedule, kA);
  EXPECT_EQ(r.rows.back().verdict, Verdict::kWorse);
}

TEST(RankSchedulesTest, OneSeedSchedulesNeedSeedsAndRankLast) {
  std::vector<TrialOutcome> trials = FlatBaseline();
  // B is far ahead on its one seed, but one seed proves nothing.
  trials.push_back(Trial(10, kB, 1, 1.0, {}));
  trials.push_back(Trial(11, kA, 1, 2.9375, {}));
  trials.push_back(Trial(12, kA, 2, 2.9375, {}));
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].schedule, kA);
  EXPECT_EQ(r.rows[1].schedule, "12x12");
  const RankedRow& b = r.rows[2];
  EXPECT_EQ(b.schedule, kB);
  EXPECT_EQ(b.verdict, Verdict::kNeedsSeeds);
  EXPECT_EQ(b.delta_vs_baseline.n, 1);
  EXPECT_DOUBLE_EQ(b.delta_vs_baseline.mean, -2.0);
  EXPECT_FALSE(b.delta_vs_baseline.has_bounds);
  EXPECT_FALSE(b.final_val_loss.has_bounds);
  EXPECT_FALSE(b.p_value.has_value());
  EXPECT_FALSE(b.adjusted_p_value.has_value());
  EXPECT_EQ(r.compared_schedules, 1);
}

TEST(RankSchedulesTest, CountsDivergedAndFailedSeedsOutsideTheStatistics) {
  std::vector<TrialOutcome> trials = FlatBaseline();
  trials.push_back(Trial(10, kA, 1, 2.5, {}));
  trials.push_back(Trial(11, kA, 2, 2.5, {}));
  TrialOutcome diverged = Trial(12, kA, 3, 1e9, {});
  diverged.state = OutcomeState::kDiverged;
  trials.push_back(diverged);
  TrialOutcome failed = Trial(13, kC, 1, 0.0, {});
  failed.state = OutcomeState::kFailed;
  trials.push_back(failed);
  // A failed baseline seed is no bar: A's seed 2 still pairs with trial 2.
  TrialOutcome failed_baseline = Trial(0, "12x12", 2, 0.0, {});
  failed_baseline.state = OutcomeState::kFailed;
  trials.push_back(failed_baseline);
  const Ranking r = RankSchedules(Shape(), "12x12", trials, PairedHolm());
  ASSERT_EQ(r.rows.size(), 3u);
  const RankedRow& a = r.rows[0];
  EXPECT_EQ(a.schedule, kA);
  EXPECT_EQ(a.seeds_completed, 2);
  EXPECT_EQ(a.seeds_diverged, 1);
  EXPECT_EQ(a.seeds_failed, 0);
  EXPECT_TRUE(a.diverged);
  EXPECT_EQ(a.paired_seeds, 2);
  EXPECT_DOUBLE_EQ(a.final_val_loss.mean, 2.5);
  EXPECT_DOUBLE_EQ(a.delta_vs_baseline.mean, -0.5);
  EXPECT_EQ(a.trial_ids, std::vector<int64_t>({10, 11}));
  const RankedRow& base = r.rows[1];
  EXPECT_EQ(base.seeds_completed, 3);
  EXPECT_EQ(base.seeds_failed, 1);
  EXPECT_FALSE(base.diverged);
  // C has no completed trial: listed, counted, last.
  const RankedRow& c = r.rows[2];
  EXPECT_EQ(c.schedule, kC);
  EXPECT_EQ(c.seeds_completed, 0);
  EXPECT_EQ(c.seeds_failed, 1);
  EXPECT_EQ(c.final_val_loss.n, 0);
  EXPECT_EQ(c.min_val_loss, 0.0);
  EXPECT_EQ(c.verdict, Verdict::kNeedsSeeds);
}

// Simulated experiments: a flat baseline and 20 schedules, 5 seeds each,
// final losses N(3.36, 0.01) per trial; `planted` (if >= 0) is 0.1 better.
Ranking Simulate(std::mt19937_64& rng, int planted) {
  std::normal_distribution<double> loss(3.36, 0.01);
  std::vector<TrialOutcome> trials;
  int64_t id = 0;
  for (int64_t seed = 1; seed <= 5; ++seed) {
    trials.push_back(Trial(++id, "12x12", seed, loss(rng), {}));
  }
  for (int s = 0; s < 20; ++s) {
    for (int64_t seed = 1; seed <= 5; ++seed) {
      const double shift = s == planted ? -0.1 : 0.0;
      trials.push_back(
          Trial(++id, "s" + std::to_string(s), seed, loss(rng) + shift, {}));
    }
  }
  return RankSchedules(Shape(), "12x12", trials, PairedHolm());
}

TEST(RankSchedulesSimulationTest, NoTrueEffectRarelyYieldsABetterVerdict) {
  std::mt19937_64 rng(20261201);
  int any_better = 0;
  int any_naive_better = 0;  // unadjusted p < 0.05: what Holm prevents
  for (int experiment = 0; experiment < 1000; ++experiment) {
    const Ranking r = Simulate(rng, /*planted=*/-1);
    ASSERT_EQ(r.compared_schedules, 20);
    bool better = false;
    bool naive = false;
    for (const RankedRow& row : r.rows) {
      better |= row.verdict == Verdict::kBetter;
      naive |= row.p_value.has_value() && *row.p_value < 0.05 &&
               row.delta_vs_baseline.mean < 0;
    }
    any_better += better;
    any_naive_better += naive;
  }
  EXPECT_LE(any_better, 50);
  // Without the correction about 1 - 0.975^20 = 40% would claim a winner
  // (fewer here: the shared baseline correlates the tests).
  EXPECT_GT(any_naive_better, 150);
}

TEST(RankSchedulesSimulationTest, PlantedEffectIsFound) {
  std::mt19937_64 rng(7);
  int found = 0;
  for (int experiment = 0; experiment < 100; ++experiment) {
    const Ranking r = Simulate(rng, /*planted=*/3);
    ASSERT_FALSE(r.rows.empty());
    EXPECT_EQ(r.rows[0].schedule, "s3");
    found += r.rows[0].verdict == Verdict::kBetter;
  }
  EXPECT_GE(found, 95);
}

TEST(RankSchedulesTest, NoTrialsGiveAnEmptyRanking) {
  const Ranking r = RankSchedules(Shape(), "12x12", {}, PairedHolm());
  EXPECT_TRUE(r.rows.empty());
  EXPECT_FALSE(r.baseline.has_value());
  EXPECT_EQ(r.principle_effects.size(), 3u);
}

TEST(RankingTest, NonFiniteLossesAreCountedAndExcluded) {
  // The coordinator refuses non-finite losses; should one reach the ranking
  // anyway, it is counted as diverged and left out, never used.
  const double nan = std::nan("");
  std::vector<TrialOutcome> trials = Example();
  for (int i = 0; i < 40; ++i) {
    const std::string schedule =
        i % 2 ? "2x2,12x10" : "4x2,12x10";  // two NaN schedules, many seeds
    trials.push_back(Trial(100 + i, schedule, 1 + i % 3, nan, {nan}));
  }
  trials.push_back(
      Trial(200, kA, 3, std::numeric_limits<double>::infinity(), {}));
  const Ranking r = RankSchedules(Shape(), "12x12", trials);
  ASSERT_EQ(r.rows.size(), 6u);  // baseline, A, B, C and the two NaN ones
  EXPECT_EQ(r.verdicts.excluded_trials, 41);
  for (const RankedRow& row : r.rows) {
    EXPECT_FALSE(std::isnan(row.delta_vs_baseline.mean)) << row.schedule;
    if (row.schedule == "2x2,12x10" || row.schedule == "4x2,12x10") {
      EXPECT_EQ(row.verdict, Verdict::kNeedsSeeds);
      EXPECT_EQ(row.seeds_excluded, 20);
      EXPECT_EQ(row.seeds_diverged, 20);
      EXPECT_EQ(row.seeds_completed, 0);
    }
    if (row.schedule == kA) {
      EXPECT_EQ(row.seeds_excluded, 1);
      EXPECT_EQ(row.paired_seeds, 2);
    }
  }
}

// Known truth through the ranking: 120 schedules, 3 seeds.
KnownTruth Truth(TruthStructure structure, uint64_t seed) {
  KnownTruthSpec spec;
  spec.structure = structure;
  spec.curves = false;
  spec.effect = 0.03;
  spec.planted_fraction = 0.5;
  spec.seed = seed;
  return *GenerateKnownTruth(spec);
}

TEST(VerdictsTest, BorrowedVarianceFindsWhatThreeSeedsAloneCannot) {
  // The case: at 3 seeds each schedule's own variance has 2 dof, so
  // the per-schedule t under Holm finds almost nothing; borrowing it finds
  // the planted effects.
  const KnownTruth truth = Truth(TruthStructure::kPlanted, 7);
  const std::vector<TrialOutcome> outcomes = TruthOutcomes(truth);
  const Ranking paired =
      RankSchedules(truth.spec.space, truth.baseline, outcomes, PairedHolm());
  const Ranking moderated =
      RankSchedules(truth.spec.space, truth.baseline, outcomes);
  EXPECT_LT(paired.verdicts.better, 10);
  EXPECT_FALSE(moderated.verdicts.fell_back);
  EXPECT_TRUE(moderated.verdicts.prior.fitted);
  EXPECT_THAT(moderated.verdicts.method_description,
              ::testing::StartsWith("moderated t"));
  int planted = 0, found = 0, wrong = 0;
  for (const RankedRow& row : moderated.rows) {
    if (row.is_baseline) continue;
    const double delta = truth.true_delta.at(row.schedule);
    if (delta < 0) {
      ++planted;
      found += row.verdict == Verdict::kBetter;
    } else {
      wrong +=
          row.verdict == Verdict::kBetter || row.verdict == Verdict::kWorse;
    }
    if (row.schedule == truth.best) {
      EXPECT_EQ(row.verdict, Verdict::kBetter);
      EXPECT_TRUE(row.in_best_set);
    }
  }
  EXPECT_GE(found, 0.8 * planted) << found << " of " << planted;
  EXPECT_EQ(moderated.verdicts.worse, 0);
  EXPECT_LE(wrong, 2);
}

TEST(VerdictsTest, NullFixtureGivesNoVerdictAndALargeBestSet) {
  const KnownTruth truth = Truth(TruthStructure::kNull, 11);
  const Ranking r =
      RankSchedules(truth.spec.space, truth.baseline, TruthOutcomes(truth));
  EXPECT_EQ(r.verdicts.better + r.verdicts.worse, 0);
  EXPECT_EQ(r.verdicts.inconclusive, 119);
  EXPECT_GT(r.verdicts.best_set.size(), 100u);
}

TEST(VerdictsTest, AdjustedIntervalAgreesWithEveryVerdict) {
  for (VerdictFamily family :
       {VerdictFamily::kBenjaminiHochberg, VerdictFamily::kHolm}) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      KnownTruthSpec spec;
      spec.curves = false;
      // Effects large enough that every case decides some rows (at 0.015,
      // 2.5 noise sd, seed 3 decided none once the variances became
      // posterior means): the test is about the intervals, not power.
      spec.effect = 0.02;
      spec.planted_fraction = 0.3;
      spec.worse_fraction = 0.1;
      spec.variance_spread = 0.3;
      spec.seed = seed;
      const KnownTruth truth = *GenerateKnownTruth(spec);
      VerdictOptions options;
      options.family = family;
      const Ranking r = RankSchedules(spec.space, truth.baseline,
                                      TruthOutcomes(truth), options);
      int decided = 0;
      for (const RankedRow& row : r.rows) {
        if (row.is_baseline || row.verdict == Verdict::kNeedsSeeds) continue;
        ASSERT_TRUE(row.adjusted_delta.has_bounds) << row.schedule;
        // The adjusted interval is wider than the plain 95% one.
        EXPECT_GE(row.adjusted_delta.high - row.adjusted_delta.low,
                  row.delta_vs_baseline.high - row.delta_vs_baseline.low);
        switch (row.verdict) {
          case Verdict::kBetter:
            EXPECT_LT(row.adjusted_delta.high, 0.0) << row.schedule;
            EXPECT_LT(*row.adjusted_p_value, kVerdictAlpha);
            ++decided;
            break;
          case Verdict::kWorse:
            EXPECT_GT(row.adjusted_delta.low, 0.0) << row.schedule;
            ++decided;
            break;
          default:
            EXPECT_LE(row.adjusted_delta.low, 0.0) << row.schedule;
            EXPECT_GE(row.adjusted_delta.high, 0.0) << row.schedule;
            EXPECT_GE(*row.adjusted_p_value, kVerdictAlpha);
            EXPECT_GT(row.seeds_needed, row.paired_seeds) << row.schedule;
        }
      }
      EXPECT_GT(decided, 0) << VerdictFamilyName(family) << " seed " << seed;
    }
  }
}

TEST(VerdictsTest, BenjaminiHochbergFindsAtLeastWhatHolmFinds) {
  const KnownTruth truth = Truth(TruthStructure::kPlanted, 3);
  const std::vector<TrialOutcome> outcomes = TruthOutcomes(truth);
  VerdictOptions holm;
  holm.family = VerdictFamily::kHolm;
  const Ranking h =
      RankSchedules(truth.spec.space, truth.baseline, outcomes, holm);
  const Ranking b = RankSchedules(truth.spec.space, truth.baseline, outcomes);
  std::set<std::string> by_bh;
  for (const RankedRow& row : b.rows) {
    if (row.verdict == Verdict::kBetter) by_bh.insert(row.schedule);
  }
  for (const RankedRow& row : h.rows) {
    if (row.verdict == Verdict::kBetter) {
      EXPECT_TRUE(by_bh.count(row.schedule)) << row.schedule;
    }
  }
  EXPECT_GE(b.verdicts.better, h.verdicts.better);
}

TEST(VerdictsTest, FallsBackToPairedTAndSaysSoWithTooFewSchedules) {
  const Ranking r = RankSchedules(Shape(), "12x12", Example());
  EXPECT_TRUE(r.verdicts.fell_back);
  EXPECT_FALSE(r.verdicts.prior.fitted);
  EXPECT_THAT(r.verdicts.method_description, ::testing::HasSubstr("fallback"));
}

TEST(VerdictsTest, PlannedLooksSpendAlphaAndKeepEarlyDecisions) {
  const std::vector<int> looks = LooksForSeeds(3, 6);
  EXPECT_EQ(looks, std::vector<int>({3, 4, 5, 6}));
  double total = 0.0;
  for (size_t k = 0; k < looks.size(); ++k) {
    EXPECT_GT(SpentAlpha(0.05, looks, k), 0.0);
    total += SpentAlpha(0.05, looks, k);
  }
  EXPECT_NEAR(total, 0.05, 1e-12);

  // Everything on 3 seeds except the strongest planted schedule, which has 4:
  // the first look decides it on its first 3 seeds at alpha_1 < alpha.
  KnownTruthSpec spec;
  spec.curves = false;
  spec.seeds = 4;
  spec.effect = 0.05;
  spec.planted_fraction = 0.3;
  spec.seed = 5;
  const KnownTruth truth = *GenerateKnownTruth(spec);
  std::vector<TrialOutcome> outcomes;
  int64_t id = 1;
  for (const KnownTruthTrial& t : truth.trials) {
    if (t.seed <= 3 || t.schedule == truth.best || t.is_baseline) {
      outcomes.push_back(TruthOutcome(t, id++));
    }
  }
  VerdictOptions options;
  options.looks = looks;
  options.seed_sequence = {1, 2, 3, 4, 5, 6};
  const Ranking r =
      RankSchedules(spec.space, truth.baseline, outcomes, options);
  ASSERT_FALSE(r.verdicts.looks.empty());
  EXPECT_EQ(r.verdicts.looks[0].seeds, 3);
  EXPECT_NEAR(r.verdicts.looks[0].alpha, SpentAlpha(0.05, looks, 0), 1e-15);
  for (const RankedRow& row : r.rows) {
    if (row.schedule != truth.best) continue;
    EXPECT_EQ(row.verdict, Verdict::kBetter);
    EXPECT_EQ(row.decided_at_seeds, 3);
    EXPECT_EQ(row.paired_seeds, 4);
  }
}

TEST(VerdictsTest, BestSetHoldsTheClearWinnerAndDropsTheClearlyWorse) {
  KnownTruthSpec spec;
  spec.curves = false;
  spec.structure = TruthStructure::kSmooth;
  spec.effect = 0.06;
  spec.best_gap = 0.03;
  spec.seed = 9;
  const KnownTruth truth = *GenerateKnownTruth(spec);
  const Ranking r =
      RankSchedules(spec.space, truth.baseline, TruthOutcomes(truth));
  ASSERT_FALSE(r.verdicts.best_set.empty());
  EXPECT_EQ(r.verdicts.best_set.front(), truth.best);
  EXPECT_LT(r.verdicts.best_set.size(), 10u);
  EXPECT_GT(r.verdicts.best_set_critical, 0.0);
  for (const RankedRow& row : r.rows) {
    if (row.is_baseline) {
      EXPECT_FALSE(row.in_best_set);
    }
  }
}

}  // namespace
}  // namespace prism
