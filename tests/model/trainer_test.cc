#include "model/trainer.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/data.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"
#include "tests/testing/temp_dir.h"

namespace prism::model {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Recorder keeps every step's loss, can ask the trainer to stop, and can
// refuse checkpoints from a step on.
class Recorder : public TrainObserver {
 public:
  void OnStart(const TrainConfig&, int64_t start_step) override {
    started_at = start_step;
  }
  void OnStep(int64_t step, double loss, double) override {
    losses.push_back({step, loss});
  }
  bool BeforeCheckpoint(int64_t step) override {
    before_checkpoint.push_back(step);
    return refuse_from <= 0 || step < refuse_from;
  }
  void OnCheckpoint(int64_t step) override { checkpoints.push_back(step); }
  bool ShouldStop() override {
    return stop_after > 0 && !losses.empty() &&
           losses.back().first >= stop_after;
  }

  std::vector<std::pair<int64_t, double>> losses;
  std::vector<int64_t> before_checkpoint, checkpoints;
  int64_t stop_after = 0;
  int64_t refuse_from = 0;  // > 0: BeforeCheckpoint refuses steps from here
  int64_t started_at = -1;
};

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Generated English-like text with a train/val split: learnable, and
    // written in a moment.
    std::string text;
    for (int i = 0; i < 4000; ++i) {
      text += "the quick brown fox " + std::to_string(i % 97) +
              " jumps over the lazy dog.\n";
    }
    const std::vector<uint16_t> tokens = ByteTokenize(text);
    const size_t cut = tokens.size() * 9 / 10;
    ASSERT_TRUE(
        WriteShard(Path("train.bin"),
                   std::vector<uint16_t>(tokens.begin(), tokens.begin() + cut))
            .ok());
    ASSERT_TRUE(
        WriteShard(Path("val.bin"),
                   std::vector<uint16_t>(tokens.begin() + cut, tokens.end()))
            .ok());
  }

  std::string Path(const std::string& name) const { return dir_.File(name); }

  // TrainThenResume trains `config` uninterrupted (the reference run, into
  // `straight`), then sets it to checkpoint to ckpt/ and resume from there,
  // for the interrupted runs compared with the reference.
  absl::StatusOr<TrainResult> TrainThenResume(TrainConfig* config,
                                              Recorder* straight) {
    absl::StatusOr<TrainResult> full = Train(*config, straight);
    config->checkpoint_dir = Path("ckpt");
    config->resume = true;
    return full;
  }

  TrainConfig SmallRun() const {
    TrainConfig c;
    c.shape = *FindPreset("tiny");
    c.schedule = *ParseSchedule("1x2,2x2,4x2");
    c.train_paths = {Path("train.bin")};
    c.val_paths = {Path("val.bin")};
    c.context = 32;
    c.batch_size = 4;
    c.steps = 6;
    c.eval_every = 3;
    c.eval_batches = 2;
    c.log_every = 1;
    c.learning_rate = 3e-3;
    c.warmup_steps = 2;
    c.threads = 2;
    c.measure_mfu = false;
    return c;
  }

  ::prism::testing::TempDir dir_{"prism_trainer_test"};
};

