// Crash recovery with real processes: a worker SIGKILLed mid-trial and a
// coordinator SIGKILLed mid-experiment. Either way the experiment completes
// and every curve holds each step exactly once.
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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

// LoggedValues returns, for every line of the log at `path` whose message is
// `msg`, the integer value of `key`, in order.
std::vector<int64_t> LoggedValues(const std::string& path,
                                  const std::string& msg,
                                  const std::string& key) {
  std::vector<int64_t> values;
  for (absl::string_view line : absl::StrSplit(ReadFile(path), '\n')) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    bool matches = false;
    for (absl::string_view f : fields) matches |= f == "msg=" + msg;
    if (!matches) continue;
    for (absl::string_view f : fields) {
      int64_t value;
      if (absl::ConsumePrefix(&f, key + "=") && absl::SimpleAtoi(f, &value)) {
        values.push_back(value);
      }
    }
  }
  return values;
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
  EXPECT_EQ(trial->trial().attempts(1).outcome(), v1::TRIAL_COMPLETED);

  // The attempt history records where each worker really started: the
  // first from scratch, the second from the checkpoint it loaded (the last
  // one the killed worker wrote; the coordinator's last known step was
  // further on), as that worker logged it.
  const v1::TrialAttempt& first_attempt = trial->trial().attempts(0);
  const v1::TrialAttempt& resumed = trial->trial().attempts(1);
  ASSERT_TRUE(first_attempt.has_resumed_from_step());
  EXPECT_EQ(first_attempt.resumed_from_step(), 0);
  ASSERT_TRUE(resumed.has_resumed_from_step());
  const std::vector<int64_t> loaded = LoggedValues(
      cluster.dir() + "/worker-1.log", "train_start", "resumed_from_step");
  ASSERT_EQ(loaded.size(), 1u) << cluster.Logs();
  EXPECT_EQ(resumed.resumed_from_step(), loaded[0]);
  EXPECT_GT(resumed.resumed_from_step(), 0);
  EXPECT_EQ(resumed.resumed_from_step() % 10, 0);  // checkpoint_every
  const std::vector<int64_t> written =
      LoggedValues(cluster.dir() + "/worker-0.log", "checkpoint", "step");
  ASSERT_FALSE(written.empty()) << cluster.Logs();
  // The kill may land between a checkpoint's rename and its log line.
  EXPECT_GE(resumed.resumed_from_step(), written.back());
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
