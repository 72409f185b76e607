#include "scheduler/strategy/asha.h"

#include <algorithm>
#include <deque>
#include <random>
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
constexpr AshaMode kAsync = AshaMode::kAsynchronous;

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

TEST(DefaultAshaRungsTest, FirstAtThreeTenthsThenGeometricOnTheEvalGrid) {
  // 60, then 60 (200 / 60)^(1/3) = 89.6 and 60 (200 / 60)^(2/3) = 133.9.
  EXPECT_THAT(DefaultAshaRungs(200, 3, 10), ElementsAre(60, 90, 130));
  EXPECT_THAT(DefaultAshaRungs(270, 3, 10), ElementsAre(80, 120, 180));
  EXPECT_THAT(DefaultAshaRungs(100, 3, 10), ElementsAre(30, 40, 70));
  // A coarse eval grid: 54, 80.7, 120.5 to the nearest multiple of 20.
  EXPECT_THAT(DefaultAshaRungs(180, 3, 20), ElementsAre(60, 80, 120));
  // Rungs that round to the same eval are one rung; none reaches the budget.
  EXPECT_THAT(DefaultAshaRungs(20, 3, 10), ElementsAre(10));
  EXPECT_THAT(DefaultAshaRungs(10, 3, 10), ElementsAre());
  EXPECT_EQ(DefaultAshaRungs(1000000, 2, 1).size(),
            static_cast<size_t>(kDefaultAshaRungCount));
  // Fewer rungs: the same first, the rest spaced over the same span.
  EXPECT_THAT(DefaultAshaRungs(200, 3, 10, /*count=*/2), ElementsAre(60, 110));
  EXPECT_THAT(DefaultAshaRungs(200, 3, 10, /*count=*/1), ElementsAre(60));
  EXPECT_THAT(DefaultAshaRungs(200, 3, 10, /*count=*/0), ElementsAre());
  // The same rungs whatever eta: eta sets the cut, not where it happens.
  EXPECT_EQ(DefaultAshaRungs(200, 2, 10), DefaultAshaRungs(200, 4, 10));
  for (int64_t steps : {30, 100, 200, 270, 1000, 12345}) {
    EXPECT_TRUE(
        CheckAshaPlan(DefaultAshaRungs(steps, 3, 10), 3, steps, 10).ok())
        << steps;
  }
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
  const AshaDecision d = DecideAsha(kRungs, 3, kAsync, trials);
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
  EXPECT_TRUE(DecideAsha(kRungs, 3, kAsync, trials).promotions.empty());
  // A third arrives: the best one goes on, even though it came first.
  trials.push_back(AtRung("c", 1, 10, 3.0));
  EXPECT_THAT(Promoted(DecideAsha(kRungs, 3, kAsync, trials)),
              ElementsAre("a@10->30"));
}

TEST(DecideAshaTest, PromotedSchedulesAreNotPromotedAgain) {
  std::vector<AshaTrial> trials = {AtRung("a", 1, 10, 1.0),
                                   AtRung("b", 1, 10, 2.0),
                                   AtRung("c", 1, 10, 3.0)};
  trials[0].at_rung = false;  // promoted: now training to 30
  trials[0].target_steps = 30;
  const AshaDecision d = DecideAsha(kRungs, 3, kAsync, trials);
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
  EXPECT_THAT(Promoted(DecideAsha(kRungs, 3, kAsync, trials)),
              ElementsAre("c@30->0"));
}

TEST(DecideAshaTest, PairsByBaselineSeedWhenTheBaselineReachedTheRung) {
  // Raw losses favour "a", but on seed 1 the baseline is far lower: paired,
  // "b" (seed 2, slightly below its baseline) is the best.
  std::vector<AshaTrial> trials = {
      AtRung("a", 1, 10, 2.0), AtRung("b", 2, 10, 2.5), AtRung("c", 2, 10, 2.9),
      Baseline(1, {{10, 1.0}}), Baseline(2, {{10, 2.6}})};
  const AshaDecision d = DecideAsha(kRungs, 3, kAsync, trials);
  EXPECT_TRUE(d.rungs[0].paired);
  EXPECT_THAT(Promoted(d), ElementsAre("b@10->30"));
  EXPECT_NEAR(d.rungs[0].entries[0].score, -0.1, 1e-12);
  // Without the baseline's loss on one seed the rung falls back to raw.
  trials[4].val_loss.clear();
  const AshaDecision raw = DecideAsha(kRungs, 3, kAsync, trials);
  EXPECT_FALSE(raw.rungs[0].paired);
  EXPECT_THAT(Promoted(raw), ElementsAre("a@10->30"));
}

