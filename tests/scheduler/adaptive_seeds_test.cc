#include "scheduler/strategy/adaptive_seeds.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/analysis/ranking.h"

namespace prism {
namespace {

constexpr char kBase[] = "12x12";
constexpr char kA[] = "3x3,6x3,12x6";
constexpr char kB[] = "6x6,12x6";
constexpr char kC[] = "1x1,4x1,12x10";

SpaceSpec Shape() {
  SpaceSpec spec;
  spec.d_model = 768;
  spec.layers = 12;
  spec.base_heads = 12;
  return spec;
}

// Experiment holds an experiment's trials: finished ones (with a final val
// loss) and pending ones, and decides on them as the coordinator would.
class Experiment {
 public:
  void Finished(const std::string& schedule, int64_t seed, double loss) {
    TrialOutcome o;
    o.trial_id = next_id_++;
    o.schedule = schedule;
    o.seed = seed;
    o.is_baseline = schedule == kBase;
    o.final_val_loss = loss;
    o.min_val_loss = loss;
    outcomes_.push_back(o);
    trials_.push_back(SeedTrial{schedule, seed, o.is_baseline, false});
  }
  void Pending(const std::string& schedule, int64_t seed) {
    trials_.push_back(SeedTrial{schedule, seed, schedule == kBase, true});
  }
  // Apply adds the decision's trials as pending.
  void Apply(const SeedDecision& d) {
    for (const SeedAddition& a : d.additions) Pending(a.schedule, a.seed);
  }
  // Finish finishes every pending trial with loss(schedule, seed).
  template <typename LossFn>
  void Finish(LossFn loss) {
    std::vector<SeedTrial> pending;
    std::vector<SeedTrial> kept;
    for (const SeedTrial& t : trials_) {
      (t.pending ? pending : kept).push_back(t);
    }
    trials_ = kept;
    for (const SeedTrial& t : pending) {
      Finished(t.schedule, t.seed, loss(t.schedule, t.seed));
    }
  }
  // Decide ranks with the policy's looks, as the coordinator does (paired t:
  // these experiments have too few schedules to borrow variance).
  SeedDecision Decide(const std::vector<int64_t>& sequence) const {
    VerdictOptions options;
    options.method = VerdictMethod::kPairedT;
    options.seed_sequence = sequence;
    options.looks = LooksForSeeds(2, static_cast<int>(sequence.size()));
    return DecideSeeds(sequence, kBase, trials_,
                       RankSchedules(Shape(), kBase, outcomes_, options));
  }
  // SeedsOf returns how many trials `schedule` has.
  int SeedsOf(const std::string& schedule) const {
    int n = 0;
    for (const SeedTrial& t : trials_) n += t.schedule == schedule;
    return n;
  }

