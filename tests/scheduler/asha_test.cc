#include "scheduler/asha.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<int64_t> kRungs = {10, 30};

AshaTrial AtRung(const std::string& schedule, int64_t seed, int64_t step,
                 double loss) {
  AshaTrial t;
  t.schedule = schedule;
  t.seed = seed;
  t.at_rung = true;
  t.target_steps = step;
  t.val_loss[step] = loss;
  return t;
}

AshaTrial Baseline(int64_t seed, std::map<int64_t, double> losses) {
  AshaTrial t;
  t.schedule = "4x4";
  t.seed = seed;
  t.is_baseline = true;
  t.val_loss = std::move(losses);
  return t;
}

std::vector<std::string> Promoted(const AshaDecision& d) {
  std::vector<std::string> out;
  for (const AshaPromotion& p : d.promotions) {
    out.push_back(absl::StrCat(p.schedule, "@", p.from_step, "->", p.to_step));
  }
  return out;
}

TEST(DefaultAshaRungsTest, DividesByEtaOnTheEvalGrid) {
  EXPECT_THAT(DefaultAshaRungs(270, 3, 10), ElementsAre(10, 30, 90));
  EXPECT_THAT(DefaultAshaRungs(100, 3, 10), ElementsAre(10, 30));
  EXPECT_THAT(DefaultAshaRungs(20, 3, 10), ElementsAre());
  EXPECT_EQ(DefaultAshaRungs(1000000, 2, 1).size(),
            static_cast<size_t>(kMaxDefaultAshaRungs));
}

TEST(CheckAshaPlanTest, RefusesEachProblemByName) {
  EXPECT_TRUE(CheckAshaPlan({10, 30}, 3, 90, 10).ok());
  const absl::Status eta = CheckAshaPlan({10}, 1, 90, 10);
  EXPECT_TRUE(absl::IsInvalidArgument(eta));
  EXPECT_THAT(eta.message(), HasSubstr("asha.eta must be at least 2 (got 1)"));
  const absl::Status past = CheckAshaPlan({10, 90}, 3, 90, 10);
  EXPECT_TRUE(absl::IsInvalidArgument(past));
  EXPECT_THAT(past.message(),
              HasSubstr("asha.rungs[1] = 90 is not below budget.steps (90)"));
  const absl::Status order = CheckAshaPlan({30, 30}, 3, 90, 10);
  EXPECT_THAT(order.message(), HasSubstr("strictly increase"));
  const absl::Status grid = CheckAshaPlan({15}, 3, 90, 10);
  EXPECT_THAT(grid.message(), HasSubstr("not a multiple of budget.eval_every"));
  EXPECT_THAT(CheckAshaPlan({}, 3, 20, 10).message(), HasSubstr("too short"));
  EXPECT_THAT(CheckAshaPlan({0}, 3, 20, 10).message(),
              HasSubstr("must be positive"));
}

TEST(DecideAshaTest, PromotesTheTopThirdByRawLossWithoutABaseline) {
  std::vector<AshaTrial> trials;
  const std::vector<std::pair<std::string, double>> losses = {
      {"a", 3.0}, {"b", 2.0}, {"c", 4.0}, {"d", 1.0}, {"e", 5.0}, {"f", 6.0}};
  for (const auto& [s, loss] : losses) trials.push_back(AtRung(s, 1, 10, loss));
  const AshaDecision d = DecideAsha(kRungs, 3, trials);
  EXPECT_THAT(Promoted(d), ElementsAre("d@10->30", "b@10->30"));
  ASSERT_EQ(d.rungs.size(), 2u);
  EXPECT_FALSE(d.rungs[0].paired);
  EXPECT_EQ(d.rungs[0].quota, 2);
  EXPECT_EQ(d.rungs[0].entries.front().schedule, "d");
  EXPECT_TRUE(d.rungs[0].entries[1].promoted);
  EXPECT_FALSE(d.rungs[0].entries[2].promoted);
  EXPECT_TRUE(d.rungs[1].entries.empty());
}

