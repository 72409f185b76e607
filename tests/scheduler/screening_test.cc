#include "scheduler/screening.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/schedule.h"
#include "scheduler/space.h"

namespace prism {
namespace {

using ::testing::HasSubstr;

SpaceSpec Space() { return SpaceSpec{64, 8, 8, {}, 2, 4}; }

std::vector<std::string> All() {
  std::vector<std::string> out;
  absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(Space());
  while (e->Next()) out.push_back(Schedule(e->heads()).ToString());
  return out;
}

// Truth is a smooth effect: wider first layers are better.
double Truth(const std::string& s) {
  const Schedule x = *ParseSchedule(s);
  return 0.01 * static_cast<double>(x.heads().front());
}

ScreeningPlan Plan(double explore) {
  ScreeningPlan plan;
  plan.space = Space();
  plan.baseline = Schedule::Uniform(8, 8).ToString();
  plan.size = 12;
  plan.explore = explore;
  plan.seed = 5;
  return plan;
}

TEST(NextScreeningBracketTest, FirstBracketIsRandomUntriedAndDeterministic) {
  const std::vector<std::string> all = All();
  std::set<std::string> tried(all.begin(), all.begin() + 10);
  absl::StatusOr<ScreeningBracket> b =
      NextScreeningBracket(Plan(1.0 / 3), {}, tried, 0);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->schedules.size(), 12u);
  EXPECT_EQ(b->model_picks, 0);
  EXPECT_EQ(b->fitted_step, 0);
  std::set<std::string> distinct(b->schedules.begin(), b->schedules.end());
  EXPECT_EQ(distinct.size(), 12u);
  for (const std::string& s : b->schedules) {
    EXPECT_EQ(tried.count(s), 0u) << s;
    EXPECT_NE(s, Plan(0).baseline);
  }
  EXPECT_EQ(NextScreeningBracket(Plan(1.0 / 3), {}, tried, 0)->schedules,
            b->schedules);
}

TEST(NextScreeningBracketTest, LaterBracketsFollowTheSurrogateOfTheTopRung) {
  const std::vector<std::string> all = All();
  ASSERT_GT(all.size(), 60u);
  std::vector<RungScore> scores;
  std::set<std::string> tried;
  // 30 schedules scored at rung 20 (noise only), 20 of them at rung 60
  // (the smooth effect): the surrogate learns from rung 60.
  for (int i = 0; i < 30; ++i) {
    const std::string& s = all[2 * i + 1];
    if (s == Plan(0).baseline) continue;
    tried.insert(s);
    scores.push_back(RungScore{s, 20, (i % 2 == 0) ? 0.01 : -0.01, 3});
    if (i % 3 != 0) scores.push_back(RungScore{s, 60, Truth(s), 3});
  }
  absl::StatusOr<ScreeningBracket> b =
      NextScreeningBracket(Plan(1.0 / 3), scores, tried, 1);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->fitted_step, 60);
  EXPECT_EQ(b->model_picks, 8);  // 12 - round(12 / 3)
  ASSERT_EQ(b->schedules.size(), 12u);
  // The model's picks are better than the untried schedules on average.
  double picks = 0.0, untried = 0.0;
  int n = 0;
  for (int i = 0; i < b->model_picks; ++i) picks += Truth(b->schedules[i]);
  for (const std::string& s : all) {
    if (tried.count(s) || s == Plan(0).baseline) continue;
    untried += Truth(s);
    ++n;
  }
  EXPECT_LT(picks / b->model_picks, untried / n);
  // No exploration: every pick is the model's.
  EXPECT_EQ(NextScreeningBracket(Plan(0.0), scores, tried, 1)->model_picks, 12);
}

TEST(NextScreeningBracketTest, RefusesABadPlan) {
  ScreeningPlan plan = Plan(0.5);
  plan.size = 0;
  EXPECT_THAT(NextScreeningBracket(plan, {}, {}, 0).status().message(),
              HasSubstr("bracket size must be at least 1"));
  EXPECT_THAT(NextScreeningBracket(Plan(1.5), {}, {}, 0).status().message(),
              HasSubstr("explore must be in [0, 1]"));
}

}  // namespace
}  // namespace prism
