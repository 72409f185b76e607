// The worker's protocol logic against a scripted coordinator and trainer: it
// completes trials with every point stored once, buffers and re-sends through
// outages, drains before checkpoints, stops superseded attempts, and hands
// trials back on shutdown.
#include "worker/worker.h"

#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/fakes.h"

namespace prism::worker {
namespace {

using ::testing::ElementsAre;
using testing::FakeCoordinator;
using ::testing::HasSubstr;
using testing::MakeTask;
using testing::ScriptedTrainer;

std::vector<int64_t> Steps(int64_t from, int64_t to, int64_t every = 1) {
  std::vector<int64_t> steps;
  for (int64_t s = from; s <= to; s += every) steps.push_back(s);
  return steps;
}

WorkerOptions FastOptions() {
  WorkerOptions options;
  options.host = "test-host";
  options.resources.device = "cpu";
  options.resources.threads = 1;
  options.report_batch = 8;
  options.report_interval = absl::Milliseconds(2);
  options.heartbeat_interval = absl::Milliseconds(5);
  options.shutdown_grace = absl::Seconds(5);
  options.backoff.initial = absl::Microseconds(200);
  options.backoff.max = absl::Milliseconds(5);
  options.seed = 42;
  return options;
}

// WaitUntil polls `condition` until it holds (true) or 30 s passed (false),
// so a test waits on a state, never on a guessed sleep, and never forever.
bool WaitUntil(const std::function<bool()>& condition) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// OneTrialOptions: FastOptions for a worker that handles one trial and ends.
WorkerOptions OneTrialOptions() {
  WorkerOptions options = FastOptions();
  options.max_trials = 1;
  return options;
}

TEST(WorkerTest, CompletesTrialWithEveryPointStoredOnce) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  coordinator.QueueTask(MakeTask(/*trial_id=*/1, /*attempt=*/1, /*steps=*/40));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_TRAIN), Steps(1, 40));
  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_VAL), Steps(5, 40, 5));
  ASSERT_EQ(coordinator.completions().size(), 1u);
  const v1::CompleteRequest complete = coordinator.completions()[0];
  EXPECT_EQ(complete.attempt(), 1);
  EXPECT_EQ(complete.metrics().steps(), 40);
  EXPECT_EQ(complete.metrics().device(), "cpu");
  EXPECT_TRUE(coordinator.failures().empty());
  EXPECT_EQ(worker.stats().trials_completed, 1);
  EXPECT_EQ(worker.stats().points_acknowledged, 48);
}

TEST(WorkerTest, ANonFinitePointIsNeverSentAndTheTrialIsReportedDiverged) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  trainer.nan_val_at_step = 20;
  coordinator.QueueTask(MakeTask(/*trial_id=*/1, /*attempt=*/1, /*steps=*/40));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  // The stored curve stops before the bad point: a prefix, with no gap.
  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_VAL), Steps(5, 15, 5));
  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_TRAIN), Steps(1, 20));
  ASSERT_EQ(coordinator.completions().size(), 1u);
  const v1::CompleteRequest complete = coordinator.completions()[0];
  EXPECT_TRUE(complete.metrics().diverged());
  EXPECT_EQ(complete.metrics().diverged_step(), 20);
  for (const v1::LossPoint& p : complete.points()) {
    EXPECT_TRUE(std::isfinite(p.loss())) << p.step();
  }
}

TEST(WorkerTest, PassesTaskBudgetAndResourcesToTrainer) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  coordinator.QueueTask(MakeTask(3, 2, 12, /*checkpoint_every=*/4));
  WorkerOptions options = OneTrialOptions();
  options.resources.threads = 3;
  options.resources.checkpoint_root = "/ckpt";
  options.keep_checkpoints = true;
  Worker worker(options, &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  ASSERT_EQ(trainer.configs().size(), 1u);
  const model::TrainConfig config = trainer.configs()[0];
  EXPECT_EQ(config.steps, 12);
  EXPECT_EQ(config.checkpoint_every, 4);
  EXPECT_EQ(config.threads, 3);
  EXPECT_EQ(config.checkpoint_dir, "/ckpt/trial-3");
  EXPECT_TRUE(config.resume);
  EXPECT_EQ(config.seed, 7u);
  EXPECT_EQ(config.schedule.ToString(), "4x6");
}

