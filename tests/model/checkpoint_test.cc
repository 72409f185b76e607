#include "model/internal/checkpoint.h"

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/trainer.h"
#include "scheduler/space/presets.h"
#include "tests/testing/scoped_umask.h"
#include "tests/testing/temp_dir.h"

namespace prism::model::internal {
namespace {

using ::testing::HasSubstr;

CheckpointIdentity Identity(const std::string& recipe) {
  CheckpointIdentity identity;
  identity.shape = ShapeKey(*FindPreset("tiny"));
  identity.schedule = "1x2,2x2,4x2";
  identity.seed = 7;
  identity.recipe = recipe;
  return identity;
}

Checkpoint SmallCheckpoint(const std::string& recipe) {
  Checkpoint c;
  c.identity = Identity(recipe);
  c.step = 12;
  c.adam_steps = 12;
  c.parameters = torch::arange(10, torch::kFloat32);
  c.exp_avg = torch::ones({10});
  c.exp_avg_sq = torch::full({10}, 2.0f);
  c.curve = {{CurveSplit::kVal, 0, 5.5f, 1e-4f, 0.0, 0.5},
             {CurveSplit::kTrain, 12, 3.25f, 1e-3f, 900.0, 4.0}};
  c.milestones = {{4.0, 12}};
  c.elapsed_seconds = 4.5;
  c.min_val_loss = 3.5;
  c.final_val_loss = 3.75;
  c.final_train_loss = 3.2500001;
  c.train_seconds = 3.875;
  c.train_tokens = 12 * 4 * 32;
  c.train_cpu_seconds = 7.25;
  c.window_loss = 6.5;
  c.window_seconds = 0.625;
  c.window_steps = 2;
  c.attention_kernel = "fused:avx2";
  return c;
}

TEST(RecipeKeyTest, NumbersAreExactAndSeparatorsEscaped) {
  TrainConfig config;
  config.learning_rate = 1e-3;
  config.min_lr_ratio = 0.1;
  config.loss_targets = {3.5, 1.0 / 3.0};
  config.shape.dropout = 0.1f;
  const std::string key =
      RecipeKey(config, 64, {"data/a;b,c%.bin", "data/d.bin"}, {});
  EXPECT_THAT(key, HasSubstr("steps=200;batch_size=8;grad_accum=1;context=64;"
                             "eval_every=50;eval_batches=4;log_every=10;"));
  EXPECT_THAT(key, HasSubstr(";learning_rate=0.001;min_lr_ratio=0.1;"));
  EXPECT_THAT(key, HasSubstr(";loss_targets=3.5,0.3333333333333333;"));
  EXPECT_THAT(key, HasSubstr(";dropout=0.1;"));
  EXPECT_THAT(key, HasSubstr(";train=data/a%3Bb%2Cc%25.bin,data/d.bin;val="));

  // One path with a comma is not two paths.
  EXPECT_NE(RecipeKey(config, 64, {"a,b"}, {}),
            RecipeKey(config, 64, {"a", "b"}, {}));
  TrainConfig other = config;
  other.weight_decay = 0.0;
  EXPECT_NE(RecipeKey(other, 64, {}, {}), RecipeKey(config, 64, {}, {}));
  EXPECT_NE(RecipeKey(config, 32, {}, {}), RecipeKey(config, 64, {}, {}));
}

TEST(CheckpointTest, SavesAndLoadsEveryField) {
  ::prism::testing::TempDir dir("prism_checkpoint_test");
  const std::string recipe = "steps=12;learning_rate=0.001";
  ASSERT_TRUE(SaveCheckpoint(dir.path(), SmallCheckpoint(recipe)).ok());

  absl::StatusOr<std::optional<Checkpoint>> loaded =
      LoadCheckpoint(dir.path(), Identity(recipe));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->has_value());
  const Checkpoint& c = **loaded;
  const Checkpoint want = SmallCheckpoint(recipe);
  EXPECT_EQ(c.identity.recipe, recipe);
  EXPECT_EQ(c.step, 12);
  EXPECT_TRUE(torch::equal(c.parameters, want.parameters));
  EXPECT_TRUE(torch::equal(c.exp_avg_sq, want.exp_avg_sq));
  ASSERT_EQ(c.curve.size(), 2u);
  EXPECT_EQ(c.curve[1].loss, 3.25f);
  EXPECT_EQ(c.final_train_loss, want.final_train_loss);
  EXPECT_EQ(c.train_seconds, want.train_seconds);
  EXPECT_EQ(c.train_tokens, want.train_tokens);
  EXPECT_EQ(c.train_cpu_seconds, want.train_cpu_seconds);
  EXPECT_EQ(c.window_loss, want.window_loss);
  EXPECT_EQ(c.window_seconds, want.window_seconds);
  EXPECT_EQ(c.window_steps, want.window_steps);
  EXPECT_EQ(c.attention_kernel, want.attention_kernel);
}

// Issue #40: a checkpoint (the run's weights) and the directories made for
// it are the owner's alone, whatever the umask.
TEST(CheckpointTest, IsWrittenPrivateUnderAnyUmask) {
  ::prism::testing::TempDir dir("prism_checkpoint_test");
  const std::string trial_dir = dir.File("checkpoints/trial-1");
  {
    ::prism::testing::ScopedUmask open_to_all(0);
    ASSERT_TRUE(SaveCheckpoint(trial_dir, SmallCheckpoint("r")).ok());
    // The replacement is written to a temp file and renamed: private too.
    ASSERT_TRUE(SaveCheckpoint(trial_dir, SmallCheckpoint("r")).ok());
  }
  EXPECT_EQ(::prism::testing::ModeOf(CheckpointPath(trial_dir)), 0600);
  EXPECT_EQ(::prism::testing::ModeOf(trial_dir), 0700);
  EXPECT_EQ(::prism::testing::ModeOf(dir.File("checkpoints")), 0700);
}

TEST(CheckpointTest, DifferentRecipeNamesEveryDifferingField) {
  ::prism::testing::TempDir dir("prism_checkpoint_test");
  ASSERT_TRUE(SaveCheckpoint(dir.path(),
                             SmallCheckpoint("steps=12;batch_size=4;"
                                             "learning_rate=0.001;val=a.bin"))
                  .ok());
  absl::Status s =
      LoadCheckpoint(dir.path(), Identity("steps=20;batch_size=4;"
                                          "learning_rate=0.002;val="))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("was written by a different recipe (checkpoint vs "
                        "this run: steps 12 vs 20, learning_rate 0.001 vs "
                        "0.002, val a.bin vs (none))"));