TEST(DecideAshaTest, AsynchronousRuleWaitsForEnoughSchedules) {
  // Two schedules at the rung: floor(2 / 3) = 0 promotions yet.
  std::vector<AshaTrial> trials = {AtRung("a", 1, 10, 1.0),
                                   AtRung("b", 1, 10, 2.0)};
  EXPECT_TRUE(DecideAsha(kRungs, 3, trials).promotions.empty());
  // A third arrives: the best one goes on, even though it came first.
  trials.push_back(AtRung("c", 1, 10, 3.0));
  EXPECT_THAT(Promoted(DecideAsha(kRungs, 3, trials)), ElementsAre("a@10->30"));
}

TEST(DecideAshaTest, PromotedSchedulesAreNotPromotedAgain) {
  std::vector<AshaTrial> trials = {AtRung("a", 1, 10, 1.0),
                                   AtRung("b", 1, 10, 2.0),
                                   AtRung("c", 1, 10, 3.0)};
  trials[0].at_rung = false;  // promoted: now training to 30
  trials[0].target_steps = 30;
  const AshaDecision d = DecideAsha(kRungs, 3, trials);
  EXPECT_TRUE(d.promotions.empty());
  EXPECT_TRUE(d.rungs[0].entries[0].promoted);
}

TEST(DecideAshaTest, LastRungPromotesToTheWholeBudget) {
  std::vector<AshaTrial> trials;
  for (const char* s : {"a", "b", "c"}) {
    AshaTrial t = AtRung(s, 1, 30, std::string(s) == "c" ? 0.5 : 2.0);
    t.val_loss[10] = 1.0;
    trials.push_back(t);
  }
  EXPECT_THAT(Promoted(DecideAsha(kRungs, 3, trials)), ElementsAre("c@30->0"));
}

TEST(DecideAshaTest, PairsByBaselineSeedWhenTheBaselineReachedTheRung) {
  // Raw losses favour "a", but on seed 1 the baseline is far lower: paired,
  // "b" (seed 2, slightly below its baseline) is the best.
  std::vector<AshaTrial> trials = {
      AtRung("a", 1, 10, 2.0), AtRung("b", 2, 10, 2.5), AtRung("c", 2, 10, 2.9),
      Baseline(1, {{10, 1.0}}), Baseline(2, {{10, 2.6}})};
  const AshaDecision d = DecideAsha(kRungs, 3, trials);
  EXPECT_TRUE(d.rungs[0].paired);
  EXPECT_THAT(Promoted(d), ElementsAre("b@10->30"));
  EXPECT_NEAR(d.rungs[0].entries[0].score, -0.1, 1e-12);
  // Without the baseline's loss on one seed the rung falls back to raw.
  trials[4].val_loss.clear();
  const AshaDecision raw = DecideAsha(kRungs, 3, trials);
  EXPECT_FALSE(raw.rungs[0].paired);
  EXPECT_THAT(Promoted(raw), ElementsAre("a@10->30"));
}

TEST(DecideAshaTest, ScheduleWaitsUntilEverySeedStopsAtTheRung) {
  std::vector<AshaTrial> trials = {
      AtRung("a", 1, 10, 1.0), AtRung("a", 2, 10, 1.0),
      AtRung("b", 1, 10, 2.0), AtRung("b", 2, 10, 2.0),
      AtRung("c", 1, 10, 3.0), AtRung("c", 2, 10, 3.0)};
  trials[1].at_rung = false;  // reported its rung point, not yet completed
  EXPECT_TRUE(DecideAsha(kRungs, 3, trials).promotions.empty());
  trials[1].at_rung = true;
  EXPECT_THAT(Promoted(DecideAsha(kRungs, 3, trials)), ElementsAre("a@10->30"));
  // A schedule missing a seed's loss has not reached the rung.
  trials[5].val_loss.clear();
  EXPECT_EQ(DecideAsha(kRungs, 3, trials).rungs[0].entries.size(), 2u);
}

TEST(DescribeAshaDecisionTest, NamesPromotionsAndRungs) {
  std::vector<AshaTrial> trials = {AtRung("a", 1, 10, 1.0),
                                   AtRung("b", 1, 10, 2.0),
                                   AtRung("c", 1, 10, 3.0)};
  EXPECT_EQ(DescribeAshaDecision(DecideAsha(kRungs, 3, trials)),
            "asha: promoted a at 10 to 30; rung 10: 1 of 3 promoted (raw); "
            "rung 30: 0 of 0 promoted (raw)");
}

}  // namespace
}  // namespace prism