// TempCheckpointRoot returns a fresh directory holding one checkpoint file
// for checkpoint key "trial-1".
std::string TempCheckpointRoot() {
  char pattern[] = "/tmp/prism_worker_test_XXXXXX";
  const std::string root = mkdtemp(pattern);
  std::filesystem::create_directories(root + "/trial-1");
  std::ofstream(root + "/trial-1/checkpoint.pt") << "weights";
  return root;
}

TEST(WorkerTest, FreshTrialRemovesLeftoverCheckpointBeforeTraining) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  const std::string root = TempCheckpointRoot();
  bool leftover_seen = true;
  trainer.on_step = [&](int64_t step) {
    if (step == 1) leftover_seen = std::filesystem::exists(root + "/trial-1");
  };
  coordinator.QueueTask(MakeTask(1, 1, 5));  // resume_step 0: nothing stored
  WorkerOptions options = OneTrialOptions();
  options.resources.checkpoint_root = root;
  Worker worker(options, &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_FALSE(leftover_seen);
  std::filesystem::remove_all(root);
}

TEST(WorkerTest, ResumedTrialKeepsItsCheckpoint) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  const std::string root = TempCheckpointRoot();
  bool checkpoint_seen = false;
  trainer.start_step = 3;
  trainer.on_step = [&](int64_t step) {
    if (step == 4) {
      checkpoint_seen =
          std::filesystem::exists(root + "/trial-1/checkpoint.pt");
    }
  };
  v1::TrialTask task = MakeTask(1, 2, 6);
  task.set_resume_step(3);
  coordinator.QueueTask(task);
  WorkerOptions options = OneTrialOptions();
  options.resources.checkpoint_root = root;
  Worker worker(options, &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_TRUE(checkpoint_seen);
  // Completed: the trial's checkpoints are no longer needed.
  EXPECT_FALSE(std::filesystem::exists(root + "/trial-1"));
  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_TRAIN), Steps(4, 6));
  std::filesystem::remove_all(root);
}

TEST(WorkerTest, StartSaysTheStepTheTrainerResumedFromBeforeAnyReport) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  // The coordinator offered step 9, but the trainer's checkpoint is at 5.
  trainer.start_step = 5;
  v1::TrialTask task = MakeTask(1, 2, 30);
  task.set_resume_step(9);
  coordinator.QueueTask(task);
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  ASSERT_EQ(coordinator.starts().size(), 1u);
  EXPECT_EQ(coordinator.starts()[0].trial_id(), 1);
  EXPECT_EQ(coordinator.starts()[0].attempt(), 2);
  EXPECT_EQ(coordinator.starts()[0].resumed_from_step(), 5);
  EXPECT_EQ(coordinator.reports_before_start(), 0);
  EXPECT_EQ(coordinator.completions().size(), 1u);
}

TEST(WorkerTest, ACoordinatorWithoutStartStillGetsTheTrial) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  coordinator.SetStartStatus(absl::UnimplementedError("no Start here"));
  coordinator.QueueTask(MakeTask(1, 1, 20));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_TRUE(coordinator.starts().empty());
  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_TRAIN), Steps(1, 20));
  EXPECT_EQ(coordinator.completions().size(), 1u);
}

TEST(WorkerTest, BuffersThroughReportOutageAndResendsEverything) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  trainer.on_step = [&](int64_t step) {
    if (step == 5) coordinator.FailNextReports(25);
  };
  coordinator.QueueTask(MakeTask(1, 1, 60));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_TRAIN), Steps(1, 60));
  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_VAL), Steps(5, 60, 5));
  EXPECT_EQ(worker.stats().report_retries, 25);
  EXPECT_EQ(coordinator.completions().size(), 1u);
}