TEST_F(TrainerTest, ReportsEveryMetricOfATrial) {
  TrainConfig config = SmallRun();
  config.loss_targets = {5.0, 0.001};
  config.measure_mfu = true;
  Recorder recorder;
  absl::StatusOr<TrainResult> r = Train(config, &recorder);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 6);
  EXPECT_FALSE(r->diverged);
  EXPECT_EQ(recorder.started_at, 0);
  ASSERT_EQ(recorder.losses.size(), 6u);

  // Val at step 0 (ln 256 at init), 3 and 6; train every step.
  std::vector<int64_t> val_steps;
  int train_points = 0;
  for (const CurvePoint& p : r->curve) {
    if (p.split == CurveSplit::kVal) val_steps.push_back(p.step);
    if (p.split == CurveSplit::kTrain) ++train_points;
  }
  EXPECT_EQ(val_steps, (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(train_points, 6);
  EXPECT_NEAR(r->curve.front().loss, std::log(256.0), 0.1);
  EXPECT_LT(r->final_val_loss, r->curve.front().loss);
  EXPECT_LE(r->min_val_loss, r->final_val_loss);

  const ParameterCounts counts = CountParameters(config.shape);
  EXPECT_EQ(r->parameters, counts.total);
  EXPECT_EQ(r->parameters_nanogpt, counts.nanogpt);
  ModelShape at_context = config.shape;
  at_context.context = 32;
  EXPECT_EQ(r->flops_per_token, 3 * ForwardFlopsPerToken(at_context));
  EXPECT_GT(r->tokens_per_second, 0.0);
  EXPECT_GT(r->measured_peak_matmul_flops, 1e9);
  EXPECT_GE(r->peak_matmul_flops, r->measured_peak_matmul_flops);
  EXPECT_GT(r->mfu, 0.0);
  EXPECT_LE(r->mfu, 1.0);
  EXPECT_DOUBLE_EQ(
      r->mfu, r->flops_per_token * r->tokens_per_second / r->peak_matmul_flops);
  EXPECT_GT(r->peak_memory_bytes, 0);
  EXPECT_EQ(r->device, "cpu (2 threads)");
  // The process's CPU seconds over stepping seconds x 2 threads: above 0,
  // and not far above 1 (the worker's own threads add a little).
  EXPECT_GT(r->cpu_share, 0.0);
  EXPECT_LT(r->cpu_share, 1.5);

  ASSERT_EQ(r->milestones.size(), 2u);
  EXPECT_GE(r->milestones[0].step, 1);
  EXPECT_LE(r->milestones[0].step, 6);
  EXPECT_EQ(r->milestones[1].step, -1);

  ASSERT_EQ(r->attention_distance.size(), 6u);
  for (double d : r->attention_distance) {
    EXPECT_GT(d, 0.0);
    EXPECT_LT(d, 31.0);
  }
}

TEST_F(TrainerTest, AutoAttentionTimesTheCandidatesAndRecordsTheChoice) {
  TrainConfig config = SmallRun();
  config.steps = 2;
  config.measure_attention = false;
  absl::StatusOr<TrainResult> r = Train(config, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  // One timing per candidate: the fused kernel at each instruction set the
  // CPU has (baseline at least) and masked softmax.
  ASSERT_GE(r->attention_timings.size(), 2u);
  EXPECT_EQ(r->attention_timings.back().kernel, "masked");
  bool chosen_is_a_candidate = false;
  for (const AttentionTiming& t : r->attention_timings) {
    EXPECT_GT(t.milliseconds, 0.0) << t.kernel << " " << t.isa;
    EXPECT_EQ(t.isa.empty(), t.kernel == "masked") << t.kernel;
    if (t.kernel == r->attention_kernel && t.isa == r->isa) {
      chosen_is_a_candidate = true;
    }
  }
  EXPECT_TRUE(chosen_is_a_candidate)
      << r->attention_kernel << " (" << r->isa << ")";
}

TEST_F(TrainerTest, ExplicitAttentionKernelIsHonouredWithoutTiming) {
  TrainConfig config = SmallRun();
  config.steps = 2;
  config.measure_attention = false;
  config.attention = AttentionMode::kMasked;
  absl::StatusOr<TrainResult> masked = Train(config, nullptr);
  ASSERT_TRUE(masked.ok()) << masked.status();
  EXPECT_EQ(masked->attention_kernel, "masked");
  EXPECT_EQ(masked->isa, "");
  EXPECT_TRUE(masked->attention_timings.empty());

  config.attention = AttentionMode::kFused;
  absl::StatusOr<TrainResult> fused = Train(config, nullptr);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(fused->attention_kernel, "fused");
  EXPECT_THAT(fused->isa, ::testing::AnyOf("baseline", "avx2", "avx512"));
  EXPECT_TRUE(fused->attention_timings.empty());
  // Same function, different rounding: the losses agree closely.
  EXPECT_NEAR(fused->final_train_loss, masked->final_train_loss, 1e-3);
}

TEST_F(TrainerTest, PrismIsaForcesTheFusedKernelsLevel) {
  TrainConfig config = SmallRun();
  config.steps = 1;
  config.measure_attention = false;
  config.attention = AttentionMode::kFused;
  ASSERT_EQ(setenv("PRISM_ISA", "baseline", 1), 0);
  absl::StatusOr<TrainResult> forced = Train(config, nullptr);
  ASSERT_EQ(setenv("PRISM_ISA", "sse9", 1), 0);
  absl::StatusOr<TrainResult> bad = Train(config, nullptr);
  ASSERT_EQ(unsetenv("PRISM_ISA"), 0);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ(forced->isa, "baseline");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("PRISM_ISA"));
}

TEST_F(TrainerTest, TinyModelOverfitsOneFixedBatch) {
  // A shard of exactly context + 1 tokens has a single window, so every
  // batch is the same sequence.
  const std::vector<uint16_t> text =
      ByteTokenize("Prism heads: few and wide early, many late!!");
  ASSERT_TRUE(WriteShard(Path("one.bin"),
                         std::vector<uint16_t>(text.begin(), text.begin() + 33))
                  .ok());
  TrainConfig config = SmallRun();
  config.train_paths = {Path("one.bin")};
  config.val_paths = {Path("one.bin")};
  config.steps = 80;
  config.eval_every = 80;
  config.log_every = 10;
  config.measure_attention = false;
  absl::StatusOr<TrainResult> r = Train(config, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(r->final_train_loss, 0.05);
  EXPECT_LT(r->final_val_loss, 0.05);
}

TEST_F(TrainerTest, ResumedRunReproducesTheUninterruptedRunBitwise) {
  TrainConfig config = SmallRun();
  config.measure_attention = false;
  // Train points at 3 and 6: the stop at 4 falls inside the second one's
  // window, which the checkpoint carries over.
  config.log_every = 3;
  Recorder straight;
  absl::StatusOr<TrainResult> full = TrainThenResume(&config, &straight);
  ASSERT_TRUE(full.ok()) << full.status();
  Recorder first;
  first.stop_after = 4;
  absl::StatusOr<TrainResult> stopped = Train(config, &first);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_TRUE(stopped->stopped);
  EXPECT_EQ(stopped->steps, 4);
  EXPECT_EQ(first.before_checkpoint, (std::vector<int64_t>{4}));
  EXPECT_EQ(first.checkpoints, (std::vector<int64_t>{4}));
  EXPECT_TRUE(fs::exists(Path("ckpt/checkpoint.pt")));

  Recorder second;
  absl::StatusOr<TrainResult> resumed = Train(config, &second);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(second.started_at, 4);
  EXPECT_EQ(resumed->resumed_from_step, 4);
  ASSERT_EQ(second.losses.size(), 2u);
  for (const auto& [step, loss] : second.losses) {
    EXPECT_EQ(loss, straight.losses[step - 1].second) << "step " << step;
  }
  EXPECT_EQ(resumed->final_val_loss, full->final_val_loss);
  EXPECT_EQ(resumed->final_train_loss, full->final_train_loss);
  // The resumed result carries the whole curve, including points before the
  // checkpoint, with the same losses.
  ASSERT_EQ(resumed->curve.size(), full->curve.size());
  for (size_t i = 0; i < full->curve.size(); ++i) {
    EXPECT_EQ(resumed->curve[i].split, full->curve[i].split) << i;
    EXPECT_EQ(resumed->curve[i].step, full->curve[i].step) << i;
    EXPECT_EQ(resumed->curve[i].loss, full->curve[i].loss) << i;
  }
  EXPECT_EQ(second.checkpoints, (std::vector<int64_t>{6}));
}

TEST_F(TrainerTest, RunStoppedAtARungIsThePrefixItsResumeContinues) {
  TrainConfig config = SmallRun();
  config.measure_attention = false;
  Recorder straight;
  absl::StatusOr<TrainResult> full = TrainThenResume(&config, &straight);
  ASSERT_TRUE(full.ok()) << full.status();
  config.stop_at_step = 3;
  Recorder rung;
  absl::StatusOr<TrainResult> at_rung = Train(config, &rung);
  ASSERT_TRUE(at_rung.ok()) << at_rung.status();
  EXPECT_FALSE(at_rung->stopped);
  EXPECT_EQ(at_rung->steps, 3);
  EXPECT_EQ(rung.checkpoints, (std::vector<int64_t>{3}));
  // The full run's learning rates: its val loss at the rung is the same.
  ASSERT_FALSE(at_rung->curve.empty());
  EXPECT_EQ(at_rung->curve.back().split, CurveSplit::kVal);
  EXPECT_EQ(at_rung->curve.back().step, 3);
  for (const CurvePoint& p : full->curve) {
    if (p.split == CurveSplit::kVal && p.step == 3) {
      EXPECT_EQ(at_rung->curve.back().loss, p.loss);
    }
  }

  config.stop_at_step = 0;
  Recorder promoted;
  absl::StatusOr<TrainResult> resumed = Train(config, &promoted);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->resumed_from_step, 3);
  ASSERT_EQ(promoted.losses.size(), 3u);
  for (const auto& [step, loss] : promoted.losses) {
    EXPECT_EQ(loss, straight.losses[step - 1].second) << "step " << step;
  }
  EXPECT_EQ(resumed->final_val_loss, full->final_val_loss);

  config.stop_at_step = 4;  // not on the eval grid
  EXPECT_THAT(Train(config, nullptr).status().message(),
              HasSubstr("stop_at_step must be 0 or a multiple of eval_every"));
}

TEST_F(TrainerTest, RunResumedFromItsFinalCheckpointReportsTheWholeTrial) {
  // As after a crash between the final checkpoint and the result.
  TrainConfig config = SmallRun();
  config.checkpoint_dir = Path("ckpt");
  config.resume = true;
  Recorder first;
  absl::StatusOr<TrainResult> done = Train(config, &first);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(first.checkpoints, (std::vector<int64_t>{6}));

  Recorder second;
  absl::StatusOr<TrainResult> again = Train(config, &second);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(second.started_at, 6);
  EXPECT_TRUE(second.losses.empty());  // no step trained again
  EXPECT_TRUE(second.checkpoints.empty());
  EXPECT_EQ(again->steps, config.steps);
  EXPECT_EQ(again->resumed_from_step, 6);
  EXPECT_FALSE(again->stopped);
  EXPECT_GT(again->tokens_per_second, 0.0);
  EXPECT_EQ(again->tokens_per_second, done->tokens_per_second);
  EXPECT_GT(again->cpu_share, 0.0);
  EXPECT_EQ(again->cpu_share, done->cpu_share);  // from the checkpoint
  EXPECT_EQ(again->final_train_loss, done->final_train_loss);
  EXPECT_EQ(again->final_val_loss, done->final_val_loss);
  EXPECT_EQ(again->min_val_loss, done->min_val_loss);
  ASSERT_EQ(again->attention_distance.size(), 6u);
  EXPECT_EQ(again->attention_distance, done->attention_distance);
  EXPECT_EQ(again->curve.size(), done->curve.size());
}

TEST_F(TrainerTest, CheckpointOfAnotherTrialIsRefused) {
  TrainConfig config = SmallRun();
  config.steps = 2;
  config.measure_attention = false;
  config.checkpoint_dir = Path("ckpt");
  ASSERT_TRUE(Train(config, nullptr).ok());

  config.resume = true;
  config.schedule = *ParseSchedule("2x2,4x4");
  absl::Status s = Train(config, nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("is for schedule 1x2,2x2,4x2"));

  config.schedule = *ParseSchedule("1x2,2x2,4x2");
  config.seed = 5;
  EXPECT_THAT(Train(config, nullptr).status().message(),
              HasSubstr("is for seed 0"));
}

TEST_F(TrainerTest, CheckpointOfAnotherRecipeIsRefusedNamingTheField) {
  TrainConfig config = SmallRun();
  config.steps = 2;
  config.measure_attention = false;
  config.checkpoint_dir = Path("ckpt");
  ASSERT_TRUE(Train(config, nullptr).ok());
  config.resume = true;

  TrainConfig changed = config;
  changed.steps = 3;
  absl::Status s = Train(changed, nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("was written by a different recipe"));
  EXPECT_THAT(s.message(), HasSubstr("steps 2 vs 3"));
  EXPECT_THAT(s.message(), Not(HasSubstr("batch_size")));

  changed = config;
  changed.learning_rate = 1e-3;
  s = Train(changed, nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("learning_rate 0.003 vs 0.001"));

  changed = config;
  changed.batch_size = 2;
  changed.eval_every = 1;
  s = Train(changed, nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("batch_size 4 vs 2, eval_every 3 vs 1"));

  changed = config;
  changed.val_paths = {Path("train.bin")};
  s = Train(changed, nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("val " + Path("val.bin") + " vs " + Path("train.bin")));

  changed = config;
  changed.shape.dropout = 0.1f;
  EXPECT_THAT(Train(changed, nullptr).status().message(),
              HasSubstr("dropout 0 vs 0.1"));

  // The unchanged recipe resumes (from the final checkpoint: nothing to do),
  // whatever the device settings.
  config.threads = 1;
  Recorder recorder;
  absl::StatusOr<TrainResult> r = Train(config, &recorder);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->resumed_from_step, 2);
  EXPECT_TRUE(recorder.losses.empty());
}

