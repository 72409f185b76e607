// `prism worker --replay`: a real coordinator and a replay worker run a whole
// experiment from a recorded fixture, an ASHA promotion resumes from its rung
// with the recorded points, and a trial the fixture lacks fails saying so.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"
#include "tests/cli/replay_fixture.h"

namespace prism::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The tiny preset's principled grid (4 schedules and the baseline 4x6),
// 40 steps, val every 10, train every 5.
const char kBudget[] = R"pb(
  model { preset: "tiny" }
  budget { steps: 40 eval_every: 10 log_every: 5 }
  principles: [ PRINCIPLE_SMOOTH, PRINCIPLE_BASELINE, PRINCIPLE_POW2 ]
)pb";
const std::vector<std::string> kSchedules = {"4x6", "1x2,4x4", "2x2,4x4",
                                             "1x3,4x3", "2x3,4x3"};
// The recorded best: clearly lowest at every step, so ASHA promotes it.
const char kBest[] = "2x3,4x3";

// ValLoss is the recorded val loss of (schedule index, seed) at `step`.
float ValLoss(int index, int64_t seed, int64_t step) {
  const double speed = kSchedules[index] == kBest ? 0.05 : 0.02 + 0.001 * index;
  return static_cast<float>(5.0 - speed * step + 0.001 * seed);
}

// Fixture writes a fixture for `seeds` of every schedule, with the config a
// worker builds for this budget.
std::string Fixture(const std::vector<int64_t>& seeds) {
  return TinyReplayFixture(kSchedules, seeds, ValLoss);
}

TEST(ReplayWorkerTest, AshaSearchPromotesAndResumesFromTheRecordedRung) {
  LocalCluster cluster;
  const std::string fixture = cluster.dir() + "/grid.replay";
  WriteFile(fixture, Fixture({1, 2}));
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.StartWorker({"--replay", fixture}).ok());
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(absl::StrCat(kBudget, R"pb(
    name: "replay asha"
    seeds: [ 1, 2 ]
    strategy: STRATEGY_ASHA
    asha { rungs: 10 }
  )pb"));
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Seconds(50));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE) << cluster.Logs();
  EXPECT_EQ(done->counts().total(), 10);
  EXPECT_EQ(done->counts().failed(), 0) << cluster.Logs();

  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  int best_seen = 0;
  for (const v1::Trial& t : *trials) {
    if (t.schedule() != kBest) continue;
    ++best_seen;
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED);
    absl::StatusOr<v1::GetTrialResponse> full = cluster.GetTrial(t.id());
    ASSERT_TRUE(full.ok()) << full.status();
    ASSERT_EQ(full->trial().attempts_size(), 2) << cluster.Logs();
    EXPECT_EQ(full->trial().attempts(0).outcome(), v1::TRIAL_STOPPED_AT_RUNG);
    EXPECT_EQ(full->trial().attempts(0).resumed_from_step(), 0);
    EXPECT_EQ(full->trial().attempts(1).resumed_from_step(), 10);
    EXPECT_EQ(full->trial().metrics().steps(), 40);
    EXPECT_NEAR(full->trial().metrics().final_val_loss(),
                ValLoss(4, t.seed(), 40), 1e-5);
    // The stored curve is the recorded one, without a gap at the rung.
    EXPECT_THAT(StepsOf(*full, v1::SPLIT_VAL), ElementsAre(0, 10, 20, 30, 40));
    EXPECT_THAT(StepsOf(*full, v1::SPLIT_TRAIN),
                ElementsAre(5, 10, 15, 20, 25, 30, 35, 40));
    for (const v1::LossPoint& p : full->points()) {
      if (p.split() != v1::SPLIT_VAL) continue;
      EXPECT_NEAR(p.loss(), ValLoss(4, t.seed(), p.step()), 1e-5) << p.step();
      EXPECT_NEAR(p.tokens_per_second(), 5000.0, 1e-6);
    }
  }
  EXPECT_EQ(best_seen, 2);
  EXPECT_THAT(ReadFile(cluster.dir() + "/worker-0.log"),
              HasSubstr("replay=" + fixture));
}

TEST(ReplayWorkerTest, ARunTheFixtureLacksFailsSayingSo) {
  LocalCluster cluster;
  const std::string fixture = cluster.dir() + "/seed1.replay";
  WriteFile(fixture, Fixture({1}));
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.StartWorker({"--replay", fixture}).ok());
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(absl::StrCat(kBudget, R"pb(
    name: "replay grid"
    seeds: [ 1, 2 ]
    max_attempts: 1
  )pb"));
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Seconds(50));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  EXPECT_EQ(done->counts().completed(), 5) << cluster.Logs();
  EXPECT_EQ(done->counts().failed(), 5) << cluster.Logs();
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  for (const v1::Trial& t : *trials) {
    if (t.seed() != 2) continue;
    absl::StatusOr<v1::GetTrialResponse> full = cluster.GetTrial(t.id());
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
    ASSERT_GE(full->trial().attempts_size(), 1);
    EXPECT_THAT(full->trial().attempts(0).message(),
                HasSubstr(absl::StrCat("no recorded run of schedule ",
                                       t.schedule(), " seed 2")));
  }
}

}  // namespace
}  // namespace prism::testing
