#include "scheduler/strategy/guided.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scheduler/synthetic_experiment.h"

namespace prism {
namespace {

using ::prism::testing::kBase64;
using ::prism::testing::Space64;
using ::prism::testing::SyntheticExperiment;
using ::testing::HasSubstr;

constexpr int64_t kSeeds[] = {1, 2};

GuidedPlan Plan(int budget, int initial) {
  GuidedPlan plan;
  plan.space = Space64();
  plan.baseline = kBase64;
  plan.budget = budget;
  plan.initial = initial;
  plan.seed = 11;
  return plan;
}

// Design is the plan's initial design.
std::vector<Schedule> Design(const GuidedPlan& plan) {
  absl::StatusOr<std::vector<Schedule>> design =
      GuidedInitialDesign(plan.space, plan.baseline, plan.initial, plan.seed);
  EXPECT_TRUE(design.ok()) << design.status();
  return design.ok() ? *std::move(design) : std::vector<Schedule>{};
}

// Queue adds `schedule`'s trials on every seed, as the coordinator does.
void Queue(SyntheticExperiment& e, const std::string& schedule) {
  for (int64_t seed : kSeeds) e.Pending(schedule, seed);
}

// Start plants the baseline and the initial design, queued.
SyntheticExperiment Start(const GuidedPlan& plan) {
  SyntheticExperiment e;
  Queue(e, kBase64);
  for (const Schedule& s : Design(plan)) {
    Queue(e, s.ToString());
  }
  return e;
}

GuidedDecision Decide(const GuidedPlan& plan, const SyntheticExperiment& e) {
  absl::StatusOr<GuidedDecision> d = DecideGuided(plan, e.trials(), e.Rank());
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : GuidedDecision{};
}

// Run finishes trials and applies decisions until one adds nothing with
// nothing pending; returns every addition in order and the last decision.
struct Search {
  std::vector<GuidedAddition> additions;
  GuidedDecision last;
  SyntheticExperiment experiment;
};
Search RunSearch(const GuidedPlan& plan) {
  Search run{{}, {}, Start(plan)};
  while (true) {
    run.experiment.FinishAll();
    run.last = Decide(plan, run.experiment);
    if (run.last.additions.empty()) return run;
    for (const GuidedAddition& a : run.last.additions) {
      Queue(run.experiment, a.schedule);
      run.additions.push_back(a);
    }
    // Deciding again on the applied state adds nothing: the slots are full.
    EXPECT_TRUE(Decide(plan, run.experiment).additions.empty());
  }
}

TEST(GuidedInitialDesignTest, DistinctValidSchedulesWithoutTheBaseline) {
  const std::vector<Schedule> design = Design(Plan(/*budget=*/10, 6));
  ASSERT_EQ(design.size(), 6u);
  std::set<std::string> seen;
  for (const Schedule& s : design) {
    EXPECT_NE(s.ToString(), kBase64);
    EXPECT_TRUE(InSpace(Space64(), s));
    EXPECT_TRUE(seen.insert(s.ToString()).second);
  }
  EXPECT_EQ(Design(Plan(/*budget=*/10, 6)), design);
  // More than the space holds: all of it but the baseline.
  EXPECT_EQ(Design(Plan(/*budget=*/500, 500)).size(), 119u);
}

TEST(GuidedInitialDesignTest, DefaultIsAQuarterOfTheBudgetAtLeastTheMinimum) {
  EXPECT_EQ(DefaultGuidedInitial(40), 10);
  EXPECT_EQ(DefaultGuidedInitial(12), kMinSurrogateSchedules);
  EXPECT_EQ(DefaultGuidedInitial(3), 3);
}

TEST(GuidedTest, WaitsForTheInitialDesign) {
  const GuidedPlan plan = Plan(/*budget=*/14, /*initial=*/6);
  const SyntheticExperiment e = Start(plan);
  const GuidedDecision d = Decide(plan, e);
  EXPECT_TRUE(d.additions.empty());
  EXPECT_TRUE(d.waiting_for_initial);
  EXPECT_EQ(d.tried, 6);
  EXPECT_EQ(d.in_flight, 6);
  EXPECT_THAT(DescribeGuidedDecision(plan, d),
              HasSubstr("initial design running (0 of 6 schedules settled)"));
}

TEST(GuidedTest, AlternatesSuggestionAndExplorationUntilTheBudget) {
  const GuidedPlan plan = Plan(/*budget=*/14, /*initial=*/6);
  const Search run = RunSearch(plan);
  ASSERT_EQ(run.additions.size(), 8u);
  std::set<std::string> seen = {kBase64};
  for (const Schedule& s : Design(plan)) {
    seen.insert(s.ToString());
  }
  for (size_t k = 0; k < run.additions.size(); ++k) {
    const GuidedAddition& a = run.additions[k];
    EXPECT_EQ(a.pick,
              k % 2 == 0 ? GuidedPick::kSuggestion : GuidedPick::kExploration)
        << k;
    EXPECT_TRUE(seen.insert(a.schedule).second)
        << "tried twice: " << a.schedule;
    EXPECT_TRUE(InSpace(plan.space, *ParseSchedule(a.schedule))) << a.schedule;
  }
  EXPECT_EQ(run.last.tried, 14);
  EXPECT_EQ(run.last.in_flight, 0);
  EXPECT_THAT(DescribeGuidedDecision(plan, run.last),
              HasSubstr("added nothing (budget reached); 14 of 14"));
}

TEST(GuidedTest, SameStateSameDecision) {
  const GuidedPlan plan = Plan(/*budget=*/14, /*initial=*/6);
  SyntheticExperiment e = Start(plan);
  e.FinishAll();
  const GuidedDecision a = Decide(plan, e);
  const GuidedDecision b = Decide(plan, e);
  ASSERT_EQ(a.additions.size(), 2u);
  ASSERT_EQ(b.additions.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a.additions[i].schedule, b.additions[i].schedule);
  }
  EXPECT_THAT(DescribeGuidedDecision(plan, a), HasSubstr("added suggestion "));
  EXPECT_THAT(DescribeGuidedDecision(plan, a), HasSubstr(" and exploration "));
}

TEST(GuidedTest, ExploresInsteadWhenTheSurrogateCannotFit) {
  const GuidedPlan plan = Plan(/*budget=*/10, /*initial=*/5);
  SyntheticExperiment e;
  const std::vector<Schedule> design = Design(plan);
  for (int64_t seed : kSeeds) {
    e.Finished(kBase64, seed);
    for (size_t i = 0; i < design.size(); ++i) {
      e.Finished(design[i].ToString(), seed, /*failed=*/i < 3);
    }
  }
  const GuidedDecision d = Decide(plan, e);
  ASSERT_EQ(d.additions.size(), 2u);
  EXPECT_EQ(d.additions[0].pick, GuidedPick::kExploration);
  EXPECT_EQ(d.additions[1].pick, GuidedPick::kExploration);
  EXPECT_THAT(d.fallback, HasSubstr("(there are 2)"));
  EXPECT_THAT(DescribeGuidedDecision(plan, d), HasSubstr("no suggestion: "));
}

TEST(GuidedTest, StopsWhenTheSpaceIsExhausted) {
  const GuidedPlan plan = Plan(/*budget=*/500, /*initial=*/100);
  const Search run = RunSearch(plan);
  EXPECT_EQ(run.additions.size(), 19u);  // 119 non-baseline schedules
  EXPECT_TRUE(run.last.exhausted);
  EXPECT_THAT(DescribeGuidedDecision(plan, run.last),
              HasSubstr("no untried schedule left"));
}

}  // namespace
}  // namespace prism