TEST(DecideAshaTest, ScheduleWaitsUntilEverySeedStopsAtTheRung) {
  std::vector<AshaTrial> trials = {
      AtRung("a", 1, 10, 1.0), AtRung("a", 2, 10, 1.0),
      AtRung("b", 1, 10, 2.0), AtRung("b", 2, 10, 2.0),
      AtRung("c", 1, 10, 3.0), AtRung("c", 2, 10, 3.0)};
  trials[1].at_rung = false;  // reported its rung point, not yet completed
  EXPECT_TRUE(DecideAsha(kRungs, 3, kAsync, trials).promotions.empty());
  trials[1].at_rung = true;
  EXPECT_THAT(Promoted(DecideAsha(kRungs, 3, kAsync, trials)),
              ElementsAre("a@10->30"));
  // A schedule missing a seed's loss has not reached the rung.
  trials[5].val_loss.clear();
  EXPECT_EQ(DecideAsha(kRungs, 3, kAsync, trials).rungs[0].entries.size(), 2u);
}

TEST(DefaultAshaPlanTest, StagedOnOneSeedFromThreeSeedsElseThreeRungs) {
  // 70% of 200 is 140; eta 5 on one screen seed.
  const AshaPlan staged = DefaultAshaPlan(200, 10, 3);
  EXPECT_THAT(staged.rungs, ElementsAre(140));
  EXPECT_EQ(staged.eta, kStagedEta);
  EXPECT_EQ(staged.screen_seeds, 1);
  // 70% of 150 = 105, the nearest multiple of 20 is 100.
  EXPECT_THAT(DefaultAshaPlan(150, 20, 5).rungs, ElementsAre(100));
  // Two seeds: the classic plan on every seed.
  const AshaPlan classic = DefaultAshaPlan(200, 10, 2);
  EXPECT_THAT(classic.rungs, ElementsAre(60, 90, 130));
  EXPECT_EQ(classic.eta, kDefaultAshaEta);
  EXPECT_EQ(classic.screen_seeds, 2);
  // A budget too short for a staged rung below it falls back too.
  const AshaPlan short_budget = DefaultAshaPlan(10, 10, 3);
  EXPECT_TRUE(short_budget.rungs.empty());
  EXPECT_EQ(short_budget.screen_seeds, 3);
  for (int64_t steps : {30, 100, 200, 270, 1000}) {
    const AshaPlan p = DefaultAshaPlan(steps, 10, 3);
    EXPECT_TRUE(CheckAshaPlan(p.rungs, p.eta, steps, 10).ok()) << steps;
  }
}

