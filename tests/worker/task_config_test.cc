#include "worker/task_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/data_roots.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::TrialTask TinyTask() {
  v1::TrialTask task;
  task.mutable_trial()->set_id(12);
  task.mutable_trial()->set_schedule("1x2,4x4");
  task.mutable_trial()->set_seed(3);
  task.mutable_model()->set_preset("tiny");
  task.set_checkpoint_key("e1-t12");
  return task;
}

// Issue #32: the worker holds a task's data to its own roots before it
// opens anything, and refuses what is not a regular file or directory.
TEST(TaskConfigTest, DataOutsideTheWorkersRootsOrNotAFileIsRefused) {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/prism_task_data_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  fs::create_directories(dir + "/root/shards");
  std::ofstream(dir + "/root/shards/train_000.bin") << "x";
  std::ofstream(dir + "/outside.bin") << "x";
  fs::create_directories(dir + "/root/linked");
  fs::create_symlink(dir + "/outside.bin", dir + "/root/linked/a.bin");
  ASSERT_EQ(mkfifo((dir + "/root/fifo.bin").c_str(), 0600), 0);
  WorkerResources resources;
  absl::StatusOr<std::vector<std::string>> roots =
      ResolveDataRoots({dir + "/root"});
  ASSERT_TRUE(roots.ok());
  resources.data_roots = *roots;

  auto with_train = [](const std::string& path) {
    v1::TrialTask task = TinyTask();
    task.mutable_data()->add_train(path);
    return task;
  };
  EXPECT_TRUE(TrainConfigForTask(with_train(dir + "/root/shards/train_000.bin"),
                                 resources)
                  .ok());
  EXPECT_TRUE(
      TrainConfigForTask(with_train(dir + "/root/shards"), resources).ok());
  const struct {
    std::string path;
    const char* message;
  } refused[] = {
      {"/etc/shadow", "is outside the data roots"},
      {dir + "/root/../outside.bin", "is outside the data roots"},
      // A directory whose shard links out.
      {dir + "/root/linked", "is outside the data roots"},
      {dir + "/root/fifo.bin", "neither a regular file nor a directory"},
      {"/dev/zero", "is outside the data roots"},
  };
  for (const auto& r : refused) {
    absl::Status s = TrainConfigForTask(with_train(r.path), resources).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << r.path;
    EXPECT_THAT(std::string(s.message()), HasSubstr(r.message)) << r.path;
  }
  v1::TrialTask val = TinyTask();
  val.mutable_data()->add_val("/etc/passwd");
  EXPECT_EQ(TrainConfigForTask(val, resources).status().code(),
            absl::StatusCode::kInvalidArgument);
  fs::remove_all(dir);
}

TEST(TaskConfigTest, PresetDefaultsFillZeroFields) {
  absl::StatusOr<model::TrainConfig> config =
      TrainConfigForTask(TinyTask(), WorkerResources{});
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<ModelShape> tiny = FindPreset("tiny");
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(config->shape.d_model, tiny->d_model);
  EXPECT_EQ(config->shape.layers, tiny->layers);
  EXPECT_EQ(config->steps, tiny->steps);
  EXPECT_EQ(config->batch_size, tiny->batch_size);
  EXPECT_DOUBLE_EQ(config->learning_rate, tiny->learning_rate);
  EXPECT_EQ(config->schedule.heads(), (std::vector<int>{1, 1, 4, 4, 4, 4}));
  EXPECT_EQ(config->seed, 3u);
  EXPECT_TRUE(config->checkpoint_dir.empty());
  EXPECT_FALSE(config->resume);
}