TEST_F(TrainerTest, RefusedCheckpointLeavesThePreviousOneInPlace) {
  TrainConfig config = SmallRun();
  config.measure_attention = false;
  Recorder straight;
  absl::StatusOr<TrainResult> full = Train(config, &straight);
  ASSERT_TRUE(full.ok()) << full.status();

  config.checkpoint_dir = Path("ckpt");
  config.checkpoint_every = 2;
  config.resume = true;
  Recorder refusing;
  refusing.refuse_from = 4;
  absl::StatusOr<TrainResult> r = Train(config, &refusing);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 6);
  EXPECT_FALSE(r->stopped);
  EXPECT_EQ(refusing.before_checkpoint, (std::vector<int64_t>{2, 4, 6}));
  EXPECT_EQ(refusing.checkpoints, (std::vector<int64_t>{2}));
  EXPECT_EQ(r->checkpoints_skipped, 2);

  // The directory still holds step 2's checkpoint.
  Recorder resumed;
  absl::StatusOr<TrainResult> again = Train(config, &resumed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(resumed.started_at, 2);
  EXPECT_EQ(again->resumed_from_step, 2);
  EXPECT_EQ(resumed.losses.size(), 4u);
  EXPECT_EQ(resumed.checkpoints, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(again->checkpoints_skipped, 0);
  EXPECT_EQ(again->final_val_loss, full->final_val_loss);
}

TEST_F(TrainerTest, RefusedStopCheckpointStillStops) {
  TrainConfig config = SmallRun();
  config.measure_attention = false;
  config.checkpoint_dir = Path("ckpt");
  config.checkpoint_every = 2;
  config.resume = true;
  Recorder refusing;
  refusing.stop_after = 3;
  refusing.refuse_from = 3;
  absl::StatusOr<TrainResult> r = Train(config, &refusing);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stopped);
  EXPECT_EQ(r->steps, 3);
  EXPECT_EQ(refusing.before_checkpoint, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(refusing.checkpoints, (std::vector<int64_t>{2}));
  EXPECT_EQ(r->checkpoints_skipped, 1);

  Recorder resumed;
  ASSERT_TRUE(Train(config, &resumed).ok());
  EXPECT_EQ(resumed.started_at, 2);
}

TEST_F(TrainerTest, CheckpointPastMaxResumeStepIsDiscardedForAFreshStart) {
  TrainConfig config = SmallRun();
  config.measure_attention = false;
  Recorder straight;
  absl::StatusOr<TrainResult> full = TrainThenResume(&config, &straight);
  ASSERT_TRUE(full.ok()) << full.status();
  Recorder first;
  first.stop_after = 4;
  ASSERT_TRUE(Train(config, &first).ok());
  ASSERT_EQ(first.checkpoints, (std::vector<int64_t>{4}));

  // The caller stored the curve up to step 3 only.
  config.max_resume_step = 3;
  Recorder fresh;
  absl::StatusOr<TrainResult> r = Train(config, &fresh);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(fresh.started_at, 0);
  EXPECT_EQ(r->resumed_from_step, 0);
  EXPECT_EQ(r->discarded_checkpoint_step, 4);
  EXPECT_EQ(r->steps, 6);
  ASSERT_EQ(fresh.losses.size(), 6u);
  for (const auto& [step, loss] : fresh.losses) {
    EXPECT_EQ(loss, straight.losses[step - 1].second) << "step " << step;
  }
  EXPECT_EQ(r->final_val_loss, full->final_val_loss);
  EXPECT_EQ(r->final_train_loss, full->final_train_loss);
  EXPECT_EQ(r->curve.size(), full->curve.size());

  // Its final checkpoint replaced the discarded one; a limit at the
  // checkpoint's own step resumes it.
  config.max_resume_step = 6;
  absl::StatusOr<TrainResult> again = Train(config, nullptr);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->resumed_from_step, 6);
  EXPECT_EQ(again->discarded_checkpoint_step, 0);
}

