// An ASHA search end to end on known truth (issue #27): a generated
// experiment with an isolated best (a bonus no smooth trend predicts)
// replayed through a real coordinator and two `prism worker --replay`
// workers under the default synchronous rule. The search must train the
// true best to the end, promote no more than each rung's quota, and report
// its cost against the grid's; `prism status` prints the cost and the rungs.
// Then the default plan on three seeds (screened on one seed, staged), and
// the same with screening runs that diverge before the rung.
// bench/search_bench measures the rates over many generated experiments.
#include <signal.h>

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/simulate/known_truth.h"
#include "tests/cli/cluster.h"
#include "tests/cli/known_truth_cluster.h"

namespace prism::testing {
namespace {

TEST(KnownTruthSearchTest, SynchronousAshaFindsTheIsolatedBestAtAFraction) {
  absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(IsolatedBestFixture());
  ASSERT_TRUE(truth.ok()) << truth.status();
  LocalCluster cluster;
  absl::StatusOr<SearchRun> run = RunKnownTruthSearch(
      *truth, cluster,
      "name: \"known truth asha\"\nstrategy: STRATEGY_ASHA\n"
      "asha { rungs: 40 rungs: 80 }\nsample_seed: 9\n");
  ASSERT_TRUE(run.ok()) << run.status();
  const v1::Experiment& done = run->experiment;
  const v1::RankResponse& rank = run->rank;
  EXPECT_EQ(done.state(), v1::EXPERIMENT_DONE) << cluster.Logs();
  EXPECT_EQ(done.spec().asha().mode(), v1::ASHA_MODE_SYNCHRONOUS);

  EXPECT_EQ(ChosenSchedule(rank), truth->best);
  const int n = static_cast<int>(truth->schedules.size()) - 1;
  ASSERT_EQ(rank.asha_rungs_size(), 2);
  EXPECT_EQ(rank.asha_rungs(0).members(), n);
  EXPECT_EQ(rank.asha_rungs(0).promoted(), n / 3);
  EXPECT_EQ(rank.asha_rungs(1).members(), n / 3);
  EXPECT_EQ(rank.asha_rungs(1).promoted(), n / 9);
  for (const v1::AshaRung& r : rank.asha_rungs()) {
    EXPECT_TRUE(r.complete());
    EXPECT_LE(r.promoted(), (r.members() + 2) / 3);
  }
  // The verdicts' family is every screened schedule, not the n / 9
  // finalists: they were chosen among the n for looking good at the rungs.
  ASSERT_EQ(rank.verdicts().looks_size(), 1);
  EXPECT_EQ(rank.verdicts().looks(0).tested(), n);
  const double fraction =
      static_cast<double>(rank.experiment().steps_trained()) /
      rank.experiment().grid_steps();
  EXPECT_GT(fraction, 0.3);
  EXPECT_LT(fraction, 0.5);

  const CommandResult status = cluster.Run({"status", absl::StrCat(run->id)});
  EXPECT_EQ(status.status, 0) << status.err;
  EXPECT_THAT(status.out, ::testing::HasSubstr("steps trained: "));
  EXPECT_THAT(status.out, ::testing::HasSubstr("queue order: shuffled by "
                                               "sample_seed 9"));
  EXPECT_THAT(status.out,
              ::testing::HasSubstr(absl::StrCat("rung 40: promoted ", n / 3,
                                                " / quota ", n / 3)));
}

// The default plan on three seeds: every schedule screens on one seed to 70%
// of the budget, the best fifth go on to the end on every seed.
TEST(KnownTruthSearchTest, DefaultStagedAshaScreensOnOneSeedAndFindsTheBest) {
  absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(IsolatedBestFixture());
  ASSERT_TRUE(truth.ok()) << truth.status();
  LocalCluster cluster;
  absl::StatusOr<SearchRun> run = RunKnownTruthSearch(
      *truth, cluster,
      "name: \"known truth staged\"\nstrategy: STRATEGY_ASHA\n"
      "sample_seed: 9\n");
  ASSERT_TRUE(run.ok()) << run.status();
  const v1::Experiment& done = run->experiment;
  const v1::RankResponse& rank = run->rank;
  EXPECT_EQ(done.state(), v1::EXPERIMENT_DONE) << cluster.Logs();
  // 70% of 120 steps is 84: the eval grid's 80.
  EXPECT_THAT(done.spec().asha().rungs(), ::testing::ElementsAre(80));
  EXPECT_EQ(done.spec().asha().eta(), 5);
  EXPECT_EQ(done.spec().asha().screen_seeds(), 1);

  EXPECT_EQ(ChosenSchedule(rank), truth->best);
  const int n = static_cast<int>(truth->schedules.size()) - 1;
  const int finalists = n / 5;
  ASSERT_EQ(rank.asha_rungs_size(), 1);
  EXPECT_EQ(rank.asha_rungs(0).members(), n);
  EXPECT_EQ(rank.asha_rungs(0).promoted(), finalists);
  EXPECT_TRUE(rank.asha_rungs(0).complete());
  // Trials: the baseline's 3, one per schedule screened, and two more seeds
  // for each finalist; the rest wait at the rung on their one seed.
  EXPECT_EQ(done.counts().total(), 3 + n + 2 * finalists);
  EXPECT_EQ(done.counts().stopped_at_rung(), n - finalists);
  // Every finalist was ranked on all three seeds.
  int ranked = 0;
  for (const v1::RankedSchedule& row : rank.schedules()) {
    if (row.is_baseline()) continue;
    EXPECT_EQ(row.seeds_completed(), 3) << row.schedule();
    ++ranked;
  }
  EXPECT_EQ(ranked, finalists);
  // 1/3 x 80/120 + 23/119 x (1 - 80/360), and the baseline's full budget.
  const double fraction =
      static_cast<double>(done.steps_trained()) / done.grid_steps();
  EXPECT_GT(fraction, 0.3);
  EXPECT_LT(fraction, 0.4);
  const CommandResult status = cluster.Run({"status", absl::StrCat(run->id)});
  EXPECT_EQ(status.status, 0) << status.err;
  EXPECT_THAT(status.out,
              ::testing::HasSubstr(absl::StrCat("rung 80: promoted ", finalists,
                                                " / quota ", finalists)));
  EXPECT_THAT(status.out, ::testing::HasSubstr(absl::StrCat(
                              "screened on 1 of 3 seeds, ", 2 * finalists,
                              " trials added on the rest")))
      << status.out;
  EXPECT_EQ(done.seeds_added(), 2 * finalists);
  // The summary above the trials table (the decision note lists every
  // promotion: wrapped) fits 100 columns.
  for (absl::string_view line : absl::StrSplit(status.out, '\n')) {
    if (line.empty()) break;
    EXPECT_LE(line.size(), 100u) << line;
  }
}

// Schedules whose screening run diverges before the rung are out of it: the
// synchronous rung completes without them (it waited for them for ever
// before Dec 4 2026 and the search ended with no finalist).
TEST(KnownTruthSearchTest, StagedAshaCompletesItsRungWhenScreeningRunsDiverge) {
  KnownTruthSpec spec = IsolatedBestFixture();
  spec.diverged_trials = 30;  // half-way, at step 60: before the rung at 80
  absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(spec);
  ASSERT_TRUE(truth.ok()) << truth.status();
  int screen_diverged = 0;
  bool best_diverged = false;
  for (const KnownTruthTrial& t : truth->trials) {
    if (!t.diverged) continue;
    screen_diverged += t.seed == 1 ? 1 : 0;
    best_diverged |= t.schedule == truth->best;
  }
  ASSERT_GT(screen_diverged, 0);
  LocalCluster cluster;
  absl::StatusOr<SearchRun> run = RunKnownTruthSearch(
      *truth, cluster,
      "name: \"staged, diverging\"\nstrategy: STRATEGY_ASHA\n"
      "sample_seed: 9\n");
  ASSERT_TRUE(run.ok()) << run.status();
  const v1::Experiment& done = run->experiment;
  const v1::RankResponse& rank = run->rank;
  EXPECT_EQ(done.state(), v1::EXPERIMENT_DONE) << cluster.Logs();

  const int n = static_cast<int>(truth->schedules.size()) - 1;
  ASSERT_EQ(rank.asha_rungs_size(), 1);
  EXPECT_TRUE(rank.asha_rungs(0).complete());
  EXPECT_EQ(rank.asha_rungs(0).members(), n);
  EXPECT_EQ(rank.asha_rungs(0).schedules_size(), n - screen_diverged);
  EXPECT_EQ(rank.asha_rungs(0).promoted(), n / 5);
  EXPECT_THAT(done.seeds_note(), ::testing::HasSubstr(absl::StrCat(
                                     screen_diverged, " ended before it")));
  if (!best_diverged) EXPECT_EQ(ChosenSchedule(rank), truth->best);
}

// A row of the fault matrix (docs/operations.md): the coordinator SIGKILLed
// right after it stored a racing round, before its next decision. Started
// again, the race goes on from the stored trials: no seed is lost or added
// twice, and the search ends with racing's word. Near ties keep several
// contenders, so the default race (after the staged ASHA default on three
// seeds) adds seeds; the truth holds the seeds it may add.
TEST(KnownTruthSearchTest, CoordinatorKilledBetweenRacingRoundsLosesNoSeed) {
  KnownTruthSpec spec = IsolatedBestFixture();
  spec.structure = TruthStructure::kNearTies;
  spec.extra_seeds = 9;  // up to the default maximum of 12
  absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(spec);
  ASSERT_TRUE(truth.ok()) << truth.status();
  LocalCluster cluster;
  absl::StatusOr<std::string> spec_text = StartKnownTruthCluster(
      *truth, cluster, 2, {"PRISM_FAILPOINTS=racing.added"});
  ASSERT_TRUE(spec_text.ok()) << spec_text.status();
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(
      absl::StrCat(*spec_text,
                   "name: \"racing kill\"\nstrategy: STRATEGY_ASHA\n"
                   "sample_seed: 9\n"));
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<int> exited = cluster.coordinator().Wait(absl::Minutes(4));
  ASSERT_TRUE(exited.ok()) << cluster.Logs();
  ASSERT_EQ(*exited, 128 + SIGKILL) << cluster.Logs();
  absl::StatusOr<std::vector<v1::Trial>> before = [&] {
    // Read the database the dead coordinator left, through a new one.
    EXPECT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
    return cluster.ListTrials(*id);
  }();
  ASSERT_TRUE(before.ok()) << before.status();
  int racing_before = 0;
  for (const v1::Trial& t : *before) racing_before += t.seed() > 3;
  EXPECT_GT(racing_before, 0);  // the round the coordinator died after

  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Seconds(240));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE);
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok());
  std::set<std::pair<std::string, int64_t>> seen;
  std::map<std::string, std::set<int64_t>> seeds;
  int racing = 0;
  for (const v1::Trial& t : *trials) {
    EXPECT_TRUE(seen.insert({t.schedule(), t.seed()}).second)
        << t.schedule() << " seed " << t.seed() << " twice";
    seeds[t.schedule()].insert(t.seed());
    racing += t.seed() > 3;
    EXPECT_LE(t.seed(), 12);
  }
  EXPECT_GE(racing, racing_before);
  // The baseline has every seed racing gave a schedule.
  for (const auto& [schedule, list] : seeds) {
    for (int64_t s : list) {
      EXPECT_TRUE(seeds[truth->baseline].count(s)) << schedule << " " << s;
    }
  }
  v1::RankResponse rank;
  ASSERT_TRUE(RankOf(cluster, *id, &rank).ok());
  ASSERT_TRUE(rank.has_race());
  EXPECT_EQ(rank.race().seeds_added(), racing);
  EXPECT_NE(rank.race().state(), "racing");
  EXPECT_NE(rank.race().state(), "waiting");
  EXPECT_THAT(done->seeds_note(), ::testing::HasSubstr(rank.race().note()));
  const CommandResult results =
      cluster.Run({"results", "--experiment", absl::StrCat(*id)});
  EXPECT_EQ(results.status, 0) << results.err;
  EXPECT_THAT(results.out, ::testing::HasSubstr("racing: "));
  const CommandResult status = cluster.Run({"status", absl::StrCat(*id)});
  EXPECT_EQ(status.status, 0) << status.err;
  EXPECT_THAT(status.out,
              ::testing::HasSubstr("racing: at most 12 seeds each, 4 "
                                   "contenders a round, budget 10% of the "
                                   "grid's steps; "));
  std::cout << results.out << status.out;
}

}  // namespace
}  // namespace prism::testing
