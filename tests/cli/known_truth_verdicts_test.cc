// The verdicts end to end on known truth: a generated experiment of 120
// schedules x 3 seeds (a fifth planted 5 trial-noise sd better, one 2 sd
// more) replayed through a real coordinator and two `prism worker --replay`
// workers; the ranking `prism results` reads over RPC must find the planted
// effects, call nothing worse, put the true best in the best-set, and name
// its method. scheduler/simulate/calibration.h measures the same through the
// ranking code alone, over hundreds of experiments.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/simulate/known_truth.h"
#include "tests/cli/cluster.h"
#include "tests/cli/known_truth_cluster.h"

namespace prism::testing {
namespace {

TEST(KnownTruthVerdictsTest, ReplayedExperimentGetsTheRightVerdicts) {
  KnownTruthSpec spec;
  spec.structure = TruthStructure::kPlanted;
  spec.steps = 40;
  spec.eval_every = 20;
  spec.effect = 5 * spec.noise_sd;
  spec.planted_fraction = 0.2;
  spec.best_gap = 2 * spec.noise_sd;
  spec.seed = 31;
  absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(spec);
  ASSERT_TRUE(truth.ok()) << truth.status();
  LocalCluster cluster;
  const absl::StatusOr<std::string> spec_text =
      StartKnownTruthCluster(*truth, cluster);
  ASSERT_TRUE(spec_text.ok()) << spec_text.status();
  absl::StatusOr<int64_t> id =
      cluster.SubmitSpec(absl::StrCat(*spec_text, "name: \"known truth\"\n"));
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Seconds(240));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  ASSERT_EQ(done->counts().completed(), 360) << cluster.Logs();

  v1::RankResponse rank;
  ASSERT_TRUE(RankOf(cluster, *id, &rank).ok());
  const v1::VerdictReport& v = rank.verdicts();
  EXPECT_EQ(v.method(), v1::VERDICT_METHOD_MODERATED_T);
  EXPECT_EQ(v.family(), v1::VERDICT_FAMILY_BH);
  EXPECT_FALSE(v.fell_back());
  EXPECT_THAT(v.method_description(), ::testing::StartsWith("moderated t"));
  int planted = 0, found = 0, false_found = 0;
  for (const v1::RankedSchedule& r : rank.schedules()) {
    if (r.is_baseline()) continue;
    const double delta = truth->true_delta.at(r.schedule());
    EXPECT_NE(r.verdict(), v1::VERDICT_WORSE) << r.schedule();
    if (delta < 0) {
      ++planted;
      found += r.verdict() == v1::VERDICT_BETTER;
    } else {
      false_found += r.verdict() == v1::VERDICT_BETTER;
    }
    if (r.schedule() == truth->best) {
      EXPECT_EQ(r.verdict(), v1::VERDICT_BETTER);
      EXPECT_TRUE(r.in_best_set());
      EXPECT_LT(r.adjusted_delta().high(), 0.0);
    }
  }
  EXPECT_EQ(planted, 24);
  EXPECT_GE(found, 0.8 * planted) << found << " of " << planted;
  EXPECT_LE(false_found, 2);
  EXPECT_THAT(v.best_set(), ::testing::Contains(truth->best));
  EXPECT_LT(v.best_set_size(), 40);

  // What a user reads: the words and the best-set, in 100 columns.
  const CommandResult results = cluster.Run(
      {"results", "--experiment", absl::StrCat(*id), "--limit", "5"});
  EXPECT_EQ(results.status, 0) << results.err;
  EXPECT_THAT(results.out, ::testing::HasSubstr("better"));
  EXPECT_THAT(results.out, ::testing::HasSubstr("best-set (95% confidence"));
}

}  // namespace
}  // namespace prism::testing