TEST(DecideAshaTest, StagedSeedsScoreTheFirstRungOnTheScreenSeedsAlone) {
  // Three schedules screened on seed 1; the experiment has seeds 1, 2, 3.
  const std::vector<int64_t> rungs = {10, 30};
  std::vector<AshaTrial> trials = {AtRung("a", 1, 10, 1.0),
                                   AtRung("b", 1, 10, 2.0),
                                   AtRung("c", 1, 10, 3.0),
                                   Baseline(1, {{10, 2.5}, {30, 2.0}}),
                                   Baseline(2, {{10, 2.5}, {30, 2.0}}),
                                   Baseline(3, {{10, 2.5}, {30, 2.0}})};
  const std::vector<int64_t> screen = {1};
  const std::vector<int64_t> all = {1, 2, 3};
  const AshaDecision d =
      DecideAsha(rungs, 3, AshaMode::kSynchronous, trials, screen, all);
  ASSERT_TRUE(d.rungs[0].complete);
  EXPECT_TRUE(d.rungs[0].paired);
  EXPECT_THAT(Promoted(d), ElementsAre("a@10->30"));
  // "a" goes on on seed 1 and starts on seeds 2 and 3, to the next rung.
  ASSERT_EQ(d.new_seeds.size(), 2u);
  EXPECT_EQ(d.new_seeds[0].schedule, "a");
  EXPECT_EQ(d.new_seeds[0].seed, 2);
  EXPECT_EQ(d.new_seeds[0].to_step, 30);
  EXPECT_EQ(d.new_seeds[1].seed, 3);
  EXPECT_THAT(DescribeAshaDecision(d),
              HasSubstr("2 trial(s) added on seeds not screened on"));

  // Applied: "a" trains on three seeds to 30; seeds 2 and 3 have not reached
  // the first rung yet. The first rung still counts "a" as promoted (on its
  // screen seed), nothing is promoted or added again, and the second rung
  // waits for "a" on every seed.
  trials[0].at_rung = false;
  trials[0].target_steps = 30;
  AshaTrial a2;
  a2.schedule = "a";
  a2.seed = 2;
  a2.target_steps = 30;
  AshaTrial a3 = a2;
  a3.seed = 3;
  trials.push_back(a2);
  trials.push_back(a3);
  const AshaDecision running =
      DecideAsha(rungs, 3, AshaMode::kSynchronous, trials, screen, all);
  EXPECT_TRUE(running.promotions.empty());
  EXPECT_TRUE(running.new_seeds.empty());
  EXPECT_EQ(running.rungs[0].entries.size(), 3u);
  EXPECT_EQ(running.rungs[0].Promoted(), 1);
  EXPECT_EQ(running.rungs[1].members, 1);
  EXPECT_FALSE(running.rungs[1].complete);

  // Seed 1 and seed 2 stop at 30, seed 3 not yet: still waiting.
  for (size_t i : {size_t{0}, trials.size() - 2}) {
    trials[i].at_rung = true;
    trials[i].val_loss[30] = 1.5;
  }
  EXPECT_TRUE(DecideAsha(rungs, 3, AshaMode::kSynchronous, trials, screen, all)
                  .promotions.empty());
  trials.back().at_rung = true;
  trials.back().val_loss[30] = 1.7;
  const AshaDecision last =
      DecideAsha(rungs, 3, AshaMode::kSynchronous, trials, screen, all);
  EXPECT_THAT(Promoted(last), ElementsAre("a@30->0"));
  EXPECT_TRUE(last.new_seeds.empty());
  EXPECT_EQ(last.rungs[1].entries[0].seeds, 3);
  EXPECT_NEAR(last.rungs[1].entries[0].score, (1.5 + 1.5 + 1.7) / 3 - 2.0,
              1e-12);
}

TEST(DecideAshaTest, ASynchronousRungCompletesWhenAMemberEndedBeforeIt) {
  // Four schedules; "d" diverged at step 5 and will never reach step 10.
  std::vector<AshaTrial> trials = {AtRung("a", 1, 10, 1.0),
                                   AtRung("b", 1, 10, 2.0),
                                   AtRung("c", 1, 10, 3.0)};
  AshaTrial d;
  d.schedule = "d";
  d.seed = 1;
  d.target_steps = 10;
  trials.push_back(d);
  // Still training: the rung waits for it.
  AshaDecision wait = DecideAsha(kRungs, 3, AshaMode::kSynchronous, trials);
  EXPECT_FALSE(wait.rungs[0].complete);
  EXPECT_TRUE(wait.promotions.empty());
  // Ended: it is out of the rung, which completes with the quota of its four
  // members (floor(4 / 3) = 1).
  trials.back().ended = true;
  const AshaDecision done =
      DecideAsha(kRungs, 3, AshaMode::kSynchronous, trials);
  EXPECT_TRUE(done.rungs[0].complete);
  EXPECT_EQ(done.rungs[0].out, 1);
  EXPECT_EQ(done.rungs[0].entries.size(), 3u);
  EXPECT_THAT(Promoted(done), ElementsAre("a@10->30"));
  EXPECT_THAT(DescribeAshaDecision(done), HasSubstr("1 ended before it"));
  // A trial that ended after reaching the rung is scored there as usual.
  trials[1].ended = true;
  EXPECT_EQ(DecideAsha(kRungs, 3, AshaMode::kSynchronous, trials)
                .rungs[0]
                .entries.size(),
            3u);
}

