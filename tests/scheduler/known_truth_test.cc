#include "scheduler/simulate/known_truth.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

KnownTruthSpec Spec(TruthStructure structure) {
  KnownTruthSpec spec;
  spec.structure = structure;
  spec.seed = 4;
  return spec;
}

TEST(KnownTruthTest, EveryScheduleOnEverySeedWithTheBaseline) {
  const KnownTruth t = *GenerateKnownTruth(Spec(TruthStructure::kPlanted));
  EXPECT_EQ(t.baseline, "8x8");
  EXPECT_EQ(t.schedules.size(), 120u);
  EXPECT_EQ(t.trials.size(), 360u);
  EXPECT_EQ(t.true_delta.at("8x8"), 0.0);
  for (const KnownTruthTrial& trial : t.trials) {
    ASSERT_EQ(trial.val_steps.size(), 21u);  // 0, 10, ..., 200
    EXPECT_EQ(trial.val_steps.back(), 200);
    EXPECT_EQ(trial.is_baseline, trial.schedule == "8x8");
    // A learning curve: far lower at the end than at the start.
    EXPECT_LT(trial.val_losses.back(), trial.val_losses.front() - 1.0);
  }
}

TEST(KnownTruthTest, SameSpecSameTruthOtherSeedOtherTruth) {
  const KnownTruth a = *GenerateKnownTruth(Spec(TruthStructure::kPlanted));
  const KnownTruth b = *GenerateKnownTruth(Spec(TruthStructure::kPlanted));
  EXPECT_EQ(a.trials[17].val_losses, b.trials[17].val_losses);
  EXPECT_EQ(a.best, b.best);
  KnownTruthSpec other = Spec(TruthStructure::kPlanted);
  other.seed = 5;
  EXPECT_NE(GenerateKnownTruth(other)->trials[17].val_losses,
            a.trials[17].val_losses);
}

// Racing's further seeds come from a stream of their own: the first seeds'
// trials are those of the truth without them, to the last bit.
TEST(KnownTruthTest, ExtraSeedsLeaveTheFirstSeedsAsTheyWere) {
  KnownTruthSpec spec;
  spec.structure = TruthStructure::kSmooth;
  spec.diverged_trials = 3;
  const absl::StatusOr<KnownTruth> plain = GenerateKnownTruth(spec);
  spec.extra_seeds = 9;
  const absl::StatusOr<KnownTruth> more = GenerateKnownTruth(spec);
  ASSERT_TRUE(plain.ok() && more.ok());
  ASSERT_EQ(more->trials.size(), plain->trials.size() / 3 * 12);
  for (size_t i = 0; i < plain->trials.size(); ++i) {
    EXPECT_EQ(more->trials[i].schedule, plain->trials[i].schedule);
    EXPECT_EQ(more->trials[i].seed, plain->trials[i].seed);
    EXPECT_EQ(more->trials[i].val_losses, plain->trials[i].val_losses);
  }
  std::set<int64_t> seeds;
  for (const KnownTruthTrial& t : more->trials) {
    seeds.insert(t.seed);
    if (t.seed > 3) EXPECT_FALSE(t.diverged);
  }
  EXPECT_EQ(seeds.size(), 12u);
  EXPECT_EQ(*seeds.rbegin(), 12);
  spec.extra_seeds = -1;
  EXPECT_FALSE(GenerateKnownTruth(spec).ok());
}

TEST(KnownTruthTest, PlantedEffectsHaveTheirSizesAndOneBest) {
  KnownTruthSpec spec = Spec(TruthStructure::kPlanted);
  spec.planted_fraction = 0.25;
  spec.worse_fraction = 0.1;
  const KnownTruth t = *GenerateKnownTruth(spec);
  int better = 0, worse = 0, null = 0;
  for (const auto& [schedule, delta] : t.true_delta) {
    if (schedule == t.baseline) continue;
    if (delta < 0) ++better;
    if (delta > 0) ++worse;
    if (delta == 0) ++null;
  }
  EXPECT_EQ(better, 30);  // round(0.25 * 119)
  EXPECT_EQ(worse, 12);
  EXPECT_EQ(null, 77);
  EXPECT_DOUBLE_EQ(t.true_delta.at(t.best), -spec.effect - spec.best_gap);
}

TEST(KnownTruthTest, NullHasNoEffectAndTheBaselineIsTheBest) {
  const KnownTruth t = *GenerateKnownTruth(Spec(TruthStructure::kNull));
  for (const auto& [schedule, delta] : t.true_delta) EXPECT_EQ(delta, 0.0);
  EXPECT_EQ(t.best, t.baseline);
}