TEST(TaskConfigTest, BudgetAndResourcesOverrideDefaults) {
  v1::TrialTask task = TinyTask();
  task.mutable_budget()->set_steps(33);
  task.mutable_budget()->set_batch_size(4);
  task.mutable_budget()->set_learning_rate(0.01);
  task.mutable_budget()->set_eval_every(11);
  task.mutable_budget()->set_checkpoint_every(10);
  task.mutable_budget()->add_loss_targets(2.5);
  task.mutable_model()->set_positions(v1::POSITION_ROTARY);
  task.mutable_data()->add_train("/data/train.bin");
  task.mutable_data()->add_val("/data/val.bin");
  WorkerResources resources;
  resources.device = "cuda:1";
  resources.threads = 6;
  resources.checkpoint_root = "/shared/ckpt";
  resources.attention = model::AttentionMode::kMasked;

  absl::StatusOr<model::TrainConfig> config =
      TrainConfigForTask(task, resources);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->steps, 33);
  EXPECT_EQ(config->batch_size, 4);
  EXPECT_DOUBLE_EQ(config->learning_rate, 0.01);
  EXPECT_EQ(config->eval_every, 11);
  EXPECT_EQ(config->checkpoint_every, 10);
  EXPECT_THAT(config->loss_targets, ElementsAre(2.5));
  EXPECT_EQ(config->shape.positions, Positions::kRotary);
  EXPECT_THAT(config->train_paths, ElementsAre("/data/train.bin"));
  EXPECT_THAT(config->val_paths, ElementsAre("/data/val.bin"));
  EXPECT_EQ(config->device, "cuda:1");
  EXPECT_EQ(config->threads, 6);
  EXPECT_EQ(config->attention, model::AttentionMode::kMasked);
  EXPECT_EQ(config->checkpoint_dir, "/shared/ckpt/e1-t12");
  EXPECT_TRUE(config->resume);
}

TEST(TaskConfigTest, UnknownPresetIsInvalidArgument) {
  v1::TrialTask task = TinyTask();
  task.mutable_model()->set_preset("huge");
  absl::StatusOr<model::TrainConfig> config =
      TrainConfigForTask(task, WorkerResources{});
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("huge"));
}

TEST(TaskConfigTest, ScheduleOfWrongDepthIsInvalidArgument) {
  v1::TrialTask task = TinyTask();
  task.mutable_trial()->set_schedule("4x12");
  absl::StatusOr<model::TrainConfig> config =
      TrainConfigForTask(task, WorkerResources{});
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("12 layers"));
}

TEST(TaskConfigTest, MissingCheckpointKeyFallsBackToTrialId) {
  v1::TrialTask task = TinyTask();
  task.clear_checkpoint_key();
  WorkerResources resources;
  resources.checkpoint_root = "ckpt";
  EXPECT_EQ(CheckpointDirFor(task, resources), "ckpt/trial-12");
}

TEST(TaskConfigTest, ConvertsPointsAndMetrics) {
  const v1::LossPoint point =
      ToLossPoint({model::CurveSplit::kVal, 40, 2.5f, 1e-3f, 1234.0, 9.5});
  EXPECT_EQ(point.split(), v1::SPLIT_VAL);
  EXPECT_EQ(point.step(), 40);
  EXPECT_FLOAT_EQ(point.loss(), 2.5f);
  EXPECT_DOUBLE_EQ(point.tokens_per_second(), 1234.0);

  model::TrainResult result;
  result.final_val_loss = 2.1;
  result.steps = 200;
  result.diverged = true;
  result.diverged_step = 150;
  result.milestones = {{3.0, 80}, {2.0, -1}};
  result.attention_distance = {4.0, 9.5};
  result.device = "cpu";
  result.mfu = 1.0;  // the trial beat the measured matmul peak
  result.peak_matmul_flops = 46e9;
  result.measured_peak_matmul_flops = 13e9;
  result.attention_kernel = "fused";
  result.isa = "avx2";
  const v1::TrialMetrics m = ToTrialMetrics(result);
  EXPECT_DOUBLE_EQ(m.final_val_loss(), 2.1);
  EXPECT_EQ(m.steps(), 200);
  EXPECT_TRUE(m.diverged());
  EXPECT_EQ(m.diverged_step(), 150);
  ASSERT_EQ(m.milestones_size(), 2);
  EXPECT_EQ(m.milestones(1).step(), -1);
  EXPECT_THAT(m.attention_distance(), ElementsAre(4.0, 9.5));
  EXPECT_EQ(m.device(), "cpu");
  EXPECT_DOUBLE_EQ(m.mfu(), 1.0);
  EXPECT_DOUBLE_EQ(m.peak_matmul_flops(), 46e9);
  EXPECT_DOUBLE_EQ(m.measured_peak_matmul_flops(), 13e9);
  EXPECT_EQ(m.attention_kernel(), "fused");
  EXPECT_EQ(m.isa(), "avx2");
}

}  // namespace
}  // namespace prism::worker