TEST(WorkerTest, SurvivesFullOutageOfEveryCall) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  trainer.on_step = [&](int64_t step) {
    if (step == 10) coordinator.FailNext(40);
  };
  coordinator.QueueTask(MakeTask(1, 1, 50));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_TRAIN), Steps(1, 50));
  EXPECT_EQ(coordinator.completions().size(), 1u);
}

TEST(WorkerTest, FullBufferPausesTrainerInsteadOfDroppingPoints) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  trainer.on_step = [&](int64_t step) {
    if (step == 2) coordinator.FailNextReports(30);
  };
  coordinator.QueueTask(MakeTask(1, 1, 40));
  WorkerOptions options = OneTrialOptions();
  options.buffer_capacity = 3;
  options.report_batch = 2;
  Worker worker(options, &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_TRAIN), Steps(1, 40));
  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_VAL), Steps(5, 40, 5));
}

TEST(WorkerTest, CheckpointWaitsUntilEveryEarlierPointIsStored) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  std::vector<bool> complete_at_checkpoint;
  trainer.on_step = [&](int64_t step) {
    // An outage right before each checkpoint step.
    if (step % 10 == 9) coordinator.FailNextReports(5);
  };
  trainer.after_before_checkpoint = [&](int64_t step) {
    complete_at_checkpoint.push_back(
        coordinator.StoredSteps(1, v1::SPLIT_TRAIN) == Steps(1, step) &&
        coordinator.StoredSteps(1, v1::SPLIT_VAL) == Steps(5, step, 5));
  };
  coordinator.QueueTask(MakeTask(1, 1, 30, /*checkpoint_every=*/10));
  WorkerOptions options = OneTrialOptions();
  options.report_interval = absl::Seconds(10);  // only batches and drains
  options.report_batch = 1000;
  Worker worker(options, &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_THAT(complete_at_checkpoint, ElementsAre(true, true, true));
}

TEST(WorkerTest, RefusedReportStopsTrainingAndLeasesAgain) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  trainer.step_time = absl::Microseconds(200);
  trainer.on_step = [&](int64_t step) {
    if (step == 20) coordinator.Supersede(1);
  };
  coordinator.QueueTask(MakeTask(1, 1, 100000));
  coordinator.QueueTask(MakeTask(2, 1, 10));
  WorkerOptions options = FastOptions();
  options.max_trials = 2;
  Worker worker(options, &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_LT(trainer.last_step(), 100000);
  EXPECT_EQ(worker.stats().trials_superseded, 1);
  EXPECT_EQ(worker.stats().trials_completed, 1);
  ASSERT_EQ(coordinator.completions().size(), 1u);
  EXPECT_EQ(coordinator.completions()[0].trial_id(), 2);
  EXPECT_TRUE(coordinator.failures().empty());
}

TEST(WorkerTest, HeartbeatStopEndsTheAttempt) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  trainer.step_time = absl::Microseconds(200);
  trainer.on_step = [&](int64_t step) {
    if (step == 10) coordinator.StopOnHeartbeat(1);
  };
  coordinator.QueueTask(MakeTask(1, 1, 1000000));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_LT(trainer.last_step(), 1000000);
  EXPECT_EQ(worker.stats().trials_superseded, 1);
  EXPECT_TRUE(coordinator.completions().empty());
  EXPECT_GT(coordinator.heartbeats(), 0);
}

TEST(WorkerTest, TransientTrainerErrorFailsRetryably) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  trainer.fail_at_step = 7;
  trainer.fail_status = absl::InternalError("CUDA out of memory");
  coordinator.QueueTask(MakeTask(1, 1, 20));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  ASSERT_EQ(coordinator.failures().size(), 1u);
  EXPECT_TRUE(coordinator.failures()[0].retryable());
  // A real failure: it counts toward the trial's max attempts.
  EXPECT_FALSE(coordinator.failures()[0].released());
  EXPECT_THAT(coordinator.failures()[0].message(),
              HasSubstr("CUDA out of memory"));
  // Points before the failure are kept: a retry resumes after them.
  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_TRAIN), Steps(1, 7));
  EXPECT_EQ(worker.stats().trials_failed, 1);
}

