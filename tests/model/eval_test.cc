#include "model/eval.h"

#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/data.h"
#include "model/trainer.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"
#include "tests/testing/temp_dir.h"

namespace prism::model {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class EvalTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.File(name); }
  std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void Write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ::prism::testing::TempDir dir_{"prism_eval_test"};
};

// Examples whose right completion continues the training sentence; the
// label moves around so picking a fixed index cannot score.
std::vector<EvalExample> AnimalExamples() {
  const std::vector<std::string> animals = {" cat", " dog", " cow", " owl"};
  std::vector<EvalExample> examples;
  for (int e = 0; e < 4; ++e) {
    EvalExample ex;
    ex.index = e;
    ex.label = e;
    ex.context = ByteTokenize("my pet is a");
    for (int c = 0; c < 4; ++c) {
      // Completion c is the animal at (c - e) mod 4; the right one is " cat".
      ex.completions.push_back(ByteTokenize(animals[(c - e + 4) % 4] + "."));
    }
    examples.push_back(ex);
  }
  return examples;
}

TEST_F(EvalTest, FileRoundTripsInLlmcLayout) {
  const std::vector<EvalExample> examples = AnimalExamples();
  ASSERT_TRUE(WriteEvalFile(Path("e.bin"), examples).ok());
  const std::string bytes = Read(Path("e.bin"));
  int32_t header[4];
  std::memcpy(header, bytes.data(), sizeof header);
  EXPECT_EQ(header[0], 20240522);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 4);
  // 5 fixed fields + 1 + 11 context + 4 x (1 + 5) completion tokens.
  EXPECT_EQ(header[3], 2 * (5 + 12 + 24));
  uint16_t first[2];
  std::memcpy(first, bytes.data() + 1024, sizeof first);
  EXPECT_EQ(first[0], 65535);
  EXPECT_EQ(first[1], header[3]);

  absl::StatusOr<std::vector<EvalExample>> read =
      ReadEvalFile(Path("e.bin"), 256);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 4u);
  EXPECT_EQ((*read)[2].label, 2);
  EXPECT_EQ((*read)[2].context, examples[2].context);
  EXPECT_EQ((*read)[2].completions, examples[2].completions);
}

TEST_F(EvalTest, CorruptFilesNameTheOffset) {
  ASSERT_TRUE(WriteEvalFile(Path("e.bin"), AnimalExamples()).ok());
  const std::string good = Read(Path("e.bin"));
  auto patched = [&](int64_t offset, uint16_t value) {
    std::string bytes = good;
    std::memcpy(bytes.data() + offset, &value, 2);
    Write(Path("bad.bin"), bytes);
    return ReadEvalFile(Path("bad.bin"), 256).status();
  };
  // Bad magic.
  absl::Status s = patched(0, 7);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("bad.bin at byte 0: bad magic"));
  // The second example's start marker (each example is 82 bytes).
  EXPECT_THAT(patched(1024 + 82, 12).message(),
              HasSubstr("at byte 1106: expected the example start 65535"));
  // An index equal to the start marker, which WriteEvalFile cannot write
  // (found by fuzz/eval_file_fuzzer.cc: such a file read but did not round
  // trip).
  EXPECT_THAT(
      patched(1024 + 4, 65535).message(),
      HasSubstr("at byte 1028: the example index 65535 is the example start"));
  // A label beyond the completions.
  EXPECT_THAT(patched(1024 + 6, 9).message(),
              HasSubstr("at byte 1030: label 9 but only 4 completions"));
  // A token outside the vocabulary in the first context.
  EXPECT_THAT(patched(1024 + 12, 300).message(),
              HasSubstr("at byte 1036: token id 300 in the context"));
  // Truncated in the middle of the last example.
  Write(Path("bad.bin"), good.substr(0, good.size() - 3));
  EXPECT_THAT(ReadEvalFile(Path("bad.bin"), 256).status().message(),
              HasSubstr("truncated"));
  // Trailing bytes.
  Write(Path("bad.bin"), good + "xy");
  EXPECT_THAT(ReadEvalFile(Path("bad.bin"), 256).status().message(),
              HasSubstr("trailing bytes"));
  EXPECT_EQ(ReadEvalFile(Path("missing.bin"), 256).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(EvalTest, EncodedBytesParseBackAndMatchTheWrittenFile) {
  const std::vector<EvalExample> examples = AnimalExamples();
  absl::StatusOr<std::string> bytes = EncodeEvalFile(examples);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_TRUE(WriteEvalFile(Path("e.bin"), examples).ok());
  EXPECT_EQ(*bytes, Read(Path("e.bin")));
  absl::StatusOr<std::vector<EvalExample>> parsed =
      ParseEvalFile("memory", *bytes, 256);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 4u);
  EXPECT_EQ((*parsed)[3].completions, examples[3].completions);
  EXPECT_THAT(
      ParseEvalFile("memory", bytes->substr(0, 100), 256).status().message(),
      HasSubstr("eval file memory at byte 100: truncated header"));
}