// Replay drives the rule as the coordinator does, one worker at a time: the
// schedules reach the first rung in `order`, each promotion joins the end of
// the queue, and after every arrival the rule decides again. A schedule's
// score at every rung is its quality (lower is better). Returns the final
// decision (every trial finished or waiting).
AshaDecision Replay(AshaMode mode, const std::vector<int64_t>& rungs, int eta,
                    const std::vector<std::pair<std::string, double>>& order) {
  std::vector<AshaTrial> trials;
  std::map<std::string, double> quality;
  std::deque<size_t> queue;
  for (const auto& [s, q] : order) {
    AshaTrial t;
    t.schedule = s;
    t.seed = 1;
    t.target_steps = rungs.front();
    quality[s] = q;
    queue.push_back(trials.size());
    trials.push_back(t);
  }
  AshaDecision d;
  while (!queue.empty()) {
    AshaTrial& t = trials[queue.front()];
    queue.pop_front();
    for (int64_t r : rungs) {
      if (t.target_steps == 0 || r <= t.target_steps) {
        t.val_loss[r] = quality[t.schedule];
      }
    }
    t.at_rung = t.target_steps != 0;
    d = DecideAsha(rungs, eta, mode, trials);
    for (const AshaPromotion& p : d.promotions) {
      for (size_t i = 0; i < trials.size(); ++i) {
        if (trials[i].schedule != p.schedule) continue;
        trials[i].at_rung = false;
        trials[i].target_steps = p.to_step;
        queue.push_back(i);
      }
    }
  }
  return DecideAsha(rungs, eta, mode, trials);
}

// Orders returns 27 schedules, "s00" the best, in four arrival orders:
// best first, best last (worst first), alternating, and shuffled.
std::vector<std::vector<std::pair<std::string, double>>> Orders() {
  std::vector<std::pair<std::string, double>> best_first;
  for (int i = 0; i < 27; ++i) {
    best_first.emplace_back(absl::StrCat("s", i < 10 ? "0" : "", i), i);
  }
  std::vector<std::pair<std::string, double>> best_last(best_first.rbegin(),
                                                        best_first.rend());
  std::vector<std::pair<std::string, double>> alternating;
  for (int i = 0; i < 27; ++i) {
    alternating.push_back(best_first[i % 2 == 0 ? i / 2 : 26 - i / 2]);
  }
  std::vector<std::pair<std::string, double>> shuffled = best_first;
  std::mt19937_64 rng(27);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  return {best_first, best_last, alternating, shuffled};
}

TEST(DecideAshaTest, OrderProofModesPromoteAtMostTheQuotaInAnyArrivalOrder) {
  const std::vector<int64_t> rungs = {10, 30, 90};
  for (AshaMode mode : {AshaMode::kSynchronous, AshaMode::kGuarded}) {
    int order_index = 0;
    for (const auto& order : Orders()) {
      SCOPED_TRACE(absl::StrCat(AshaModeName(mode), " order ", order_index++));
      const AshaDecision d = Replay(mode, rungs, 3, order);
      ASSERT_EQ(d.rungs.size(), 3u);
      int members = 27;
      for (const AshaRungView& r : d.rungs) {
        EXPECT_TRUE(r.complete);
        EXPECT_EQ(r.members, members);
        EXPECT_EQ(static_cast<int>(r.entries.size()), members);
        // ceil(members / eta), slack 0.
        EXPECT_LE(r.Promoted(), (members + 2) / 3);
        EXPECT_EQ(r.Promoted(), r.quota);
        members = r.Promoted();
      }
      EXPECT_EQ(d.rungs[0].Promoted(), 9);
      EXPECT_EQ(d.rungs[1].Promoted(), 3);
      EXPECT_EQ(d.rungs[2].Promoted(), 1);
      // The one that trains the whole budget is the best.
      EXPECT_EQ(d.rungs[2].entries.front().schedule, "s00");
      EXPECT_TRUE(d.rungs[2].entries.front().promoted);
    }
  }
}

