#include "scheduler/space/presets.h"

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

using ::testing::HasSubstr;

TEST(PresetsTest, TableIsOrderedSmallestFirstAndValid) {
  const auto& presets = Presets();
  ASSERT_EQ(presets.size(), 5u);
  const char* names[] = {"tiny", "small", "124m", "354m", "757m"};
  int64_t previous = 0;
  for (size_t i = 0; i < presets.size(); ++i) {
    EXPECT_EQ(presets[i].name, names[i]);
    EXPECT_TRUE(ValidateShape(presets[i]).ok()) << presets[i].name;
    EXPECT_GT(presets[i].batch_size, 0);
    EXPECT_GT(presets[i].steps, 0);
    EXPECT_GT(presets[i].learning_rate, 0.0);
    const int64_t n = CountParameters(presets[i]).total;
    EXPECT_GT(n, previous) << presets[i].name;
    previous = n;
  }
}

TEST(PresetsTest, PaperScalesMatchNanoGptCounts) {
  // The paper's 124M / 354M / 757M read as nanoGPT counts (no position table).
  struct Expected {
    const char* name;
    int64_t nanogpt;
  } expected[] = {
      {"124m", 123689472}, {"354m", 353822720}, {"757m", 757226496}};
  for (const auto& e : expected) {
    absl::StatusOr<ModelShape> shape = FindPreset(e.name);
    ASSERT_TRUE(shape.ok()) << shape.status();
    const ParameterCounts counts = CountParameters(*shape);
    EXPECT_EQ(counts.nanogpt, e.nanogpt) << e.name;
    EXPECT_EQ(counts.total - counts.nanogpt,
              int64_t{shape->context} * shape->d_model)
        << e.name;
    EXPECT_EQ(shape->context, 1024);
    EXPECT_EQ(shape->vocab_size, 50304);
  }
  EXPECT_NEAR(CountParameters(*FindPreset("124m")).nanogpt / 1e6, 123.7, 0.05);
  EXPECT_NEAR(CountParameters(*FindPreset("354m")).nanogpt / 1e6, 353.8, 0.05);
  EXPECT_NEAR(CountParameters(*FindPreset("757m")).nanogpt / 1e6, 757.2, 0.05);
}

TEST(PresetsTest, RotaryShapesHaveNoPositionTable) {
  ModelShape shape = *FindPreset("tiny");
  const ParameterCounts learned = CountParameters(shape);
  shape.positions = Positions::kRotary;
  const ParameterCounts rotary = CountParameters(shape);
  EXPECT_EQ(rotary.total, rotary.nanogpt);
  EXPECT_EQ(rotary.nanogpt, learned.nanogpt);
  EXPECT_EQ(learned.total - rotary.total, 128 * 128);
}

TEST(PresetsTest, FindPresetIgnoresCaseAndListsKnownNamesOnError) {
  absl::StatusOr<ModelShape> tiny = FindPreset("TINY");
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->name, "tiny");
  EXPECT_EQ(tiny->d_model, 128);
  EXPECT_EQ(tiny->layers, 6);
  EXPECT_EQ(tiny->base_heads, 4);

  absl::StatusOr<ModelShape> missing = FindPreset("huge");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("'huge'"));
  EXPECT_THAT(missing.status().message(),
              HasSubstr("tiny, small, 124m, 354m, 757m"));
}

TEST(PresetsTest, ValidateShapeNamesTheFirstBadField) {
  ModelShape shape = *FindPreset("tiny");
  shape.context = 0;
  EXPECT_THAT(ValidateShape(shape).message(), HasSubstr("context"));
  shape = *FindPreset("tiny");
  shape.base_heads = 3;
  EXPECT_THAT(ValidateShape(shape).message(),
              HasSubstr("base_heads 3 does not divide d_model 128"));
  shape = *FindPreset("tiny");
  shape.dropout = 1.0f;
  EXPECT_THAT(ValidateShape(shape).message(), HasSubstr("dropout"));
  shape.dropout = std::nanf("");
  EXPECT_EQ(ValidateShape(shape).code(), absl::StatusCode::kInvalidArgument);
}

TEST(PresetsTest, ForwardFlopsCountParametersAndFullContextAttention) {
  const ModelShape shape = *FindPreset("124m");
  const int64_t n = CountParameters(shape).nanogpt;
  // nanoGPT's estimate_mfu: 6N + 12 * L * d * T per trained token, a third of
  // which is the forward pass.
  EXPECT_EQ(3 * ForwardFlopsPerToken(shape),
            6 * n + int64_t{12} * 12 * 768 * 1024);
}

}  // namespace
}  // namespace prism