  CheckpointIdentity any_recipe = Identity("steps=20");
  any_recipe.check_recipe = false;
  EXPECT_TRUE(LoadCheckpoint(dir.path(), any_recipe).ok());
}

// A checkpoint from before recipes were recorded (format version 1): training
// refuses it as another recipe, evaluation still reads its weights.
TEST(CheckpointTest, VersionOneCheckpointIsADifferentRecipe) {
  ::prism::testing::TempDir dir("prism_checkpoint_test");
  const Checkpoint c = SmallCheckpoint("");
  torch::serialize::OutputArchive archive;
  archive.write("format_version", c10::IValue(int64_t{1}));
  archive.write("shape", c10::IValue(c.identity.shape));
  archive.write("schedule", c10::IValue(c.identity.schedule));
  archive.write("seed", c10::IValue(static_cast<int64_t>(c.identity.seed)));
  archive.write("step", c10::IValue(c.step));
  archive.write("adam_steps", c10::IValue(c.adam_steps));
  archive.write("parameters", c.parameters);
  archive.write("exp_avg", c.exp_avg);
  archive.write("exp_avg_sq", c.exp_avg_sq);
  archive.write("curve", torch::zeros({0, 6}, torch::kFloat64));
  archive.write("milestones", torch::zeros({0, 2}, torch::kFloat64));
  archive.write("elapsed_seconds", c10::IValue(1.0));
  archive.write("min_val_loss", c10::IValue(3.0));
  archive.write("final_val_loss", c10::IValue(3.0));
  archive.save_to(CheckpointPath(dir.path()));

  absl::Status s = LoadCheckpoint(dir.path(), Identity("steps=12")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("was written by a different recipe (it "
                                     "records none"));

  CheckpointIdentity any_recipe = Identity("steps=12");
  any_recipe.check_recipe = false;
  absl::StatusOr<std::optional<Checkpoint>> loaded =
      LoadCheckpoint(dir.path(), any_recipe);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->step, 12);
  EXPECT_TRUE(torch::equal((*loaded)->parameters, c.parameters));
}

}  // namespace
}  // namespace prism::model::internal
