#include "scheduler/strategy/racing.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/simulate/known_truth.h"

namespace prism {
namespace {

using ::testing::HasSubstr;

constexpr char kBase[] = "12x12";
// Deltas against the baseline: A clearly best, B close behind, the rest
// nowhere near.
const std::map<std::string, double>& Deltas() {
  static const auto* deltas = new std::map<std::string, double>{
      {kBase, 0.0},         {"3x3,6x3,12x6", -0.040},
      {"6x6,12x6", -0.030}, {"1x1,4x1,12x10", 0.010},
      {"4x4,12x8", 0.012},  {"2x2,6x4,12x6", 0.015},
      {"6x2,12x10", 0.020}};
  return *deltas;
}

SpaceSpec Shape() {
  SpaceSpec spec;
  spec.d_model = 768;
  spec.layers = 12;
  spec.base_heads = 12;
  return spec;
}

// Noise is a fixed pseudo-normal draw per (schedule, seed): a sum of 12
// uniforms from a hash, so the test is the same on every machine.
double Noise(const std::string& schedule, int64_t seed) {
  uint64_t h = std::hash<std::string>{}(schedule) ^
               (static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ULL);
  double sum = 0.0;
  for (int i = 0; i < 12; ++i) {
    h = h * 6364136223846793005ULL + 1442695040888963407ULL;
    sum += static_cast<double>(h >> 11) / 9007199254740992.0;
  }
  return sum - 6.0;
}

// How far the runner-up is behind the best on the test at hand (the
// budget and maximum are checked on a closer race).
double second_extra = 0.0;

double Loss(const std::string& schedule, int64_t seed) {
  const double extra = schedule == "6x6,12x6" ? second_extra : 0.0;
  return 3.0 + 0.02 * std::sin(static_cast<double>(seed)) +
         Deltas().at(schedule) + extra + 0.008 * Noise(schedule, seed);
}

// Experiment holds trials, finished and pending, as the coordinator stores
// them.
class Experiment {
 public:
  void Finished(const std::string& schedule, int64_t seed, bool lost = false) {
    TrialOutcome o;
    o.trial_id = next_id_++;
    o.schedule = schedule;
    o.seed = seed;
    o.is_baseline = schedule == kBase;
    o.state = lost ? OutcomeState::kFailed : OutcomeState::kCompleted;
    o.final_val_loss = Loss(schedule, seed);
    o.min_val_loss = o.final_val_loss;
    outcomes_.push_back(o);
    trials_.push_back(SeedTrial{schedule, seed, o.is_baseline, false});
  }
  void Apply(const RaceDecision& d) {
    for (const SeedAddition& a : d.additions) {
      trials_.push_back(SeedTrial{a.schedule, a.seed, a.is_baseline, true});
    }
  }
  // Finish finishes every pending trial; those in `lose` fail.
  void Finish(const std::set<std::pair<std::string, int64_t>>& lose = {}) {
    std::vector<SeedTrial> pending, kept;
    for (const SeedTrial& t : trials_)
      (t.pending ? pending : kept).push_back(t);
    trials_ = kept;
    for (const SeedTrial& t : pending) {
      Finished(t.schedule, t.seed, lose.count({t.schedule, t.seed}) > 0);
    }
  }
  RaceDecision Decide(const RacingPlan& plan) const {
    return DecideRace(plan, trials_, outcomes_);
  }
  const std::vector<SeedTrial>& trials() const { return trials_; }