 private:
  int64_t next_id_ = 1;
  std::vector<TrialOutcome> outcomes_;
  std::vector<SeedTrial> trials_;
};

// The baseline's loss per seed; a schedule's is the baseline's plus a delta.
double BaseLoss(int64_t seed) { return 3.5 + 0.25 * (seed % 3); }

TEST(SeedSequenceTest, ListedSeedsFirstThenTheIntegersAboveTheLargest) {
  EXPECT_EQ(SeedSequence({}, 4), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(SeedSequence({5, 2}, 4), (std::vector<int64_t>{5, 2, 6, 7}));
  EXPECT_EQ(SeedSequence({7, 8, 9}, 3), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(SeedSequence({0}, 2), (std::vector<int64_t>{0, 1}));
}

TEST(DecideSeedsTest, AClearlyBetterScheduleStopsAtMin) {
  Experiment e;
  for (int64_t seed : {1, 2}) e.Finished(kBase, seed, BaseLoss(seed));
  e.Finished(kA, 1, BaseLoss(1) - 0.5);
  e.Finished(kA, 2, BaseLoss(2) - 0.52);
  const SeedDecision d = e.Decide({1, 2, 3, 4});
  EXPECT_TRUE(d.additions.empty());
  EXPECT_EQ(d.resolved, 1);
  EXPECT_EQ(DescribeSeedDecision(d),
            "added no seed; 1 resolved, 0 at max, 0 waiting");
}

TEST(DecideSeedsTest, AnInconclusiveScheduleGrowsToMaxWithTheBaseline) {
  Experiment e;
  auto loss = [](const std::string& schedule, int64_t seed) {
    if (schedule == kBase) return BaseLoss(seed);
    return BaseLoss(seed) + (seed % 2 == 0 ? 0.1 : -0.1);
  };
  for (int64_t seed : {1, 2}) {
    e.Finished(kBase, seed, loss(kBase, seed));
    e.Finished(kA, seed, loss(kA, seed));
  }
  const std::vector<int64_t> sequence = {1, 2, 3, 4, 5};
  SeedDecision d = e.Decide(sequence);
  ASSERT_EQ(d.additions.size(), 2u);
  EXPECT_EQ(d.additions[0].schedule, kA);
  EXPECT_EQ(d.additions[0].seed, 3);
  EXPECT_EQ(d.additions[0].reason, SeedReason::kInconclusive);
  EXPECT_TRUE(d.additions[1].is_baseline);
  EXPECT_EQ(d.additions[1].seed, 3);
  EXPECT_EQ(DescribeSeedDecision(d),
            "added seed 3 to 1 schedule (1 inconclusive) and the baseline; 0 "
            "resolved, 0 at max, 0 waiting");
  int rounds = 0;
  while (!d.additions.empty()) {
    ASSERT_LT(++rounds, 10);
    e.Apply(d);
    e.Finish(loss);
    d = e.Decide(sequence);
  }
  EXPECT_EQ(rounds, 3);
  EXPECT_EQ(e.SeedsOf(kA), 5);
  EXPECT_EQ(e.SeedsOf(kBase), 5);
  EXPECT_EQ(d.at_max, 1);
}

TEST(DecideSeedsTest, SchedulesThatNeedSeedsGrowAndPendingOnesWait) {
  Experiment e;
  for (int64_t seed : {1, 2}) e.Finished(kBase, seed, BaseLoss(seed));
  // A and B need seeds (one paired seed each); C is still training.
  e.Finished(kA, 1, BaseLoss(1));
  e.Finished(kB, 1, BaseLoss(1) + 0.1);
  e.Pending(kC, 1);
  e.Finished(kC, 2, BaseLoss(2));
  const SeedDecision d = e.Decide({1, 2, 3});
  // Seed 2 has a baseline trial already: only the schedules get one.
  ASSERT_EQ(d.additions.size(), 2u);
  EXPECT_EQ(d.additions[0].schedule, kA);  // schedule order
  EXPECT_EQ(d.additions[1].schedule, kB);
  for (const SeedAddition& a : d.additions) {
    EXPECT_EQ(a.seed, 2);
    EXPECT_EQ(a.reason, SeedReason::kNeedsSeeds);
  }
  EXPECT_EQ(d.waiting, 1);
}

TEST(DecideSeedsTest, AScheduleWaitsForTheBaselineTrialsOfItsSeeds) {
  Experiment e;
  e.Finished(kBase, 1, BaseLoss(1));
  e.Pending(kBase, 2);
  e.Finished(kA, 1, BaseLoss(1) - 0.1);
  e.Finished(kA, 2, BaseLoss(2) + 0.1);
  const SeedDecision d = e.Decide({1, 2, 3});
  EXPECT_TRUE(d.additions.empty());
  EXPECT_EQ(d.waiting, 1);
}

TEST(DecideSeedsTest, OneNewBaselineTrialServesEverySchedule) {
  Experiment e;
  for (int64_t seed : {1, 2}) {
    e.Finished(kBase, seed, BaseLoss(seed));
    e.Finished(kA, seed, BaseLoss(seed) + (seed == 1 ? 0.1 : -0.1));
    e.Finished(kB, seed, BaseLoss(seed) + (seed == 1 ? -0.2 : 0.2));
  }
  const SeedDecision d = e.Decide({1, 2, 3});
  ASSERT_EQ(d.additions.size(), 3u);
  int baseline = 0;
  for (const SeedAddition& a : d.additions) {
    EXPECT_EQ(a.seed, 3);
    baseline += a.is_baseline;
  }
  EXPECT_EQ(baseline, 1);
}

TEST(DecideSeedsTest, BetterAndWorseStopAndOnlyInconclusiveOnesGrow) {
  Experiment e;
  for (int64_t seed : {1, 2}) e.Finished(kBase, seed, BaseLoss(seed));
  // A is clearly better and C clearly worse: resolved, whatever their
  // intervals overlap. B is inconclusive: it grows.
  e.Finished(kA, 1, BaseLoss(1) - 0.5);
  e.Finished(kA, 2, BaseLoss(2) - 0.502);
  e.Finished(kB, 1, BaseLoss(1) - 0.3);
  e.Finished(kB, 2, BaseLoss(2) + 0.2);
  e.Finished(kC, 1, BaseLoss(1) + 0.3);
  e.Finished(kC, 2, BaseLoss(2) + 0.3002);
  const SeedDecision d = e.Decide({1, 2, 3});
  EXPECT_EQ(d.resolved, 2);  // A and C
  ASSERT_EQ(d.additions.size(), 2u);
  EXPECT_EQ(d.additions[0].schedule, kB);
  EXPECT_EQ(d.additions[0].reason, SeedReason::kInconclusive);
  EXPECT_TRUE(d.additions[1].is_baseline);
}

TEST(DecideSeedsTest, DecidingAgainAfterApplyingAddsNothing) {
  Experiment e;
  for (int64_t seed : {1, 2}) {
    e.Finished(kBase, seed, BaseLoss(seed));
    e.Finished(kA, seed, BaseLoss(seed) + (seed == 1 ? 0.1 : -0.1));
    e.Finished(kB, seed, BaseLoss(seed) - 0.5 - 0.01 * seed);
  }
  const SeedDecision first = e.Decide({1, 2, 3, 4});
  ASSERT_FALSE(first.additions.empty());
  e.Apply(first);
  const SeedDecision second = e.Decide({1, 2, 3, 4});
  EXPECT_TRUE(second.additions.empty());
  // A was inconclusive and grew (its trial is pending); B is better.
  EXPECT_EQ(second.waiting, 1);
  EXPECT_EQ(second.resolved, 1);
}

}  // namespace
}  // namespace prism