TEST(WorkerTest, BadDataFailsWithoutRetry) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  trainer.fail_at_step = 1;
  trainer.fail_status = absl::NotFoundError("shard /data/x.bin not found");
  coordinator.QueueTask(MakeTask(1, 1, 20));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  ASSERT_EQ(coordinator.failures().size(), 1u);
  EXPECT_FALSE(coordinator.failures()[0].retryable());
}

TEST(WorkerTest, TaskWithScheduleOfWrongDepthFailsWithoutTraining) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  v1::TrialTask task = MakeTask(1, 1, 20);
  task.mutable_trial()->set_schedule("4x5");
  coordinator.QueueTask(task);
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_TRUE(trainer.configs().empty());
  ASSERT_EQ(coordinator.failures().size(), 1u);
  EXPECT_FALSE(coordinator.failures()[0].retryable());
  EXPECT_THAT(coordinator.failures()[0].message(), HasSubstr("layers"));
}

TEST(WorkerTest, SupersededAttemptSkipsCheckpointsAheadOfTheStoredCurve) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  // From step 7 on, every report of this attempt is refused: the points
  // after it are never stored, so no checkpoint past them may be written.
  trainer.on_step = [&](int64_t step) {
    if (step == 7) coordinator.Supersede(1);
  };
  coordinator.QueueTask(MakeTask(1, 1, 1000, /*checkpoint_every=*/5));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_THAT(trainer.written_checkpoints(), ElementsAre(5));
  EXPECT_FALSE(trainer.skipped_checkpoints().empty());
  const std::vector<int64_t> stored =
      coordinator.StoredSteps(1, v1::SPLIT_TRAIN);
  ASSERT_FALSE(stored.empty());
  EXPECT_GE(stored.back(), 5);
  EXPECT_EQ(worker.stats().trials_superseded, 1);
}

TEST(WorkerTest, ResumeIsCappedAtTheCoordinatorsStoredStep) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  v1::TrialTask capped = MakeTask(1, 2, 20, /*checkpoint_every=*/5);
  capped.set_stored_step(12);
  coordinator.QueueTask(capped);
  coordinator.QueueTask(MakeTask(2, 1, 20, /*checkpoint_every=*/5));
  WorkerOptions options = FastOptions();
  options.max_trials = 2;
  Worker worker(options, &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  ASSERT_EQ(trainer.configs().size(), 2u);
  EXPECT_EQ(trainer.configs()[0].max_resume_step, 12);
  // A coordinator that does not say: no cap.
  EXPECT_EQ(trainer.configs()[1].max_resume_step, -1);
}

TEST(WorkerTest, FullCheckpointDiskFailsTheTrialForOthersAndStopsLeasing) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  trainer.fail_at_step = 4;
  trainer.fail_status = absl::ResourceExhaustedError(
      "checkpoint dir /ckpt/trial-1: No space left on device");
  coordinator.QueueTask(MakeTask(1, 1, 20));
  coordinator.QueueTask(MakeTask(2, 1, 20));
  Worker worker(FastOptions(), &coordinator, &trainer);

  const absl::Status status = worker.Run();

  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("No space left on device"));
  ASSERT_EQ(coordinator.failures().size(), 1u);
  EXPECT_TRUE(coordinator.failures()[0].retryable());
  EXPECT_THAT(coordinator.failures()[0].message(), HasSubstr("/ckpt/trial-1"));
  // The second trial was left for a worker that can do it.
  EXPECT_EQ(trainer.configs().size(), 1u);
  EXPECT_EQ(coordinator.deregistered().size(), 1u);
}

