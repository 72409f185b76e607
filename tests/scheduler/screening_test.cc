#include "scheduler/strategy/screening.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"

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

// Search is a screening search over Space() with one seed, rungs 10 and 30
// of a 90-step budget, brackets of 12.
ScreeningSearch Search(double grid_fraction) {
  ScreeningSearch s;
  s.plan = Plan(1.0 / 3);
  s.rungs = {10, 30};
  s.eta = 3;
  s.seeds = 1;
  s.steps = 90;
  s.grid_steps = static_cast<double>(All().size()) * 90.0;
  s.grid_fraction = grid_fraction;
  return s;
}

// Stored is the experiment's trials as stored: the baseline trained to the
// end, then each bracket's schedules in the order added.
class Stored {
 public:
  Stored() {
    AshaTrial b;
    b.schedule = Plan(0).baseline;
    b.seed = 1;
    b.is_baseline = true;
    b.val_loss = {{10, 1.0}, {30, 1.0}};
    trials_.push_back(b);
  }
  // Add stores the schedules, waiting at the first rung with a val loss of
  // 1 + Truth there.
  void Add(const std::vector<std::string>& schedules) {
    for (const std::string& s : schedules) {
      AshaTrial t;
      t.schedule = s;
      t.seed = 1;
      t.at_rung = true;
      t.target_steps = 10;
      t.val_loss[10] = 1.0 + Truth(s);
      trials_.push_back(t);
    }
  }
  const std::vector<AshaTrial>& trials() const { return trials_; }
  std::vector<AshaTrial>& mutable_trials() { return trials_; }

 private:
  std::vector<AshaTrial> trials_;
};

TEST(DefaultScreeningRungsTest, OneRungFewerThanAshaSoABracketKeepsFinalists) {
  // 60, then 60 (200 / 60)^(1/2) = 109.5: the first rung where ASHA's is.
  EXPECT_THAT(DefaultScreeningRungs(200, 3, 10),
              ::testing::ElementsAre(60, 110));
  EXPECT_EQ(DefaultScreeningRungs(200, 3, 10).front(),
            DefaultAshaRungs(200, 3, 10).front());
  EXPECT_THAT(DefaultScreeningRungs(180, 3, 20),
              ::testing::ElementsAre(60, 100));
  // A default bracket keeps 39 -> 13 -> 4 finalists for the verdict (ASHA's
  // three rungs would keep 1).
  ScreeningSearch s;
  s.rungs = DefaultScreeningRungs(200, kDefaultAshaEta, 10);
  s.eta = kDefaultAshaEta;
  s.seeds = 3;
  s.steps = 200;
  int finalists = kDefaultScreeningBracketSize;
  for (size_t k = 0; k < s.rungs.size(); ++k) {
    finalists = std::max(1, finalists / s.eta);
  }
  EXPECT_EQ(finalists, 4);
  // 39 x 60 + 13 x 50 + 4 x 90 steps a seed; two brackets and the baseline
  // fit the default 30% of a 120-schedule grid of 200 steps, three do not.
  EXPECT_DOUBLE_EQ(ScreeningBracketCost(s, kDefaultScreeningBracketSize),
                   3.0 * (39 * 60 + 13 * 50 + 4 * 90));
  const double grid = 120.0 * 3 * 200;
  const double baseline = 3.0 * 200;
  EXPECT_LE(baseline + 2 * ScreeningBracketCost(s, 39),
            kDefaultScreeningGridFraction * grid);
  EXPECT_GT(baseline + 3 * ScreeningBracketCost(s, 39),
            kDefaultScreeningGridFraction * grid);
}