TEST(KnownTruthTest, FinalNoiseHasTheStatedSdAroundTheTruth) {
  KnownTruthSpec spec = Spec(TruthStructure::kNull);
  spec.seeds = 40;
  spec.curves = false;
  spec.seed_offset_sd = 0.0;
  const KnownTruth t = *GenerateKnownTruth(spec);
  double sum = 0.0, squares = 0.0;
  for (const KnownTruthTrial& trial : t.trials) {
    sum += trial.val_losses.back();
    squares += trial.val_losses.back() * trial.val_losses.back();
  }
  const double n = static_cast<double>(t.trials.size());
  const double sd = std::sqrt(squares / n - (sum / n) * (sum / n));
  EXPECT_NEAR(sd, spec.noise_sd, 0.05 * spec.noise_sd);
}

TEST(KnownTruthTest, IsolatedBestIsAnUnremarkableSchedule) {
  KnownTruthSpec spec = Spec(TruthStructure::kIsolatedBest);
  const KnownTruth t = *GenerateKnownTruth(spec);
  KnownTruthSpec smooth_spec = spec;
  smooth_spec.structure = TruthStructure::kSmooth;
  const KnownTruth smooth = *GenerateKnownTruth(smooth_spec);
  // Under the smooth effect alone the isolated best sits mid-table.
  std::vector<double> deltas;
  for (const auto& [s, d] : smooth.true_delta) {
    if (s != smooth.baseline) deltas.push_back(d);
  }
  std::sort(deltas.begin(), deltas.end());
  const double at = smooth.true_delta.at(t.best);
  const auto rank =
      std::lower_bound(deltas.begin(), deltas.end(), at) - deltas.begin();
  EXPECT_GT(rank, 40);
  EXPECT_LT(rank, 80);
  // And leads every other schedule by best_gap.
  for (const auto& [s, d] : t.true_delta) {
    if (s != t.best) {
      EXPECT_GE(d - t.true_delta.at(t.best), spec.best_gap - 1e-12) << s;
    }
  }
}

TEST(KnownTruthTest, FadingTrapHidesTheBestEarlyAndIsGoneLate) {
  KnownTruthSpec spec = Spec(TruthStructure::kFadingTrap);
  spec.noise_sd = 0.0;
  spec.seed_offset_sd = 0.0;
  const KnownTruth t = *GenerateKnownTruth(spec);
  auto rank_at = [&t](int64_t step) {
    double best_loss = 0.0;
    std::vector<double> losses;
    for (const KnownTruthTrial& trial : t.trials) {
      if (trial.seed != 1) continue;
      const double loss = ValLossAt(trial, step);
      losses.push_back(loss);
      if (trial.schedule == t.best) best_loss = loss;
    }
    return std::count_if(losses.begin(), losses.end(),
                         [best_loss](double l) { return l < best_loss; });
  };
  EXPECT_GT(rank_at(20), 30);  // worse than the trapped third early
  EXPECT_EQ(rank_at(200), 0);  // the best at the end
}

TEST(KnownTruthTest, EffectGrowsAlongItsExponentAndTheTrapFadesWhereTold) {
  KnownTruthSpec spec = Spec(TruthStructure::kFadingTrap);
  spec.noise_sd = 0.0;
  spec.seed_offset_sd = 0.0;
  spec.effect_growth = 2.0;
  spec.trap_fade = 0.6;
  const KnownTruth t = *GenerateKnownTruth(spec);
  std::map<std::string, const KnownTruthTrial*> on_seed_1;
  for (const KnownTruthTrial& trial : t.trials) {
    if (trial.seed == 1) on_seed_1[trial.schedule] = &trial;
  }
  auto gap_at = [&](const std::string& s, int64_t step) {
    return ValLossAt(*on_seed_1.at(s), step) -
           ValLossAt(*on_seed_1.at(t.baseline), step);
  };
  // Past the fade only the effect is left: a quarter of it at half the
  // budget (growth 2), all of it at the end.
  const double best = t.true_delta.at(t.best);
  EXPECT_NEAR(gap_at(t.best, 200), best, 1e-12);
  EXPECT_NEAR(gap_at(t.best, 160), best * 0.64, 1e-12);
  // Before 60% of the budget the trap still holds the best back: at 100
  // steps it is (1 - 100 / 120)^2 of trap_strength worse.
  EXPECT_NEAR(gap_at(t.best, 100),
              best * 0.25 + spec.trap_strength * std::pow(1.0 / 6.0, 2.0),
              1e-12);
  EXPECT_GT(gap_at(t.best, 60), 0.0);
  spec.effect_growth = 0.0;
  EXPECT_NE(GenerateKnownTruth(spec).status().message().find("effect_growth"),
            std::string::npos);
}

TEST(KnownTruthTest, DivergedTrialsEndAtTheirDivergence) {
  KnownTruthSpec spec = Spec(TruthStructure::kPlanted);
  spec.diverged_trials = 3;
  const KnownTruth t = *GenerateKnownTruth(spec);
  int diverged = 0;
  for (const KnownTruthTrial& trial : t.trials) {
    if (!trial.diverged) continue;
    ++diverged;
    EXPECT_FALSE(trial.is_baseline);
    EXPECT_EQ(trial.val_steps.back(), trial.diverged_step);
    EXPECT_LT(trial.diverged_step, spec.steps);
    EXPECT_EQ(TruthOutcome(trial, 1).state, OutcomeState::kDiverged);
  }
  EXPECT_EQ(diverged, 3);
}

