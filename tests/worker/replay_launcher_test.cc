#include "worker/replay_launcher.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace prism::worker {
namespace {

using ::prism::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A 40-step recipe with val every 10 and train every 5.
model::TrainConfig Recipe(const std::string& schedule, uint64_t seed) {
  model::TrainConfig config;
  config.shape.d_model = 64;
  config.shape.layers = 4;
  config.shape.base_heads = 4;
  config.shape.context = 32;
  config.shape.vocab_size = 256;
  config.schedule = *ParseSchedule(schedule);
  config.seed = seed;
  config.steps = 40;
  config.eval_every = 10;
  config.log_every = 5;
  return config;
}

// Resumable is `config` checkpointing into `dir` and resuming from it,
// stopped at `stop_at_step` (0: the whole budget).
model::TrainConfig Resumable(model::TrainConfig config, const std::string& dir,
                             int64_t stop_at_step) {
  config.checkpoint_dir = dir;
  config.resume = true;
  config.stop_at_step = stop_at_step;
  return config;
}

// RecordedRun is what the trainer would have returned for a 40-step run:
// val at 0, 10, ..., 40 and train at 5, 10, ..., 40, losses falling by
// `slope` per step from 5.
model::TrainResult RecordedRun(double slope) {
  model::TrainResult r;
  for (int64_t step = 0; step <= 40; step += 5) {
    if (step > 0) {
      r.curve.push_back({model::CurveSplit::kTrain, step,
                         static_cast<float>(5.0 - slope * step + 0.1), 1e-3f,
                         1000.0 + step, 0.1 * step});
    }
    if (step % 10 == 0) {
      r.curve.push_back({model::CurveSplit::kVal, step,
                         static_cast<float>(5.0 - slope * step), 1e-3f,
                         1000.0 + step, 0.1 * step});
    }
  }
  r.steps = 40;
  r.final_val_loss = 5.0 - slope * 40;
  r.tokens_per_second = 1234.5;
  r.parameters = 4242;
  r.flops_per_token = 99;
  r.device = "cpu (1 thread)";
  r.attention_kernel = "fused";
  r.isa = "avx2";
  return r;
}

std::string FixtureText() {
  const model::TrainConfig a = Recipe("1x1,4x3", 1);
  const model::TrainConfig b = Recipe("4x4", 1);
  return FormatReplayHeader(a) + FormatReplayTrial(a, RecordedRun(0.05)) +
         FormatReplayTrial(b, RecordedRun(0.02));
}

std::unique_ptr<TrainerLauncher> Launcher() {
  absl::StatusOr<ReplayFixture> fixture = ParseReplayFixture(FixtureText());
  EXPECT_TRUE(fixture.ok()) << fixture.status();
  return NewReplayTrainerLauncher(*std::move(fixture));
}

// Recorder collects what a worker's observer would see.
class Recorder : public model::TrainObserver {
 public:
  void OnStart(const model::TrainConfig&, int64_t start_step) override {
    start = start_step;
  }
  void OnPoint(const model::CurvePoint& point) override {
    (point.split == model::CurveSplit::kVal ? val : train)
        .push_back(point.step);
  }
  bool BeforeCheckpoint(int64_t step) override {
    checkpoint_asks.push_back(step);
    return allow_checkpoint;
  }
  bool ShouldStop() override { return ++polls > stop_after_polls; }

