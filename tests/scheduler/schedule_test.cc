#include "scheduler/space/schedule.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

using ::testing::HasSubstr;

TEST(ScheduleTest, ParsesTheCanonicalForm) {
  absl::StatusOr<Schedule> s = ParseSchedule("3x3,6x3,12x6");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->layers(), 12);
  EXPECT_EQ(s->heads(),
            std::vector<int>({3, 3, 3, 6, 6, 6, 12, 12, 12, 12, 12, 12}));
  EXPECT_EQ(s->heads(3), 6);
  EXPECT_FALSE(s->IsUniform());
  EXPECT_EQ(s->ToString(), "3x3,6x3,12x6");
}

TEST(ScheduleTest, FormatAndParseRoundTrip) {
  const std::vector<std::vector<int>> cases = {
      {12},
      {12, 12, 12},
      {1, 2, 3, 4, 5},
      {3, 3, 3, 6, 6, 6, 12, 12, 12, 12, 12, 12},
      {64, 64, 1, 1, 64},  // not monotone: format does not judge validity
      std::vector<int>(4096, 7),
  };
  for (const auto& heads : cases) {
    const Schedule s(heads);
    absl::StatusOr<Schedule> back = ParseSchedule(s.ToString());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, s);
    EXPECT_EQ(back->ToString(), s.ToString());
  }
}

TEST(ScheduleTest, AcceptsWhitespaceAndMergesEqualBlocks) {
  absl::StatusOr<Schedule> s = ParseSchedule(" 2x1 , 2x1,4X2 ");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ToString(), "2x2,4x2");
}

TEST(ScheduleTest, UniformAndEmpty) {
  EXPECT_EQ(Schedule::Uniform(12, 12).ToString(), "12x12");
  EXPECT_TRUE(Schedule::Uniform(12, 12).IsUniform());
  EXPECT_EQ(Schedule().ToString(), "");
  EXPECT_EQ(Schedule().layers(), 0);
}

TEST(ScheduleTest, OrdersLexicographicallyByLayer) {
  EXPECT_LT(Schedule({1, 12}), Schedule({2, 2}));
  EXPECT_LT(Schedule({2, 2, 12}), Schedule({2, 12, 12}));
  EXPECT_NE(Schedule({2, 12}), Schedule({12, 12}));
}

TEST(ScheduleTest, EveryParseErrorNamesTheProblem) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "schedule is empty"},
      {"   ", "schedule is empty"},
      {"3x,12x6", "schedule '3x,12x6': block 1 '3x' needs HEADSxLAYERS"},
      {"12x6,x3", "block 2 'x3' needs HEADSxLAYERS"},
      {"12", "block 1 '12' needs HEADSxLAYERS"},
      {"3x3,,12x6", "block 2 '' is empty"},
      {"3x3,", "block 2 '' is empty"},
      {"ax3", "block 1 'ax3' needs HEADSxLAYERS with integer HEADS and LAYERS"},
      {"3x3x3", "block 1 '3x3x3' needs HEADSxLAYERS with integer"},
      {"3.5x2", "integer HEADS and LAYERS"},
      {"99999999999x2", "integer HEADS and LAYERS"},
      {"0x3", "block 1 '0x3' has 0 heads; heads must be positive"},
      {"-3x3", "has -3 heads"},
      {"3x0", "block 1 '3x0' has 0 layers; layers must be positive"},
      {"3x-1", "has -1 layers"},
      {"12x4000,12x97", "more than 4096 layers"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Schedule> s = ParseSchedule(c.text);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.message))
        << c.text;
  }
}

TEST(ScheduleTest, LongInputIsTruncatedInErrors) {
  const std::string text = std::string(1000, '7') + "x";
  absl::StatusOr<Schedule> s = ParseSchedule(text);
  ASSERT_FALSE(s.ok());
  EXPECT_LT(s.status().message().size(), 300u);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("...'"));
}

}  // namespace
}  // namespace prism