TEST_F(TrainerTest, AbsurdLearningRateDivergesAtAStep) {
  TrainConfig config = SmallRun();
  config.learning_rate = 1e30;
  config.warmup_steps = 0;
  config.steps = 20;
  Recorder recorder;
  absl::StatusOr<TrainResult> r = Train(config, &recorder);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->diverged);
  EXPECT_GE(r->diverged_step, 2);
  EXPECT_LE(r->diverged_step, 20);
  EXPECT_EQ(r->steps, r->diverged_step - 1);
  EXPECT_TRUE(r->attention_distance.empty());
  for (const CurvePoint& p : r->curve) EXPECT_TRUE(std::isfinite(p.loss));
}

TEST_F(TrainerTest, BadConfigsNameTheProblem) {
  TrainConfig config = SmallRun();
  config.steps = 0;
  EXPECT_THAT(Train(config, nullptr).status().message(), HasSubstr("steps"));

  config = SmallRun();
  config.schedule = *ParseSchedule("3x6");
  absl::Status s = Train(config, nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("schedule '3x6'"));

  config = SmallRun();
  config.device = "tpu";
  EXPECT_EQ(Train(config, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  config.device = "cuda:0";
  EXPECT_EQ(Train(config, nullptr).status().code(),
            absl::StatusCode::kFailedPrecondition);

  config = SmallRun();
  config.context = 4096;
  EXPECT_THAT(Train(config, nullptr).status().message(),
              HasSubstr("context must be in [0, 128]"));

  EXPECT_THAT(ParseAttentionMode("flash").status().message(),
              HasSubstr("attention 'flash'"));
  EXPECT_THAT(ParseCpuThreading("all").status().message(),
              HasSubstr("cpu_threading 'all'"));

  config = SmallRun();
  config.train_paths = {Path("nowhere")};
  EXPECT_EQ(Train(config, nullptr).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(TrainerTest, TinyPresetLearnsTheDemoCorpus) {
  if (!fs::is_directory(kFortunesDir)) {
    GTEST_SKIP() << "Debian's fortunes package is not installed";
  }
  setenv("PRISM_DATA_DIR", Path("data").c_str(), 1);
  TrainConfig config;
  config.shape = *FindPreset("tiny");
  config.schedule = *ParseSchedule("1x2,2x2,4x2");
  config.steps = 60;
  config.batch_size = 8;
  config.eval_every = 60;
  config.learning_rate = config.shape.learning_rate;
  config.threads = 2;
  config.measure_mfu = false;
  config.measure_attention = false;
  absl::StatusOr<TrainResult> r = Train(config, nullptr);
  unsetenv("PRISM_DATA_DIR");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(fs::exists(Path("data/corpus/fortunes/val_000000.bin")));
  // From ln 256 = 5.55 to well below (byte frequencies alone give ~3.3).
  EXPECT_LT(r->final_val_loss, 3.4);
}

}  // namespace
}  // namespace prism::model
