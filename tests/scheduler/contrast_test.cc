#include "scheduler/space/contrast.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/analysis/principle_analysis.h"

namespace prism {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> Names(const std::vector<Schedule>& schedules) {
  std::vector<std::string> names;
  for (const Schedule& s : schedules) names.push_back(s.ToString());
  return names;
}

// The demo's shape: d_model 96 with 6 heads gives head dims 96, 48, 32, 24
// and 16, so a schedule can break pow2 alone.
const SpaceSpec kDemoShape{.d_model = 96, .layers = 6, .base_heads = 6};

TEST(ContrastSetTest, DemoShapeHasPrincipledSchedulesAndOneViolatorKindEach) {
  absl::StatusOr<ContrastSet> set = BuildContrastSet(kDemoShape, 2);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(Names(set->principled), ElementsAre("3x3,6x3", "3x2,6x4"));
  ASSERT_EQ(set->violators.size(), 3u);
  // Nearest first by L1 distance to a principled schedule, then kept in
  // canonical order: 2x2,6x4 and 4x2,6x4 are each 2 heads x 2 layers away.
  EXPECT_THAT(Names(set->violators[static_cast<int>(Principle::kPow2)]),
              ElementsAre("2x2,6x4", "4x2,6x4"));
  EXPECT_THAT(Names(set->violators[static_cast<int>(Principle::kSmooth)]),
              ElementsAre("3x1,6x5"));
  EXPECT_THAT(Names(set->violators[static_cast<int>(Principle::kBaseline)]),
              ElementsAre("3x4,6x2"));
}

TEST(ContrastSetTest, EveryViolatorBreaksExactlyItsPrinciple) {
  absl::StatusOr<ContrastSet> set = BuildContrastSet(kDemoShape, 3);
  ASSERT_TRUE(set.ok()) << set.status();
  for (const Schedule& s : set->principled) {
    const SchedulePrinciples r = ReportPrinciples(kDemoShape, s);
    EXPECT_TRUE(r.smooth && r.baseline && r.pow2) << s.ToString();
  }
  for (int i = 0; i < 3; ++i) {
    for (const Schedule& s : set->violators[i]) {
      const SchedulePrinciples r = ReportPrinciples(kDemoShape, s);
      for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(r.Satisfies(kAllPrinciples[j]), i != j)
            << s.ToString() << " principle " << j;
      }
    }
  }
}

// The point of the set: the principle analysis estimates all three effects
// from one seed per schedule, and recovers planted ones exactly when the
// deltas follow the additive model.
TEST(ContrastSetTest, PrincipleAnalysisEstimatesEveryPrincipleOnIt) {
  absl::StatusOr<ContrastSet> set = BuildContrastSet(kDemoShape, 2);
  ASSERT_TRUE(set.ok()) << set.status();
  const double kIntercept = 0.01, kEffect[] = {0.02, 0.05, -0.03};
  std::vector<ScheduleDelta> deltas;
  int n = 0;
  for (const Schedule& s : set->All()) {
    const SchedulePrinciples r = ReportPrinciples(kDemoShape, s);
    ScheduleDelta d;
    d.mean_delta = kIntercept + 0.001 * ((n++ % 3) - 1);
    for (int i = 0; i < 3; ++i) {
      const bool violated = !r.Satisfies(kAllPrinciples[i]);
      d.violated.Set(kAllPrinciples[i], violated);
      if (violated) d.mean_delta += kEffect[i];
    }
    deltas.push_back(d);
  }
  const PrincipleAnalysis a = AnalyzePrinciples(deltas);
  ASSERT_EQ(a.effects.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(a.effects[i].status, EffectStatus::kEstimated) << i;
    EXPECT_NEAR(*a.effects[i].effect, kEffect[i], 0.003) << i;
  }
}

TEST(ContrastSetTest, PowerOfTwoWidthCannotBreakPow2) {
  // tiny's own width: every divisor of 128 is a power of two.
  absl::StatusOr<ContrastSet> set =
      BuildContrastSet({.d_model = 128, .layers = 6, .base_heads = 4}, 2);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->violators[static_cast<int>(Principle::kPow2)], IsEmpty());
  EXPECT_EQ(set->principled.size(), 4u);
}

TEST(ContrastSetTest, RefusesBadArguments) {
  EXPECT_THAT(BuildContrastSet(kDemoShape, 0).status().message(),
              HasSubstr("per_principle must be at least 1"));
  EXPECT_EQ(BuildContrastSet({.d_model = 96, .layers = 6, .base_heads = 5}, 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ContrastSet> huge =
      BuildContrastSet({.d_model = 720720, .layers = 24, .base_heads = 720}, 1);
  EXPECT_THAT(huge.status().message(), HasSubstr("enumerates the whole space"));
}

}  // namespace
}  // namespace prism