TEST(DecideAshaTest, SynchronousRulePromotesTheTrueTopThirdInAnyOrder) {
  const std::vector<int64_t> rungs = {10, 30};
  for (const auto& order : Orders()) {
    const AshaDecision d = Replay(AshaMode::kSynchronous, rungs, 3, order);
    for (int i = 0; i < 27; ++i) {
      EXPECT_EQ(d.rungs[0].entries[i].promoted, i < 9) << i;
    }
  }
}

TEST(DecideAshaTest, AsynchronousRuleOverPromotesWhenTheBestArriveLast) {
  // The failure of issue #27: when each arrival improves on the ones before
  // it, each is in the current top third, so far more than 1 / eta go on.
  const AshaDecision d =
      Replay(AshaMode::kAsynchronous, {10, 30}, 3, Orders()[1]);
  EXPECT_GT(d.rungs[0].Promoted(), (27 + 2) / 3);
}

TEST(DecideAshaTest, SynchronousRuleWaitsForEveryMember) {
  std::vector<AshaTrial> trials = {AtRung("a", 1, 10, 1.0),
                                   AtRung("b", 1, 10, 2.0),
                                   AtRung("c", 1, 10, 3.0)};
  AshaTrial training;
  training.schedule = "d";
  training.seed = 1;
  training.target_steps = 10;
  trials.push_back(training);
  AshaDecision d = DecideAsha(kRungs, 3, AshaMode::kSynchronous, trials);
  EXPECT_TRUE(d.promotions.empty());
  EXPECT_FALSE(d.rungs[0].complete);
  EXPECT_EQ(d.rungs[0].members, 4);
  EXPECT_EQ(d.rungs[0].quota, 1);
  trials[3] = AtRung("d", 1, 10, 0.5);
  d = DecideAsha(kRungs, 3, AshaMode::kSynchronous, trials);
  EXPECT_TRUE(d.rungs[0].complete);
  EXPECT_THAT(Promoted(d), ElementsAre("d@10->30"));
  EXPECT_EQ(d.rungs[1].members, 1);
}

TEST(DecideAshaTest, GuardedRuleSpendsHalfTheQuotaEarly) {
  // 12 members, quota 4: while 9 of them wait, the 3 best of those may go
  // on early, capped at floor(4 / 2) = 2.
  std::vector<AshaTrial> trials;
  for (int i = 0; i < 9; ++i) {
    trials.push_back(AtRung(absl::StrCat("s", i), 1, 10, 1.0 + i));
  }
  for (int i = 9; i < 12; ++i) {
    AshaTrial t;
    t.schedule = absl::StrCat("s", i);
    t.seed = 1;
    t.target_steps = 10;
    trials.push_back(t);
  }
  AshaDecision d = DecideAsha(kRungs, 3, AshaMode::kGuarded, trials);
  EXPECT_THAT(Promoted(d), ElementsAre("s0@10->30", "s1@10->30"));
  EXPECT_EQ(d.rungs[0].quota, 4);
}

TEST(DescribeAshaDecisionTest, NamesPromotionsAndRungs) {
  std::vector<AshaTrial> trials = {AtRung("a", 1, 10, 1.0),
                                   AtRung("b", 1, 10, 2.0),
                                   AtRung("c", 1, 10, 3.0)};
  EXPECT_EQ(
      DescribeAshaDecision(DecideAsha(kRungs, 3, kAsync, trials)),
      "asha: promoted a at 10 to 30; rung 10: 1 of 3 promoted, quota 1 (raw); "
      "rung 30: 0 of 0 promoted, quota 0 (raw)");
}

}  // namespace
}  // namespace prism