TEST(WorkerTest, ShutdownCheckpointsFlushesAndHandsTrialBack) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  Worker* worker_ptr = nullptr;
  int64_t checkpointed = 0;
  trainer.on_step = [&](int64_t step) {
    if (step == 15) worker_ptr->Shutdown();
  };
  trainer.after_before_checkpoint = [&](int64_t step) { checkpointed = step; };
  coordinator.QueueTask(MakeTask(1, 1, 1000));
  Worker worker(FastOptions(), &coordinator, &trainer);
  worker_ptr = &worker;

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_EQ(checkpointed, 15);
  EXPECT_EQ(coordinator.StoredSteps(1, v1::SPLIT_TRAIN), Steps(1, 15));
  ASSERT_EQ(coordinator.failures().size(), 1u);
  EXPECT_TRUE(coordinator.failures()[0].released());
  EXPECT_TRUE(coordinator.failures()[0].retryable());
  EXPECT_THAT(coordinator.failures()[0].message(), HasSubstr("shut down"));
  EXPECT_EQ(worker.stats().trials_interrupted, 1);
}

TEST(WorkerTest, RetriesLeaseUntilCoordinatorIsBack) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  coordinator.QueueTask(MakeTask(1, 1, 5));
  coordinator.FailNext(12);
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_EQ(coordinator.completions().size(), 1u);
}

TEST(WorkerTest, ReRegistersWhenCoordinatorForgetsTheWorker) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  coordinator.ForgetWorkerOnce();
  coordinator.QueueTask(MakeTask(1, 1, 5));
  Worker worker(OneTrialOptions(), &coordinator, &trainer);

  ASSERT_TRUE(worker.Run().ok());

  EXPECT_EQ(coordinator.registrations(), 2);
  EXPECT_EQ(coordinator.completions().size(), 1u);
}

TEST(WorkerTest, RefusedTokenEndsRunWithTheCoordinatorsError) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  coordinator.SetRegisterStatus(absl::UnauthenticatedError("bad token"));
  Worker worker(FastOptions(), &coordinator, &trainer);

  const absl::Status status = worker.Run();

  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
}

TEST(WorkerTest, IdleExitReturnsWhenQueueStaysEmpty) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  WorkerOptions options = FastOptions();
  options.idle_exit = absl::Milliseconds(20);
  Worker worker(options, &coordinator, &trainer);

  EXPECT_TRUE(worker.Run().ok());
  EXPECT_TRUE(trainer.configs().empty());
  EXPECT_THAT(coordinator.deregistered(), ElementsAre("w1"));
}

TEST(WorkerTest, ShutdownWhileIdleReturnsPromptly) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  Worker worker(FastOptions(), &coordinator, &trainer);
  std::thread stopper([&] {
    // Idle: registered, found no work, and said so in a heartbeat.
    EXPECT_TRUE(WaitUntil([&] { return coordinator.heartbeats() > 0; }));
    worker.Shutdown();
  });

  EXPECT_TRUE(worker.Run().ok());
  stopper.join();
  EXPECT_TRUE(worker.shutting_down());
  EXPECT_THAT(coordinator.deregistered(), ElementsAre("w1"));
}

TEST(WorkerTest, RefusedWorkerDoesNotSayGoodbye) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  coordinator.SetRegisterStatus(absl::PermissionDeniedError("not a worker"));
  Worker worker(FastOptions(), &coordinator, &trainer);

  EXPECT_FALSE(worker.Run().ok());
  EXPECT_TRUE(coordinator.deregistered().empty());
}

TEST(WorkerTest, ShutdownDuringAnOutageStillEndsRun) {
  FakeCoordinator coordinator;
  ScriptedTrainer trainer;
  Worker worker(FastOptions(), &coordinator, &trainer);
  std::thread outage([&] {
    // Once registered, every later call (the goodbye included) fails.
    EXPECT_TRUE(WaitUntil([&] { return coordinator.registrations() > 0; }));
    coordinator.FailNext(1000000);
    // Shut down in the middle of the outage: calls are being refused.
    EXPECT_TRUE(WaitUntil([&] { return coordinator.refused_calls() >= 3; }));
    worker.Shutdown();
  });

  EXPECT_TRUE(worker.Run().ok());
  outage.join();
  EXPECT_TRUE(coordinator.deregistered().empty());
}

}  // namespace
}  // namespace prism::worker
