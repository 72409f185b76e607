#include "scheduler/space/principles.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

using ::testing::HasSubstr;

TEST(PrinciplesTest, NamesAreStable) {
  EXPECT_STREQ(PrincipleName(Principle::kSmooth), "smooth");
  EXPECT_STREQ(PrincipleName(Principle::kBaseline), "baseline");
  EXPECT_STREQ(PrincipleName(Principle::kPow2), "pow2");
}

TEST(PrinciplesTest, ParsesNoneAllAndLists) {
  EXPECT_EQ(*ParsePrinciples("none"), PrincipleSet::None());
  EXPECT_EQ(*ParsePrinciples("ALL"), PrincipleSet::All());
  absl::StatusOr<PrincipleSet> some = ParsePrinciples("pow2, Smooth,pow2");
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_TRUE(some->smooth);
  EXPECT_FALSE(some->baseline);
  EXPECT_TRUE(some->pow2);
  EXPECT_EQ(*ParsePrinciples("smooth,baseline,pow2"), PrincipleSet::All());
}

TEST(PrinciplesTest, EverySubsetRoundTripsThroughToString) {
  for (int mask = 0; mask < 8; ++mask) {
    PrincipleSet set;
    set.Set(Principle::kSmooth, mask & 1);
    set.Set(Principle::kBaseline, mask & 2);
    set.Set(Principle::kPow2, mask & 4);
    EXPECT_EQ(set.Has(Principle::kBaseline), (mask & 2) != 0);
    absl::StatusOr<PrincipleSet> back = ParsePrinciples(set.ToString());
    ASSERT_TRUE(back.ok()) << set.ToString();
    EXPECT_EQ(*back, set) << set.ToString();
  }
  EXPECT_EQ(PrincipleSet::None().ToString(), "none");
  EXPECT_EQ(PrincipleSet::All().ToString(), "all");
  PrincipleSet two;
  two.smooth = two.pow2 = true;
  EXPECT_EQ(two.ToString(), "smooth,pow2");
}

TEST(PrinciplesTest, UnknownNamesAreInvalidArgument) {
  for (const char* text : {"smoth", "smooth,fast", "none,all", "", "smooth,"}) {
    absl::StatusOr<PrincipleSet> p = ParsePrinciples(text);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_THAT(std::string(ParsePrinciples("smooth,fast").status().message()),
              HasSubstr("unknown principle 'fast'"));
}

}  // namespace
}  // namespace prism