TEST(KnownTruthTest, RefusesBadSpecsNamingTheField) {
  KnownTruthSpec spec;
  spec.seeds = 0;
  EXPECT_EQ(GenerateKnownTruth(spec).status().code(),
            absl::StatusCode::kInvalidArgument);
  spec = KnownTruthSpec();
  spec.noise_sd = -1;
  EXPECT_NE(GenerateKnownTruth(spec).status().message().find("noise_sd"),
            std::string::npos);
  spec = KnownTruthSpec();
  spec.planted_fraction = 0.8;
  spec.worse_fraction = 0.4;
  EXPECT_FALSE(GenerateKnownTruth(spec).ok());
  EXPECT_EQ(ParseTruthStructure("fading-trap").value(),
            TruthStructure::kFadingTrap);
  EXPECT_FALSE(ParseTruthStructure("nope").ok());
}

KnownTruth SmoothFirst() {
  KnownTruthSpec spec = Spec(TruthStructure::kSmooth);
  spec.curves = false;
  return *GenerateKnownTruth(spec);
}

TransferTruthSpec Wider(double correlation) {
  TransferTruthSpec spec;
  spec.second.space = {128, 8, 16, {}, kDefaultMinRun, kDefaultMaxRun};
  spec.second.seeds = 4;
  spec.second.curves = false;
  spec.second.seed = 77;
  spec.correlation = correlation;
  return spec;
}

TEST(SecondSizeTest, FullTransferCarriesEveryDeltaOver) {
  const KnownTruth first = SmoothFirst();
  const KnownTruth second = *GenerateSecondSize(first, Wider(1.0));
  EXPECT_EQ(second.baseline, "16x8");
  EXPECT_EQ(second.schedules.front(), "16x8");
  EXPECT_EQ(second.transferred_from.at("16x8"), "8x8");
  // Twice as wide, same depth: every ratio is offered, so all 120 transfer.
  ASSERT_EQ(second.schedules.size(), 120u);
  EXPECT_EQ(second.trials.size(), 120u * 4);
  const SpaceSpec space = second.spec.space;
  for (const std::string& s : second.schedules) {
    ASSERT_TRUE(CheckHardConstraints(space, *ParseSchedule(s)).ok()) << s;
    EXPECT_EQ(second.true_delta.at(s),
              first.true_delta.at(second.transferred_from.at(s)))
        << s;
  }
  EXPECT_EQ(second.transferred_from.at("4x4,16x4"), "2x4,8x4");
  EXPECT_EQ(second.true_spearman, 1.0);
  EXPECT_EQ(second.true_kendall, 1.0);
  EXPECT_EQ(second.transferred_from.at(second.best), first.best);
}

TEST(SecondSizeTest, ChosenCorrelationIsHitWithinTheTolerance) {
  const KnownTruth first = SmoothFirst();
  for (double rho : {-1.0, -0.3, 0.0, 0.5, 0.9}) {
    const KnownTruth second = *GenerateSecondSize(first, Wider(rho));
    EXPECT_NEAR(second.true_spearman, rho, kTransferTolerance) << rho;
    // A rearrangement: the same deltas, other schedules.
    std::multiset<double> a, b;
    for (const auto& [s, d] : second.true_delta) {
      b.insert(d);
      a.insert(first.true_delta.at(second.transferred_from.at(s)));
    }
    EXPECT_EQ(a, b) << rho;
  }
  EXPECT_EQ(GenerateSecondSize(first, Wider(-1.0))->true_spearman, -1.0);
  const KnownTruth again = *GenerateSecondSize(first, Wider(0.0));
  EXPECT_EQ(again.true_delta,
            GenerateSecondSize(first, Wider(0.0))->true_delta);
}

TEST(SecondSizeTest, AShallowerSizeDropsCollidingImagesAndBadSpecsAreRefused) {
  const KnownTruth first = SmoothFirst();
  TransferTruthSpec shallower = Wider(1.0);
  shallower.second.space = {16, 4, 4, {}, kDefaultMinRun, kDefaultMaxRun};
  const KnownTruth shallow = *GenerateSecondSize(first, shallower);
  // 4 layers of up to 4 heads hold fewer schedules than the first's 120.
  EXPECT_LT(shallow.schedules.size(), 120u);
  EXPECT_EQ(shallow.schedules.size(), shallow.transferred_from.size());
  EXPECT_EQ(GenerateSecondSize(first, Wider(1.5)).status().code(),
            absl::StatusCode::kInvalidArgument);
  TransferTruthSpec tiny = Wider(1.0);
  tiny.second.space = {4, 2, 2, {}, kDefaultMinRun, kDefaultMaxRun};
  EXPECT_THAT(std::string(GenerateSecondSize(first, tiny).status().message()),
              ::testing::HasSubstr("transfer to the second size"));
}

}  // namespace
}  // namespace prism