TEST_F(EvalTest, WriterRefusesAnIndexTheUint16FieldCannotHold) {
  for (int index : {-1, 65535, 70000}) {
    std::vector<EvalExample> examples = AnimalExamples();
    examples[1].index = index;
    absl::Status s = WriteEvalFile(Path("e.bin"), examples);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << index;
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("example 1: index ", index,
                                                    " is outside [0, 65535)")));
  }
  EXPECT_FALSE(fs::exists(Path("e.bin")));
}

// Found by fuzz/eval_file_fuzzer.cc: a header counting 1.9 billion examples
// made ReadEvalFile allocate them all (over 100 GB) before reading one.
TEST_F(EvalTest, AnExampleCountTheFileCannotHoldIsRefusedBeforeAllocating) {
  absl::StatusOr<std::string> bytes = EncodeEvalFile(AnimalExamples());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  for (int32_t count : {24, 1903260017, INT32_MAX}) {
    std::string patched = *bytes;
    std::memcpy(patched.data() + 8, &count, sizeof count);
    absl::Status s = ParseEvalFile("e.bin", patched, 256).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << count;
    // 4 examples of 82 bytes; each takes at least 14.
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat(
                                 "e.bin at byte 8: the header says ", count,
                                 " examples but the 328 bytes "
                                 "after it hold at most 23")));
  }
}

TEST_F(EvalTest, TrainedModelPicksTheCompletionItLearned) {
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "my pet is a cat. ";
  ASSERT_TRUE(WriteShard(Path("t.bin"), ByteTokenize(text)).ok());
  TrainConfig train;
  train.shape = *FindPreset("tiny");
  train.shape.context = 32;
  train.schedule = *ParseSchedule("1x2,2x2,4x2");
  train.train_paths = {Path("t.bin")};
  train.batch_size = 4;
  train.steps = 40;
  train.eval_every = 40;
  train.learning_rate = 3e-3;
  train.threads = 2;
  train.measure_attention = false;
  train.measure_mfu = false;
  train.checkpoint_dir = Path("ckpt");
  ASSERT_TRUE(Train(train, nullptr).ok());

  ASSERT_TRUE(WriteEvalFile(Path("e.bin"), AnimalExamples()).ok());
  EvalConfig config;
  config.shape = train.shape;
  config.schedule = train.schedule;
  config.checkpoint_dir = Path("ckpt");
  config.eval_file = Path("e.bin");
  config.threads = 2;
  absl::StatusOr<EvalResult> r = EvaluateMultipleChoice(config);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->examples, 4);
  EXPECT_EQ(r->checkpoint_step, 40);
  EXPECT_EQ(r->acc, 1.0);
  EXPECT_EQ(r->acc_norm, 1.0);

  config.limit = 2;
  EXPECT_EQ(EvaluateMultipleChoice(config)->examples, 2);

  config.schedule = *ParseSchedule("4x6");
  EXPECT_EQ(EvaluateMultipleChoice(config).status().code(),
            absl::StatusCode::kFailedPrecondition);
  config.schedule = train.schedule;
  config.checkpoint_dir = Path("empty");
  EXPECT_EQ(EvaluateMultipleChoice(config).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace prism::model
