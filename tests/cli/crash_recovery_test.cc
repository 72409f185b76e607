// Crash recovery with real processes: a worker SIGKILLed mid-trial and a
// coordinator SIGKILLed mid-experiment. Either way the experiment completes
// and every curve holds each step exactly once.
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

namespace fs = std::filesystem;

bool HasFiles(const std::string& dir) {
  std::error_code error;
  for (const auto& entry : fs::recursive_directory_iterator(dir, error)) {
    if (entry.is_regular_file()) return true;
  }
  return false;
}

// WaitForStep polls until some trial of the experiment stored a step at or
// beyond `step`; returns that trial.
absl::StatusOr<v1::Trial> WaitForStep(LocalCluster& cluster, int64_t id,
                                      int64_t step, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(id);
    if (trials.ok()) {
      for (const v1::Trial& t : *trials) {
        if (t.last_step() >= step && t.state() == v1::TRIAL_RUNNING) return t;
      }
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no trial reached step ", step, "\n", cluster.Logs()));
}

void ExpectEveryStepOnce(LocalCluster& cluster, int64_t id, int64_t steps,
                         int64_t eval_every) {
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  for (const v1::Trial& t : *trials) {
    absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(t.id());
    ASSERT_TRUE(trial.ok()) << trial.status();
    EXPECT_EQ(trial->trial().state(), v1::TRIAL_COMPLETED) << t.schedule();
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_TRAIN), Range(1, steps))
        << "trial " << t.id() << " " << t.schedule();
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_VAL), Range(0, steps, eval_every))
        << "trial " << t.id() << " " << t.schedule();
  }
}

TEST(CrashRecoveryTest, KilledWorkersTrialResumesFromItsCheckpoint) {
  CoordinatorFlags flags;
  flags.lease_seconds = 3;
  flags.heartbeat_seconds = 1;
  LocalCluster cluster(flags);
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  // One trial (the explicit list holds only the baseline), long enough that
  // the first worker is killed well before the end.
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(R"pb(
    name: "worker crash"
    model { preset: "tiny" }
    budget {
      steps: 150
      batch_size: 4
      eval_every: 10
      eval_batches: 1
      log_every: 1
      checkpoint_every: 10
    }
    schedules: "4x6"
    seeds: 1
  )pb");
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<int> first = cluster.StartWorker();
  ASSERT_TRUE(first.ok());

  // After its first checkpoint (written only once the points before it were
  // stored), kill the worker without warning.
  absl::StatusOr<v1::Trial> running =
      WaitForStep(cluster, *id, 12, absl::Minutes(2));
  ASSERT_TRUE(running.ok()) << running.status();
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  while (!HasFiles(cluster.checkpoint_dir()) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(HasFiles(cluster.checkpoint_dir()));
  ASSERT_TRUE(cluster.worker(*first).Signal(SIGKILL).ok());
  ASSERT_TRUE(cluster.worker(*first).Wait(absl::Seconds(10)).ok());

  // Another worker takes the trial over once the lease expires.
  ASSERT_TRUE(cluster.StartWorker().ok());
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->counts().completed(), 1) << cluster.Logs();

  absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(running->id());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->trial().attempt(), 2);
  ASSERT_EQ(trial->trial().attempts_size(), 2);
  EXPECT_NE(trial->trial().attempts(1).worker_id(),
            trial->trial().attempts(0).worker_id());
  EXPECT_GT(trial->trial().attempts(1).resumed_from_step(), 0);
  EXPECT_EQ(trial->trial().attempts(1).outcome(), v1::TRIAL_COMPLETED);
  ExpectEveryStepOnce(cluster, *id, 150, 10);
}

TEST(CrashRecoveryTest, KilledCoordinatorRestartsAndLosesNoPoint) {
  LocalCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(R"pb(
    name: "coordinator crash"
    model { preset: "tiny" }
    budget {
      steps: 80
      batch_size: 4
      eval_every: 10
      eval_batches: 1
      log_every: 1
      checkpoint_every: 20
    }
    schedules: [ "4x6", "2x2,4x4", "1x3,4x3" ]
    seeds: 1
  )pb");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(cluster.StartWorker().ok());
  ASSERT_TRUE(cluster.StartWorker().ok());

  ASSERT_TRUE(WaitForStep(cluster, *id, 8, absl::Minutes(2)).ok());
  cluster.KillCoordinator();
  // The workers keep training and buffering while nobody answers.
  absl::SleepFor(absl::Seconds(3));
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();

  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Minutes(5));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->counts().completed(), 3) << cluster.Logs();
  ExpectEveryStepOnce(cluster, *id, 80, 10);
}

}  // namespace
}  // namespace prism::testing