TEST(DecideScreeningTest, FirstDecisionOpensARandomBracketAndRepeatsIt) {
  absl::StatusOr<ScreeningDecision> d = DecideScreening(Search(0.5), {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->brackets, 0);
  EXPECT_EQ(d->added.schedules.size(), 12u);
  EXPECT_EQ(d->added.model_picks, 0);
  EXPECT_EQ(DecideScreening(Search(0.5), {})->added.schedules,
            d->added.schedules);
  // The baseline's whole budget plus 12 x 10 + 4 x 20 + 1 x 60 steps.
  EXPECT_DOUBLE_EQ(d->projected_steps, 90.0 + 120.0 + 80.0 + 60.0);
  EXPECT_DOUBLE_EQ(ScreeningBracketCost(Search(0.5), 12), 260.0);
}

TEST(DecideScreeningTest,
     EachBracketIsHalvedOnItsOwnAndTheNextFollowsTheModel) {
  const ScreeningSearch search = Search(0.5);
  Stored stored;
  const std::vector<std::string> first =
      DecideScreening(search, {})->added.schedules;
  stored.Add(first);
  absl::StatusOr<ScreeningDecision> d =
      DecideScreening(search, stored.trials());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->brackets, 1);
  // The first rung is complete: its best third goes on, and bracket 1 opens
  // with the surrogate fitted on the rung's 12 paired scores.
  EXPECT_EQ(d->promotions.size(), 4u);
  ASSERT_EQ(d->added.schedules.size(), 12u);
  EXPECT_EQ(d->added.model_picks, 8);
  EXPECT_EQ(d->added.fitted_step, 10);
  for (const std::string& s : d->added.schedules) {
    EXPECT_EQ(std::count(first.begin(), first.end(), s), 0) << s;
  }
  // The same stored state (a restarted coordinator) gives the same decision.
  absl::StatusOr<ScreeningDecision> again =
      DecideScreening(search, stored.trials());
  EXPECT_EQ(again->added.schedules, d->added.schedules);
  ASSERT_EQ(again->promotions.size(), d->promotions.size());

  // Bracket 0's four go on to rung 30; bracket 1 waits at rung 10. Its
  // quota is its own 12 / 3, not a third of the 24 at the rung.
  Stored both = stored;
  for (AshaTrial& t : both.mutable_trials()) {
    for (const AshaPromotion& p : d->promotions) {
      if (t.schedule == p.schedule) {
        t.at_rung = false;
        t.target_steps = p.to_step;
      }
    }
  }
  both.Add(d->added.schedules);
  absl::StatusOr<ScreeningDecision> second =
      DecideScreening(search, both.trials());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->brackets, 2);
  EXPECT_EQ(second->promotions.size(), 4u);
  for (const AshaPromotion& p : second->promotions) {
    EXPECT_EQ(std::count(d->added.schedules.begin(), d->added.schedules.end(),
                         p.schedule),
              1)
        << p.schedule;
  }
  ASSERT_EQ(second->rungs.size(), 2u);
  EXPECT_EQ(second->rungs[0].members, 24);
  EXPECT_EQ(second->rungs[0].quota, 8);
  EXPECT_EQ(second->rungs[0].Promoted(), 8);
  EXPECT_EQ(second->rungs[0].entries.size(), 24u);
  EXPECT_EQ(second->rungs[1].members, 8);
  EXPECT_THAT(DescribeScreeningDecision(search, *second),
              HasSubstr("screening: bracket 2 opened"));
}

TEST(DecideScreeningTest, NoBracketOpensPastTheBudget) {
  // One bracket is 260 steps and the baseline 90: 350 of a grid of
  // All().size() x 90; a fraction that holds one bracket and not two.
  const double grid = static_cast<double>(All().size()) * 90.0;
  const ScreeningSearch search = Search(400.0 / grid);
  Stored stored;
  stored.Add(DecideScreening(search, {})->added.schedules);
  absl::StatusOr<ScreeningDecision> d =
      DecideScreening(search, stored.trials());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->budget_reached);
  EXPECT_TRUE(d->added.schedules.empty());
  EXPECT_EQ(d->promotions.size(), 4u);
  EXPECT_THAT(DescribeScreeningDecision(search, *d),
              HasSubstr("screening: budget reached"));
}

TEST(DecideScreeningTest, RefusesBadSettings) {
  EXPECT_THAT(DecideScreening(Search(0.0), {}).status().message(),
              HasSubstr("grid_fraction must be in (0, 1]"));
  ScreeningSearch no_rungs = Search(0.5);
  no_rungs.rungs.clear();
  EXPECT_EQ(DecideScreening(no_rungs, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  ScreeningSearch explore = Search(0.5);
  explore.plan.explore = -1.0;
  EXPECT_THAT(DecideScreening(explore, {}).status().message(),
              HasSubstr("explore must be in [0, 1]"));
}

}  // namespace
}  // namespace prism
