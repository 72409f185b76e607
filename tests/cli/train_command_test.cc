// Runs the built `prism` binary: `prism presets`, `prism train`, `prism data
// prepare` and `prism eval`, happy paths and bad input.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/data.h"
#include "model/eval.h"
#include "tests/cli/cluster.h"
#include "tests/testing/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using ::prism::testing::CommandResult;
using ::prism::testing::ReadFile;

class TrainCommandTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.File(name); }

  // Run executes prism with `args` (no shell) and PRISM_DATA_DIR inside the
  // test's directory, capturing both streams.
  CommandResult Run(const std::vector<std::string>& args) {
    return ::prism::testing::RunPrism(
        args, {"PRISM_DATA_DIR=" + Path("data")},
        Path("cmd-" + std::to_string(++commands_)));
  }

  // ExpectUsageError: exit 2, one line on stderr naming the problem.
  void ExpectUsageError(const std::vector<std::string>& args,
                        const std::string& message) {
    const CommandResult r = Run(args);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(message));
  }

  ::prism::testing::TempDir dir_{"prism_train_cli_test"};
  int commands_ = 0;
};

TEST_F(TrainCommandTest, PresetsListsCountsOfThePaperScales) {
  const CommandResult r = Run({"presets"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("123.69M"));
  EXPECT_THAT(r.out, HasSubstr("353.82M"));
  EXPECT_THAT(r.out, HasSubstr("757.23M"));
  const CommandResult json = Run({"presets", "--format", "json"});
  EXPECT_THAT(json.out, HasSubstr("\"params_nanogpt\": 123689472"));
}

TEST_F(TrainCommandTest, TrainsPrintsASummaryAndWritesJson) {
  const CommandResult r =
      Run({"train", "--preset", "tiny", "--schedule", "1x2,2x2,4x2", "--steps",
           "12", "--batch-size", "4", "--context", "32", "--threads", "2",
           "--eval-every", "6", "--checkpoint-dir", Path("ckpt"), "--json-out",
           Path("result.json")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("final val loss"));
  EXPECT_THAT(r.out, HasSubstr("attention distance by layer"));
  EXPECT_THAT(r.err, HasSubstr("12/12"));  // the progress display
  EXPECT_TRUE(fs::exists(Path("data/corpus/fortunes/train_000000.bin")));
  EXPECT_TRUE(fs::exists(Path("ckpt/checkpoint.pt")));
  const std::string json = ReadFile(Path("result.json"));
  EXPECT_THAT(json, HasSubstr("\"schedule\": \"1x2,2x2,4x2\""));
  EXPECT_THAT(json, HasSubstr("\"state\": \"TRIAL_COMPLETED\""));
  EXPECT_THAT(json, HasSubstr("\"finalValLoss\""));
  EXPECT_THAT(json, HasSubstr("\"attentionDistance\""));
  EXPECT_THAT(json, HasSubstr("\"split\": \"SPLIT_VAL\""));

  // The checkpoint is not resumed by another recipe (here the default
  // --eval-every 50), and is by the same one.
  std::vector<std::string> resume = {
      "train",       "--preset",         "tiny",       "--schedule",
      "1x2,2x2,4x2", "--steps",          "12",         "--batch-size",
      "4",           "--context",        "32",         "--threads",
      "2",           "--checkpoint-dir", Path("ckpt"), "--resume"};
  ExpectUsageError(resume,
                   "different recipe (checkpoint vs this run: eval_every 6 vs "
                   "50)");

  // Resuming a finished run trains nothing more and keeps its curve.
  resume.insert(resume.end(), {"--eval-every", "6", "--format", "json"});
  const CommandResult again = Run(resume);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("\"steps\": \"12\""));

  // The checkpoint feeds `prism eval`.
  std::vector<prism::model::EvalExample> examples(2);
  for (int e = 0; e < 2; ++e) {
    examples[e].index = e;
    examples[e].label = e;
    examples[e].context = prism::model::ByteTokenize("Q: why? A:");
    examples[e].completions = {prism::model::ByteTokenize(" yes"),
                               prism::model::ByteTokenize(" no")};
  }
  ASSERT_TRUE(prism::model::WriteEvalFile(Path("eval.bin"), examples).ok());
  const CommandResult eval =
      Run({"eval", "--preset", "tiny", "--schedule", "1x2,2x2,4x2",
           "--checkpoint-dir", Path("ckpt"), "--eval-file", Path("eval.bin"),
           "--format", "csv"});
  ASSERT_EQ(eval.status, 0) << eval.err;
  EXPECT_THAT(eval.out, HasSubstr("schedule,examples,acc,acc_norm"));
  EXPECT_THAT(eval.out, HasSubstr("1x2,2x2,4x2\",2,"));
}

TEST_F(TrainCommandTest, BadInputIsOneLineAndExitTwo) {
  ExpectUsageError({"train", "--preset", "huge"}, "unknown preset 'huge'");
  ExpectUsageError({"train", "--preset", "tiny", "--schedule", "3x6"},
                   "schedule '3x6' does not fit preset tiny");
  ExpectUsageError({"train", "--preset", "tiny", "--schedule", "4x"},
                   "schedule");
  ExpectUsageError({"train", "--preset", "tiny", "--data", Path("nowhere")},
                   "not found");
  ExpectUsageError({"train", "--preset", "tiny", "--positions", "sinusoid"},
                   "--positions must be learned or rotary");
  ExpectUsageError({"train", "--resume"}, "--resume needs --checkpoint-dir");
  ExpectUsageError({"train", "--steps", "ten"}, "--steps");
  ExpectUsageError({"eval", "--checkpoint-dir", Path("none"), "--eval-file",
                    Path("none.bin")},
                   "not found");
}

TEST_F(TrainCommandTest, DataPrepareWritesTrainAndValShards) {
  fs::create_directories(Path("text"));
  std::ofstream text(Path("text/book.txt"));
  for (int i = 0; i < 2000; ++i)
    text << "A line of text, number " << i << ".\n";
  text.close();
  const CommandResult r =
      Run({"data", "prepare", "--input", Path("text"), "--out", Path("shards"),
           "--val-fraction", "0.1"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("train"));
  EXPECT_TRUE(
      prism::model::TokenShard::Open(Path("shards/train_000000.bin"), 256)
          .ok());
  EXPECT_TRUE(
      prism::model::TokenShard::Open(Path("shards/val_000000.bin"), 256).ok());
  ExpectUsageError({"data", "prepare", "--input", Path("text"), "--out",
                    Path("shards"), "--val-fraction", "2"},
                   "val fraction must be in (0, 0.5]");
}

}  // namespace
