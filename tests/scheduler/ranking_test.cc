#include "scheduler/ranking.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace prism {
namespace {

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

TEST(RankSchedulesTest, RanksByMeanFinalLossWithTextTieBreak) {
  const Ranking r = RankSchedules(Shape(), "12x12", Example());
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

TEST(RankSchedulesTest, PairsDeltasPerSeedAndMeasuresConvergence) {
  const Ranking r = RankSchedules(Shape(), "12x12", Example());
  const RankedRow& a = r.rows[0];
  EXPECT_DOUBLE_EQ(a.final_val_loss.mean, 3.375);
  EXPECT_EQ(a.final_val_loss.n, 2);
  EXPECT_EQ(a.delta_vs_baseline.n, 2);
  EXPECT_DOUBLE_EQ(a.delta_vs_baseline.mean, -0.25);
  EXPECT_DOUBLE_EQ(a.delta_vs_baseline.low, -0.25);  // equal deltas
  EXPECT_DOUBLE_EQ(a.min_val_loss, 3.25);
  EXPECT_DOUBLE_EQ(a.steps_to_baseline, 250.0);  // (200 + 300) / 2
  EXPECT_NEAR(a.convergence_speedup, (2.0 + 4.0 / 3.0) / 2, 1e-12);
  EXPECT_NEAR(a.tokens_per_second_ratio, 1000.0 / 1050.0, 1e-12);
  EXPECT_EQ(a.attention_distance, std::vector<double>({1.0, 3.0}));
  EXPECT_EQ(a.attention_distance_shift, std::vector<double>({-1.0, 0.0}));
  EXPECT_TRUE(a.principles.smooth);
  EXPECT_TRUE(a.principles.baseline);
  EXPECT_TRUE(a.principles.pow2);

  const RankedRow& c = r.rows[1];
  EXPECT_DOUBLE_EQ(c.delta_vs_baseline.mean, -0.25);  // -0.125 and -0.375
  // sd = 0.125 * sqrt(2); half width = t(1) * sd / sqrt(2) = 12.706 * 0.125.
  EXPECT_NEAR(c.delta_vs_baseline.high - c.delta_vs_baseline.mean,
              12.7062 * 0.125, 1e-3);
  EXPECT_DOUBLE_EQ(c.steps_to_baseline, 400.0);
  EXPECT_DOUBLE_EQ(c.convergence_speedup, 1.0);
  EXPECT_TRUE(c.attention_distance.empty());
  EXPECT_TRUE(c.attention_distance_shift.empty());

  const RankedRow& base = r.rows[2];
  EXPECT_DOUBLE_EQ(base.delta_vs_baseline.mean, 0.0);
  EXPECT_EQ(base.delta_vs_baseline.n, 2);
  EXPECT_DOUBLE_EQ(base.steps_to_baseline, 400.0);
  EXPECT_DOUBLE_EQ(base.convergence_speedup, 1.0);
  EXPECT_DOUBLE_EQ(base.tokens_per_second, 1050.0);
  EXPECT_DOUBLE_EQ(base.tokens_per_second_ratio, 1.0);

  const RankedRow& b = r.rows[3];
  EXPECT_DOUBLE_EQ(b.final_val_loss.mean, 3.75);
  EXPECT_EQ(b.final_val_loss.n, 2);
  EXPECT_EQ(b.delta_vs_baseline.n, 1);  // seed 3 has no baseline
  EXPECT_DOUBLE_EQ(b.delta_vs_baseline.mean, 0.375);
  EXPECT_EQ(b.steps_to_baseline, 0.0);
  EXPECT_EQ(b.convergence_speedup, 0.0);
  EXPECT_FALSE(b.principles.smooth);
  EXPECT_FALSE(b.principles.pow2);
}

TEST(RankSchedulesTest, PrincipleEffectsCompareSatisfyingAndViolating) {
  const Ranking r = RankSchedules(Shape(), "12x12", Example());
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
}

TEST(RankSchedulesTest, InputOrderDoesNotChangeTheResult) {
  std::vector<TrialOutcome> trials = Example();
  const Ranking forward = RankSchedules(Shape(), "12x12", trials);
  std::reverse(trials.begin(), trials.end());
  const Ranking backward = RankSchedules(Shape(), "12x12", trials);
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
  const Ranking r = RankSchedules(Shape(), "12x12", trials);
  // A's seed-1 delta still uses trial 1's 3.5.
  EXPECT_DOUBLE_EQ(r.rows[0].delta_vs_baseline.mean, -0.25);
}

TEST(RankSchedulesTest, EmptyBaselineTextFallsBackToTheFlag) {
  const Ranking r = RankSchedules(Shape(), "", Example());
  ASSERT_TRUE(r.baseline.has_value());
  EXPECT_EQ(r.baseline->schedule, "12x12");
}

TEST(RankSchedulesTest, WithoutABaselineThereAreNoDeltasOrRatios) {
  std::vector<TrialOutcome> trials;
  for (const TrialOutcome& t : Example()) {
    if (t.schedule != "12x12") trials.push_back(t);
  }
  const Ranking r = RankSchedules(Shape(), "12x12", trials);
  EXPECT_FALSE(r.baseline.has_value());
  ASSERT_EQ(r.rows.size(), 3u);
  for (const RankedRow& row : r.rows) {
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
  const Ranking r = RankSchedules(Shape(), "12x12", trials);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].schedule, "12x12");
  EXPECT_DOUBLE_EQ(r.rows[1].steps_to_baseline, 300.0);
  EXPECT_DOUBLE_EQ(r.rows[1].convergence_speedup, 1.0);
  EXPECT_EQ(r.rows[0].schedule, kA);
  EXPECT_DOUBLE_EQ(r.rows[0].steps_to_baseline, 200.0);
  EXPECT_DOUBLE_EQ(r.rows[0].convergence_speedup, 1.5);
}

TEST(RankSchedulesTest, NoTrialsGiveAnEmptyRanking) {
  const Ranking r = RankSchedules(Shape(), "12x12", {});
  EXPECT_TRUE(r.rows.empty());
  EXPECT_FALSE(r.baseline.has_value());
  EXPECT_EQ(r.principle_effects.size(), 3u);
}

}  // namespace
}  // namespace prism