  int64_t start = -1;
  std::vector<int64_t> train, val, checkpoint_asks;
  bool allow_checkpoint = true;
  int polls = 0;
  int stop_after_polls = 1 << 30;
};

TEST(ReplayLauncherTest, FormattedFixtureParsesBackEveryRunAndPoint) {
  absl::StatusOr<ReplayFixture> fixture = ParseReplayFixture(FixtureText());
  ASSERT_TRUE(fixture.ok()) << fixture.status();
  EXPECT_EQ(fixture->config.at("steps"), "40");
  EXPECT_EQ(fixture->config.at("d_model"), "64");
  ASSERT_EQ(fixture->trials.size(), 2u);
  const ReplayTrial& a = fixture->trials.at({"1x1,4x3", 1});
  EXPECT_EQ(a.curve.size(), RecordedRun(0.05).curve.size());
  EXPECT_FLOAT_EQ(a.curve.back().loss, 3.0f);
  EXPECT_DOUBLE_EQ(a.metrics.tokens_per_second, 1234.5);
  EXPECT_EQ(a.metrics.parameters, 4242);
  EXPECT_EQ(a.metrics.attention_kernel, "fused");
  EXPECT_EQ(a.metrics.device, "cpu (1 thread)");
}

TEST(ReplayLauncherTest, ServesTheWholeRecordedCurveAndItsMetrics) {
  std::unique_ptr<TrainerLauncher> launcher = Launcher();
  Recorder observer;
  absl::StatusOr<model::TrainResult> result =
      launcher->Train(Recipe("1x1,4x3", 1), &observer);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(observer.start, 0);
  EXPECT_THAT(observer.val, ElementsAre(0, 10, 20, 30, 40));
  EXPECT_THAT(observer.train, ElementsAre(5, 10, 15, 20, 25, 30, 35, 40));
  EXPECT_EQ(result->steps, 40);
  EXPECT_NEAR(result->final_val_loss, 3.0, 1e-6);
  EXPECT_NEAR(result->min_val_loss, 3.0, 1e-6);
  EXPECT_NEAR(result->final_train_loss, 3.1, 1e-6);
  EXPECT_DOUBLE_EQ(result->tokens_per_second, 1234.5);
  EXPECT_FALSE(result->stopped);
  EXPECT_FALSE(result->diverged);
}

TEST(ReplayLauncherTest, RungStopCheckpointsAndTheNextAttemptResumesThere) {
  TempDir dir;
  std::unique_ptr<TrainerLauncher> launcher = Launcher();
  model::TrainConfig config =
      Resumable(Recipe("1x1,4x3", 1), dir.File("trial-7"), 20);
  Recorder first;
  absl::StatusOr<model::TrainResult> rung = launcher->Train(config, &first);
  ASSERT_TRUE(rung.ok()) << rung.status();
  EXPECT_THAT(first.val, ElementsAre(0, 10, 20));
  EXPECT_THAT(first.checkpoint_asks, ElementsAre(20));
  EXPECT_EQ(rung->steps, 20);
  EXPECT_NEAR(rung->final_val_loss, 4.0, 1e-6);

  config.stop_at_step = 0;  // promoted: train to the whole budget
  Recorder second;
  absl::StatusOr<model::TrainResult> rest = launcher->Train(config, &second);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(second.start, 20);
  EXPECT_EQ(rest->resumed_from_step, 20);
  EXPECT_THAT(second.val, ElementsAre(30, 40));
  EXPECT_THAT(second.train, ElementsAre(25, 30, 35, 40));
  EXPECT_EQ(rest->steps, 40);
  EXPECT_NEAR(rest->final_val_loss, 3.0, 1e-6);
  // Whole-trial numbers, as the trainer reports after a resume.
  EXPECT_NEAR(rest->min_val_loss, 3.0, 1e-6);
}

TEST(ReplayLauncherTest, VetoedCheckpointLeavesNothingToResume) {
  TempDir dir;
  std::unique_ptr<TrainerLauncher> launcher = Launcher();
  model::TrainConfig config =
      Resumable(Recipe("1x1,4x3", 1), dir.File("trial-7"), 20);
  Recorder first;
  first.allow_checkpoint = false;
  ASSERT_TRUE(launcher->Train(config, &first).ok());
  config.stop_at_step = 0;
  Recorder second;
  ASSERT_TRUE(launcher->Train(config, &second).ok());
  EXPECT_EQ(second.start, 0);
  EXPECT_THAT(second.val, ElementsAre(0, 10, 20, 30, 40));
}

TEST(ReplayLauncherTest, CheckpointPastTheStoredCurveIsDiscarded) {
  TempDir dir;
  std::unique_ptr<TrainerLauncher> launcher = Launcher();
  model::TrainConfig config =
      Resumable(Recipe("1x1,4x3", 1), dir.File("trial-7"), 30);
  Recorder first;
  ASSERT_TRUE(launcher->Train(config, &first).ok());
  config.stop_at_step = 0;
  config.max_resume_step = 20;  // the coordinator stored only up to 20
  Recorder second;
  absl::StatusOr<model::TrainResult> rest = launcher->Train(config, &second);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(second.start, 0);
  EXPECT_EQ(rest->discarded_checkpoint_step, 30);
  EXPECT_THAT(second.val, ElementsAre(0, 10, 20, 30, 40));
}

TEST(ReplayLauncherTest, ShouldStopEndsStoppedWithACheckpointAtTheStep) {
  TempDir dir;
  std::unique_ptr<TrainerLauncher> launcher = Launcher();
  model::TrainConfig config =
      Resumable(Recipe("4x4", 1), dir.File("trial-8"), 0);
  Recorder first;
  first.stop_after_polls = 4;  // points at 0 (val), 5, 10 (train), 10 (val)
  absl::StatusOr<model::TrainResult> stopped = launcher->Train(config, &first);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_TRUE(stopped->stopped);
  EXPECT_EQ(stopped->steps, 15);
  EXPECT_THAT(first.checkpoint_asks, ElementsAre(15));
  Recorder second;
  ASSERT_TRUE(launcher->Train(config, &second).ok());
  EXPECT_EQ(second.start, 15);
  EXPECT_THAT(second.train, ElementsAre(20, 25, 30, 35, 40));
}

TEST(ReplayLauncherTest, UnknownRunIsNotFoundAndOtherRecipeIsRefused) {
  std::unique_ptr<TrainerLauncher> launcher = Launcher();
  Recorder observer;
  absl::StatusOr<model::TrainResult> unknown =
      launcher->Train(Recipe("1x1,4x3", 9), &observer);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("no recorded run of schedule 1x1,4x3 seed 9"));