 private:
  std::vector<SeedTrial> trials_;
  std::vector<TrialOutcome> outcomes_;
  int64_t next_id_ = 1;
};

RacingPlan Plan(int first = 3, int max = 12) {
  RacingPlan plan;
  plan.space = Shape();
  plan.baseline = kBase;
  plan.sequence = SeedSequence({7, 8, 9}, max);  // 7, 8, 9, 10, 11, ...
  plan.first = first;
  plan.steps = 100;
  plan.step_budget = 1e9;
  plan.racers = 4;
  return plan;
}

// The search's trials: every schedule on the spec's 3 seeds.
Experiment Searched() {
  Experiment e;
  for (const auto& [schedule, delta] : Deltas()) {
    for (int64_t seed : {7, 8, 9}) e.Finished(schedule, seed);
  }
  return e;
}

TEST(RacingTest, RacesTheContendersOnPairedSeedsUntilOneIsLeft) {
  Experiment e = Searched();
  const RacingPlan plan = Plan();
  RaceDecision d = e.Decide(plan);
  ASSERT_EQ(d.state, RaceState::kRacing) << d.note;
  EXPECT_GE(d.started, 2);
  // The next seed of the sequence, to the contenders, and the baseline's.
  std::set<std::string> first_round;
  for (const SeedAddition& a : d.additions) {
    EXPECT_EQ(a.seed, 10);
    first_round.insert(a.schedule);
  }
  EXPECT_TRUE(first_round.count(kBase));
  EXPECT_TRUE(first_round.count("3x3,6x3,12x6"));
  EXPECT_FALSE(first_round.count("6x2,12x10"));  // far behind: not raced
  EXPECT_TRUE(d.additions.back().is_baseline);
  // Applied, the same decision adds nothing more: it waits for them.
  e.Apply(d);
  const RaceDecision again = e.Decide(plan);
  EXPECT_EQ(again.state, RaceState::kWaiting);
  EXPECT_TRUE(again.additions.empty());

  int rounds = 0;
  while (!d.additions.empty() && rounds < 20) {
    e.Finish();
    d = e.Decide(plan);
    e.Apply(d);
    ++rounds;
  }
  EXPECT_EQ(d.state, RaceState::kSettled) << d.note;
  EXPECT_EQ(d.best, "3x3,6x3,12x6");
  EXPECT_FALSE(d.best_is_baseline);
  EXPECT_GT(d.best_seeds, 3);
  EXPECT_EQ(d.contenders, std::vector<std::string>{"3x3,6x3,12x6"});
  EXPECT_THAT(d.note, HasSubstr("best 3x3,6x3,12x6 settled on"));
  // Every trial it added is a (schedule, seed) stored once, on the
  // sequence, and the baseline has every seed any schedule has.
  std::set<std::pair<std::string, int64_t>> seen;
  std::set<int64_t> baseline_seeds, schedule_seeds;
  for (const SeedTrial& t : e.trials()) {
    EXPECT_TRUE(seen.insert({t.schedule, t.seed}).second)
        << t.schedule << " " << t.seed;
    (t.is_baseline ? baseline_seeds : schedule_seeds).insert(t.seed);
  }
  for (int64_t s : schedule_seeds) EXPECT_TRUE(baseline_seeds.count(s)) << s;
  EXPECT_EQ(d.seeds_added, static_cast<int>(e.trials().size()) -
                               3 * static_cast<int>(Deltas().size()));
  EXPECT_DOUBLE_EQ(d.steps_added, 100.0 * d.seeds_added);
}

TEST(RacingTest, StopsAtTheBudgetAndAtTheMaximum) {
  second_extra = -0.008;  // 0.002 behind the best: a close race
  Experiment e = Searched();
  second_extra = 0.0;
  RacingPlan plan = Plan();
  plan.step_budget = 150;  // not one round (at least 2 trials)
  RaceDecision d = e.Decide(plan);
  EXPECT_EQ(d.state, RaceState::kBudget);
  EXPECT_TRUE(d.additions.empty());
  EXPECT_THAT(d.note, HasSubstr("the racing budget is spent"));
  EXPECT_EQ(d.best, "3x3,6x3,12x6");  // the lowest mean of the contenders

  d = e.Decide(Plan(/*first=*/3, /*max=*/3));
  EXPECT_EQ(d.state, RaceState::kAtMax);
  EXPECT_TRUE(d.additions.empty());
  EXPECT_THAT(d.note, HasSubstr("unsettled at the maximum of 3 seeds"));
}

TEST(RacingTest, WaitsForTheSearchAndDropsAContenderWhoseTrialFailed) {
  Experiment e;
  for (const auto& [schedule, delta] : Deltas()) {
    for (int64_t seed : {7, 8}) e.Finished(schedule, seed);
  }
  RaceDecision pending =
      DecideRace(Plan(),
                 [&] {
                   std::vector<SeedTrial> t = e.trials();
                   t.push_back(SeedTrial{"6x6,12x6", 9, false, true});
                   return t;
                 }(),
                 {});
  EXPECT_EQ(pending.state, RaceState::kWaiting);
  EXPECT_TRUE(pending.additions.empty());

  Experiment racing = Searched();
  const RacingPlan plan = Plan();
  RaceDecision d = racing.Decide(plan);
  ASSERT_EQ(d.state, RaceState::kRacing);
  racing.Apply(d);
  racing.Finish({{"6x6,12x6", 10}});
  d = racing.Decide(plan);
  EXPECT_GE(d.dropped, 1);
  EXPECT_THAT(d.note, HasSubstr("left the race (a trial failed or diverged)"));
  for (const SeedAddition& a : d.additions) EXPECT_NE(a.schedule, "6x6,12x6");

  // A baseline trial that fails ends the race.
  Experiment lost = Searched();
  d = lost.Decide(plan);
  lost.Apply(d);
  lost.Finish({{kBase, 10}});
  d = lost.Decide(plan);
  EXPECT_EQ(d.state, RaceState::kBaselineLost);
  EXPECT_TRUE(d.additions.empty());
  EXPECT_THAT(d.note, HasSubstr("the baseline's trial on seed 10 failed"));
}

// Known truth: the contenders racing leaves hold the true best in at least
// 1 - alpha of the searches, on a null (every schedule ties the baseline)
// and on planted effects, with the seeds it adds (a smaller space than the
// benchmark's, for speed; bench/search_bench measures the full one).
TEST(RacingTest, TheContendersHoldTheTrueBestOnKnownTruth) {
  for (TruthStructure structure :
       {TruthStructure::kNull, TruthStructure::kSmooth}) {
    int held = 0, settled = 0;
    const int searches = 60;
    for (int i = 1; i <= searches; ++i) {
      KnownTruthSpec spec;
      spec.space = {32, 6, 4, {}, kDefaultMinRun, kDefaultMaxRun};
      spec.structure = structure;
      spec.seeds = 12;
      spec.curves = false;
      spec.seed = static_cast<uint64_t>(1000 + i);
      absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(spec);
      ASSERT_TRUE(truth.ok()) << truth.status();
      RacingPlan plan;
      plan.space = spec.space;
      plan.baseline = truth->baseline;
      plan.sequence = SeedSequence({}, 12);
      plan.first = 3;
      plan.steps = spec.steps;
      plan.step_budget = 0.3 * static_cast<double>(truth->schedules.size()) *
                         3 * static_cast<double>(spec.steps);
      std::map<std::pair<std::string, int64_t>, TrialOutcome> all;
      for (size_t t = 0; t < truth->trials.size(); ++t) {
        const KnownTruthTrial& k = truth->trials[t];
        all[{k.schedule, k.seed}] =
            TruthOutcome(k, static_cast<int64_t>(t) + 1);
      }
      std::vector<SeedTrial> trials;
      std::vector<TrialOutcome> outcomes;
      for (const auto& [key, o] : all) {
        if (key.second > 3) continue;
        trials.push_back(
            SeedTrial{key.first, key.second, o.is_baseline, false});
        outcomes.push_back(o);
      }
      RaceDecision d;
      for (int round = 0; round < 64; ++round) {
        d = DecideRace(plan, trials, outcomes);
        if (d.additions.empty()) break;
        for (const SeedAddition& a : d.additions) {
          trials.push_back(SeedTrial{a.schedule, a.seed, a.is_baseline, false});
          outcomes.push_back(all.at({a.schedule, a.seed}));
        }
      }
      std::set<std::string> kept(d.contenders.begin(), d.contenders.end());
      held += kept.count(truth->best) > 0;
      settled += d.state == RaceState::kSettled;
    }
    SCOPED_TRACE(TruthStructureName(structure));
    // 95% promised; 60 searches: at least 54 (3 binomial sd below 57).
    EXPECT_GE(held, 54) << "settled " << settled;
  }
}

TEST(RacingTest, DefaultMaximumIsFourTimesTheSeedsWithinTheLimit) {
  EXPECT_EQ(DefaultRacingMaxSeeds(3), 12);
  EXPECT_EQ(DefaultRacingMaxSeeds(20), kMaxPolicySeeds);
  EXPECT_EQ(DefaultRacingMaxSeeds(64), 64);
  EXPECT_STREQ(RaceStateName(RaceState::kBudget), "budget spent");
}

}  // namespace
}  // namespace prism