  model::TrainConfig longer = Recipe("1x1,4x3", 1);
  longer.steps = 80;
  absl::StatusOr<model::TrainResult> refused =
      launcher->Train(longer, &observer);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("recorded with steps=40 but this trial has steps=80"));
  // The learning-rate floor and the weight decay shape the curve too.
  model::TrainConfig floor = Recipe("1x1,4x3", 1);
  floor.min_lr_ratio = 0.5;
  EXPECT_THAT(launcher->Train(floor, &observer).status().message(),
              HasSubstr("recorded with min_lr_ratio=0.1 but this trial has "
                        "min_lr_ratio=0.5"));
  model::TrainConfig decay = Recipe("1x1,4x3", 1);
  decay.weight_decay = 0;
  EXPECT_THAT(launcher->Train(decay, &observer).status().message(),
              HasSubstr("recorded with weight_decay=0.1 but this trial has "
                        "weight_decay=0"));
  EXPECT_EQ(observer.start, -1);  // nothing started
}

TEST(ReplayLauncherTest, DivergedRecordingDivergesAtItsStep) {
  model::TrainConfig config = Recipe("4x4", 2);
  model::TrainResult run = RecordedRun(0.02);
  while (run.curve.back().step > 20) run.curve.pop_back();
  run.steps = 20;
  run.diverged = true;
  run.diverged_step = 21;
  absl::StatusOr<ReplayFixture> fixture = ParseReplayFixture(
      FormatReplayHeader(config) + FormatReplayTrial(config, run));
  ASSERT_TRUE(fixture.ok()) << fixture.status();
  std::unique_ptr<TrainerLauncher> launcher =
      NewReplayTrainerLauncher(*std::move(fixture));
  Recorder observer;
  absl::StatusOr<model::TrainResult> result =
      launcher->Train(config, &observer);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->diverged);
  EXPECT_EQ(result->diverged_step, 21);
  EXPECT_EQ(result->steps, 20);
  EXPECT_THAT(observer.val, ElementsAre(0, 10, 20));

  // A rung before the divergence is reached normally.
  config.stop_at_step = 10;
  absl::StatusOr<model::TrainResult> rung = launcher->Train(config, &observer);
  ASSERT_TRUE(rung.ok());
  EXPECT_FALSE(rung->diverged);
  EXPECT_EQ(rung->steps, 10);
}

TEST(ReplayLauncherTest, MalformedFixturesNameTheLine) {
  EXPECT_THAT(ParseReplayFixture("prism-replay 2\n").status().message(),
              HasSubstr("line 1: expected `prism-replay 1`"));
  EXPECT_THAT(
      ParseReplayFixture("prism-replay 1\nv 0 5 0 0 0\n").status().message(),
      HasSubstr("line 2: a point before any trial"));
  EXPECT_THAT(ParseReplayFixture("prism-replay 1\ntrial 4x4 1\nv 0 x 0 0 0\n")
                  .status()
                  .message(),
              HasSubstr("line 3: a point is"));
  EXPECT_EQ(LoadReplayFixture("/nonexistent/fixture.replay").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace prism::worker
