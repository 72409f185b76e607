// Search strategies through the services: adaptive seeds, guided
// search and ASHA, driven by a fake worker with planted losses.
// A real coordinator (SQLite file, gRPC on loopback, fake clock)
// driven through the generated stubs (service_fixture.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/space/schedule.h"
#include "tests/server/service_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// AdaptiveSeedsTest drives experiments with a seeds policy through a fake
// worker that completes every trial with a planted loss.
class AdaptiveSeedsTest : public ServiceTest {
 protected:
  using LossFn = std::function<double(const std::string&, int64_t)>;

  // RunQueued leases and completes trials until none is left to lease;
  // returns how many it completed.
  int RunQueued(const std::string& worker, const LossFn& loss,
                int limit = 1000) {
    int n = 0;
    while (n < limit) {
      const v1::TrialTask task = Lease(worker_token_, worker);
      if (task.trial().id() == 0) break;
      v1::CompleteResponse done;
      EXPECT_TRUE(Complete(worker_token_, worker, task.trial(),
                           loss(task.trial().schedule(), task.trial().seed()),
                           &done)
                      .ok());
      ++n;
    }
    return n;
  }

  // CompleteInStorageOnly leases the next trial and completes it in the
  // store directly, as if the coordinator died before deciding on it.
  void CompleteInStorageOnly(const std::string& worker, const LossFn& loss) {
    const v1::TrialTask task = Lease(worker_token_, worker);
    ASSERT_NE(task.trial().id(), 0);
    v1::TrialMetrics metrics;
    metrics.set_final_val_loss(
        loss(task.trial().schedule(), task.trial().seed()));
    metrics.set_steps(100);
    ASSERT_TRUE(
        coordinator_->store()
            ->CompleteTrial(storage::AttemptRef{task.trial().id(),
                                                task.trial().attempt(), worker},
                            metrics, {}, clock_.NowMs())
            .ok());
  }

  v1::CompareResponse CompareWithBaseline(int64_t id,
                                          const std::string& schedule) {
    v1::CompareRequest req;
    req.set_experiment_id(id);
    req.set_schedule_a("4x6");
    req.set_schedule_b(schedule);
    v1::CompareResponse resp;
    auto ctx = Ctx(viewer_);
    EXPECT_TRUE(results_->Compare(ctx.get(), req, &resp).ok());
    return resp;
  }

  static v1::ExperimentSpec Adaptive(const std::vector<std::string>& schedules,
                                     const std::vector<int64_t>& seeds, int min,
                                     int max) {
    v1::ExperimentSpec spec = Spec(schedules, seeds);
    spec.mutable_seeds_policy()->set_min(min);
    spec.mutable_seeds_policy()->set_max(max);
    return spec;
  }
};

constexpr char kBetter[] = "2x2,4x4";
constexpr char kNoisy[] = "1x2,4x4";

TEST_F(AdaptiveSeedsTest,
       InconclusiveSchedulesGetSeedsUntilResolvedThenTheExperimentIsDone) {
  const int64_t id = Submit(alice_, Adaptive({kBetter, kNoisy}, {}, 2, 4));
  ASSERT_GT(id, 0);
  EXPECT_EQ(GetExperiment(id).counts().total(), 6);
  EXPECT_THAT(GetExperiment(id).spec().seeds(), ElementsAre(1, 2, 3, 4));
  // kBetter is 0.1 below the baseline on every seed; kNoisy 0.05 above on
  // odd seeds, 0.03 on even ones. Three schedules are too few to borrow
  // variance (paired t); the looks at 2, 3 and 4 seeds spend 0.031, 0.010
  // and 0.009 of alpha. kBetter is better at the first look; kNoisy is
  // inconclusive at 2 seeds (p 0.156) and at 3 (p 0.023 > 0.010), worse at
  // 4 (p 0.006 < 0.009).
  const LossFn loss = [](const std::string& schedule, int64_t seed) {
    if (schedule == kBetter) return 2.9;
    if (schedule == kNoisy) return seed % 2 == 1 ? 3.05 : 3.03;
    return 3.0;
  };
  const std::string worker = Register(worker_token_);
  EXPECT_EQ(RunQueued(worker, loss), 10);
  const v1::Experiment e = GetExperiment(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(e.counts().total(), 10);
  EXPECT_EQ(e.counts().completed(), 10);
  EXPECT_EQ(e.seeds_added(), 4);
  EXPECT_EQ(e.seeds_note(), "added no seed; 2 resolved, 0 at max, 0 waiting");
  const auto seeds = SeedsBySchedule(id);
  EXPECT_THAT(seeds.at(kBetter), ElementsAre(1, 2));
  EXPECT_THAT(seeds.at(kNoisy), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(seeds.at("4x6"), ElementsAre(1, 2, 3, 4));

  const v1::RankResponse rank = RankExperiment(id);
  ASSERT_EQ(rank.verdicts().looks_size(), 3);
  EXPECT_EQ(rank.verdicts().looks(0).seeds(), 2);
  for (const v1::RankedSchedule& r : rank.schedules()) {
    if (r.schedule() == kBetter) {
      EXPECT_EQ(r.verdict(), v1::VERDICT_BETTER);
      EXPECT_EQ(r.decided_at_seeds(), 2);
    }
    if (r.schedule() == kNoisy) {
      EXPECT_EQ(r.verdict(), v1::VERDICT_WORSE);
      EXPECT_EQ(r.decided_at_seeds(), 4);
      EXPECT_GT(r.adjusted_delta().low(), 0.0);
    }
  }

  const v1::CompareResponse better = CompareWithBaseline(id, kBetter);
  EXPECT_EQ(better.verdict(), v1::VERDICT_BETTER);
  ASSERT_TRUE(better.has_p_value());
  EXPECT_EQ(better.p_value(), 0.0);
  const v1::CompareResponse noisy = CompareWithBaseline(id, kNoisy);
  EXPECT_EQ(noisy.verdict(), v1::VERDICT_WORSE);
  EXPECT_EQ(noisy.delta().n(), 4);
  EXPECT_LT(noisy.p_value(), 0.01);
}

TEST_F(AdaptiveSeedsTest, ARestartBetweenRoundsNeitherLosesNorRepeatsSeeds) {
  const int64_t id = Submit(alice_, Adaptive({kNoisy}, {11, 20}, 2, 4));
  ASSERT_GT(id, 0);
  // A noisy tie: 0.1 above the baseline on odd seeds, 0.1 below on even.
  const LossFn loss = [](const std::string& schedule, int64_t seed) {
    if (schedule == kNoisy) return seed % 2 == 1 ? 3.1 : 2.9;
    return 3.0;
  };
  std::string worker = Register(worker_token_);
  EXPECT_EQ(RunQueued(worker, loss, /*limit=*/4), 4);
  v1::Experiment e = GetExperiment(id);
  EXPECT_EQ(e.counts().total(), 6);
  EXPECT_EQ(e.counts().queued(), 2);
  EXPECT_EQ(e.seeds_added(), 2);
  EXPECT_EQ(e.seeds_note(),
            "added seed 21 to 1 schedule (1 inconclusive) and the baseline; 0 "
            "resolved, 0 at max, 0 waiting");

  Restart();
  e = GetExperiment(id);
  EXPECT_EQ(e.counts().total(), 6);
  EXPECT_EQ(e.seeds_added(), 2);
  worker = Register(worker_token_, worker);
  // Finish one trial of the round, restart, then the other.
  EXPECT_EQ(RunQueued(worker, loss, /*limit=*/1), 1);
  Restart();
  EXPECT_EQ(GetExperiment(id).counts().total(), 6);
  EXPECT_EQ(RunQueued(worker, loss, /*limit=*/1), 1);
  EXPECT_EQ(GetExperiment(id).counts().total(), 8);
  Restart();
  EXPECT_EQ(GetExperiment(id).counts().total(), 8);
  EXPECT_EQ(RunQueued(worker, loss), 2);

  e = GetExperiment(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(e.counts().total(), 8);
  EXPECT_EQ(e.seeds_added(), 4);
  EXPECT_EQ(e.seeds_note(), "added no seed; 0 resolved, 1 at max, 0 waiting");
  const auto seeds = SeedsBySchedule(id);
  EXPECT_THAT(seeds.at(kNoisy), ElementsAre(11, 20, 21, 22));
  EXPECT_THAT(seeds.at("4x6"), ElementsAre(11, 20, 21, 22));
  EXPECT_EQ(CompareWithBaseline(id, kNoisy).verdict(),
            v1::VERDICT_INCONCLUSIVE);
}

TEST_F(AdaptiveSeedsTest, ARoundACrashInterruptedRunsAtTheNextStart) {
  const int64_t id = Submit(alice_, Adaptive({kNoisy}, {}, 2, 3));
  const LossFn loss = [](const std::string& schedule, int64_t seed) {
    if (schedule == kNoisy) return seed % 2 == 1 ? 3.1 : 2.9;
    return 3.0;
  };
  const std::string worker = Register(worker_token_);
  EXPECT_EQ(RunQueued(worker, loss, /*limit=*/3), 3);
  // The last trial of the round completes in storage only, as if the
  // coordinator died before its seeds decision.
  CompleteInStorageOnly(worker, loss);
  v1::Experiment e = GetExperiment(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_ACTIVE);  // not done: seeds undecided
  EXPECT_EQ(e.counts().total(), 4);

  Restart();
  e = GetExperiment(id);
  EXPECT_EQ(e.counts().total(), 6);
  EXPECT_EQ(e.seeds_added(), 2);
  EXPECT_EQ(RunQueued(worker, loss), 2);
  EXPECT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(GetExperiment(id).counts().total(), 6);
}

TEST_F(AdaptiveSeedsTest, BadPoliciesAreRefusedWithOneLine) {
  grpc::Status status;
  EXPECT_EQ(Submit(alice_, Adaptive({kNoisy}, {}, 1, 4), &status), 0);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("seeds_policy.min must be at least 2"));
  EXPECT_EQ(CountExperiments(), 0);
}

// GuidedTest drives STRATEGY_GUIDED experiments on the tiny preset's space
// (d_model 128, 6 layers, 4 base heads: 21 schedules) through the same fake
// worker, with a loss that falls as the first layer gets wider heads.
// Racing for the best (issue 39) on a grid: the contenders get paired
// seeds past the spec's until one is left; decisions survive restarts and a
// decision a crash interrupted runs at the next start.
TEST_F(AdaptiveSeedsTest, RacingSettlesTheBestOnPairedSeedsAcrossRestarts) {
  v1::ExperimentSpec spec =
      Spec({"2x2,4x4", "1x2,4x4", "1x3,4x3", "2x3,4x3"}, {1, 2, 3});
  spec.mutable_racing()->set_max_seeds(8);
  spec.mutable_racing()->set_budget(1.0);
  const int64_t id = Submit(alice_, spec);
  ASSERT_GT(id, 0);
  EXPECT_EQ(GetExperiment(id).counts().total(), 15);
  // 2x2,4x4 is 0.07 better than the baseline, 1x2,4x4 0.05; the others
  // 0.03 worse; a seed offset shared by all, and noise of about 0.01 (a
  // fixed draw per schedule and seed).
  const LossFn loss = [](const std::string& schedule, int64_t seed) {
    const double offset = 0.05 * std::sin(static_cast<double>(seed));
    uint64_t h = std::hash<std::string>{}(schedule) ^
                 (static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ULL);
    double sum = 0.0;
    for (int i = 0; i < 12; ++i) {
      h = h * 6364136223846793005ULL + 1442695040888963407ULL;
      sum += static_cast<double>(h >> 11) / 9007199254740992.0;
    }
    double delta = 0.03;
    if (schedule == "4x6") delta = 0.0;
    if (schedule == "2x2,4x4") delta = -0.07;
    if (schedule == "1x2,4x4") delta = -0.05;
    return 3.0 + offset + delta + 0.01 * (sum - 6.0);
  };
  std::string worker = Register(worker_token_);
  // The grid (15 trials) and the first racing round.
  EXPECT_EQ(RunQueued(worker, loss, /*limit=*/15), 15);
  v1::Experiment e = GetExperiment(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_ACTIVE);
  const int after_first = e.counts().total();
  ASSERT_GT(after_first, 15) << e.seeds_note();
  EXPECT_THAT(e.seeds_note(), HasSubstr("racing"));
  // Restart between rounds: nothing lost, nothing repeated.
  Restart();
  EXPECT_EQ(GetExperiment(id).counts().total(), after_first);
  worker = Register(worker_token_, worker);
  // The round's last trial completes in storage only, as if the
  // coordinator died before its racing decision; the next start decides.
  const int round = after_first - 15;
  if (round > 1) {
    EXPECT_EQ(RunQueued(worker, loss, round - 1), round - 1);
  }
  CompleteInStorageOnly(worker, loss);
  EXPECT_EQ(GetExperiment(id).counts().total(), after_first);
  Restart();
  worker = Register(worker_token_, worker);
  const int after_restart = GetExperiment(id).counts().total();
  RunQueued(worker, loss);
  e = GetExperiment(id);
  ASSERT_EQ(e.state(), v1::EXPERIMENT_DONE) << e.seeds_note();
  EXPECT_GE(after_restart, after_first);

  // Every (schedule, seed) once; seeds past the spec's continue it, and the
  // baseline has every seed any schedule has.
  const auto seeds = SeedsBySchedule(id);
  for (const auto& [schedule, list] : seeds) {
    std::set<int64_t> distinct(list.begin(), list.end());
    EXPECT_EQ(distinct.size(), list.size()) << schedule;
    for (int64_t s : list) {
      EXPECT_GE(s, 1);
      EXPECT_LE(s, 8);
      const auto& base = seeds.at("4x6");
      EXPECT_NE(std::find(base.begin(), base.end(), s), base.end()) << s;
    }
  }
  EXPECT_EQ(seeds.at("1x3,4x3").size(), 3u);  // far behind: never raced
  EXPECT_GT(seeds.at("2x2,4x4").size(), 3u);

  const v1::RankResponse rank = RankExperiment(id);
  ASSERT_TRUE(rank.has_race());
  EXPECT_EQ(rank.race().best(), "2x2,4x4");
  EXPECT_THAT(rank.race().state(),
              ::testing::AnyOf("settled", "at max", "budget spent"));
  EXPECT_EQ(rank.race().seeds_added(), e.counts().total() - 15);
  EXPECT_EQ(rank.race().max_seeds(), 8);
  EXPECT_GT(rank.race().race_share(), 0.0);
  EXPECT_THAT(e.seeds_note(), HasSubstr(rank.race().note()));
  // The best-set the ranking reports is racing's contenders.
  std::vector<std::string> contenders(rank.race().contenders().begin(),
                                      rank.race().contenders().end());
  std::vector<std::string> best_set(rank.verdicts().best_set().begin(),
                                    rank.verdicts().best_set().end());
  std::sort(contenders.begin(), contenders.end());
  std::sort(best_set.begin(), best_set.end());
  EXPECT_EQ(best_set, contenders);
  if (rank.race().state() == "settled") {
    EXPECT_THAT(rank.race().note(), HasSubstr("best 2x2,4x4 settled on"));
  }
}

class GuidedTest : public AdaptiveSeedsTest {
 protected:
  static v1::ExperimentSpec Guided(int samples, int initial) {
    v1::ExperimentSpec spec = Spec({}, {1, 2});
    spec.set_strategy(v1::STRATEGY_GUIDED);
    spec.set_samples(samples);
    spec.set_sample_seed(5);
    if (initial > 0) spec.mutable_guided()->set_initial(initial);
    return spec;
  }

  // Loss: 3.0 minus 0.01 per halving of the first layer's head count.
  static double WiderFirstIsBetter(const std::string& schedule, int64_t seed) {
    const int first = ParseSchedule(schedule)->heads(0);
    return 3.0 - 0.01 * std::log2(4.0 / first) + 0.001 * (seed % 2);
  }

  absl::StatusOr<v1::SuggestResponse> Suggest(int64_t id, int n) {
    v1::SuggestRequest req;
    req.set_experiment_id(id);
    req.set_n(n);
    v1::SuggestResponse resp;
    auto ctx = Ctx(viewer_);
    const grpc::Status s = results_->Suggest(ctx.get(), req, &resp);
    if (!s.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                          s.error_message());
    }
    return resp;
  }
};

TEST_F(GuidedTest, PlantsTheInitialDesignThenAlternatesUntilTheBudget) {
  const int64_t id = Submit(alice_, Guided(/*samples=*/9, /*initial=*/5));
  ASSERT_GT(id, 0);
  v1::Experiment e = GetExperiment(id);
  EXPECT_EQ(e.counts().total(), 12);  // baseline + 5 schedules, 2 seeds
  EXPECT_EQ(e.spec().guided().initial(), 5);
  EXPECT_EQ(e.spec().guided().parallel(), 2);
  const std::string worker = Register(worker_token_);
  // The initial design finishes: a suggestion and an exploration follow.
  EXPECT_EQ(RunQueued(worker, WiderFirstIsBetter, /*limit=*/12), 12);
  e = GetExperiment(id);
  EXPECT_EQ(e.counts().total(), 16);
  EXPECT_EQ(e.seeds_added(), 4);
  EXPECT_THAT(e.seeds_note(), HasSubstr("guided: added suggestion "));
  EXPECT_THAT(e.seeds_note(), HasSubstr(" and exploration "));
  EXPECT_THAT(e.seeds_note(), HasSubstr("7 of 9 schedules tried, 2 in flight"));

  EXPECT_EQ(RunQueued(worker, WiderFirstIsBetter), 8);
  e = GetExperiment(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(e.counts().total(), 20);
  EXPECT_EQ(e.counts().completed(), 20);
  EXPECT_EQ(e.seeds_added(), 8);
  EXPECT_THAT(e.seeds_note(), HasSubstr("budget reached"));
  const auto seeds = SeedsBySchedule(id);
  EXPECT_EQ(seeds.size(), 10u);  // 9 schedules and the baseline
  for (const auto& [schedule, list] : seeds) {
    EXPECT_THAT(list, ElementsAre(1, 2)) << schedule;
  }
  // The suggestions that remain are the 11 schedules never tried.
  absl::StatusOr<v1::SuggestResponse> next = Suggest(id, 100);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->suggestions_size(), 11);
  EXPECT_EQ(next->observed_schedules(), 9);
  for (const v1::Suggestion& x : next->suggestions()) {
    EXPECT_EQ(seeds.count(x.schedule()), 0u) << x.schedule();
  }
}

TEST_F(GuidedTest, RestartsNeitherLoseNorRepeatDecisions) {
  const int64_t id = Submit(alice_, Guided(/*samples=*/9, /*initial=*/5));
  ASSERT_GT(id, 0);
  const std::string worker = Register(worker_token_);
  EXPECT_EQ(RunQueued(worker, WiderFirstIsBetter, /*limit=*/11), 11);
  // The initial design's last trial completes in storage only, as if the
  // coordinator died before its decision.
  CompleteInStorageOnly(worker, WiderFirstIsBetter);
  EXPECT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_ACTIVE);
  EXPECT_EQ(GetExperiment(id).counts().total(), 12);

  Restart();
  EXPECT_EQ(GetExperiment(id).counts().total(), 16);
  const std::string note = GetExperiment(id).seeds_note();
  Restart();  // decided again on the same state: nothing added
  EXPECT_EQ(GetExperiment(id).counts().total(), 16);
  EXPECT_EQ(GetExperiment(id).seeds_note(), note);
  while (RunQueued(worker, WiderFirstIsBetter, /*limit=*/1) == 1) Restart();

  const v1::Experiment e = GetExperiment(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(e.counts().total(), 20);
  EXPECT_EQ(e.seeds_added(), 8);
  EXPECT_EQ(SeedsBySchedule(id).size(), 10u);
}

TEST_F(GuidedTest, BadSettingsAreRefusedWithOneLine) {
  struct Case {
    v1::ExperimentSpec spec;
    const char* message;
  };
  std::vector<Case> cases;
  cases.push_back({Guided(3, 5), "samples (3) is below guided.initial (5)"});
  cases.push_back({Guided(9, 2), "guided.initial must be at least 5"});
  cases.push_back({Guided(0, 0), "samples (the schedule budget) must be"});
  cases.push_back({Guided(9, 5), "schedules cannot be listed"});
  cases.back().spec.add_schedules("2x2,4x4");
  cases.push_back({Guided(9, 5), "seeds_policy cannot be combined"});
  cases.back().spec.mutable_seeds_policy()->set_min(2);
  cases.back().spec.mutable_seeds_policy()->set_max(3);
  cases.push_back({Guided(9, 5), "guided is set but strategy is not"});
  cases.back().spec.set_strategy(v1::STRATEGY_RANDOM);
  for (const Case& c : cases) {
    grpc::Status status;
    EXPECT_EQ(Submit(alice_, c.spec, &status), 0) << c.message;
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }
  EXPECT_EQ(CountExperiments(), 0);
}

TEST_F(GuidedTest, SuggestNamesWhatItNeedsThenProposesOnlyUntriedSchedules) {
  absl::StatusOr<v1::SuggestResponse> r = Suggest(999, 3);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  const std::vector<std::string> listed = {"1x1,4x5", "2x1,4x5",     "1x2,4x4",
                                           "2x2,4x4", "1x1,2x1,4x4", "2x3,4x3"};
  const int64_t id = Submit(alice_, Spec(listed, {1, 2}));
  for (int n : {0, 1001}) {
    r = Suggest(id, n);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_THAT(r.status().message(), HasSubstr("n must be between 1 and"));
  }
  const std::string worker = Register(worker_token_);
  // Trials lease in id order: seed 1's baseline and first two schedules.
  EXPECT_EQ(RunQueued(worker, WiderFirstIsBetter, /*limit=*/3), 3);
  r = Suggest(id, 3);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(),
              HasSubstr("the surrogate needs at least 5 finished schedules"));
  EXPECT_THAT(r.status().message(), HasSubstr("(there are 2)"));

  EXPECT_EQ(RunQueued(worker, WiderFirstIsBetter), 11);
  r = Suggest(id, 100);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->observed_schedules(), 6);
  EXPECT_EQ(r->candidates(), 14);  // 21 - 6 listed - the baseline
  EXPECT_EQ(r->space_size(), "21");
  EXPECT_FALSE(r->sampled());
  ASSERT_EQ(r->suggestions_size(), 14);
  std::set<std::string> seen(listed.begin(), listed.end());
  seen.insert("4x6");
  for (const v1::Suggestion& x : r->suggestions()) {
    EXPECT_TRUE(seen.insert(x.schedule()).second) << x.schedule();
    EXPECT_EQ(x.principles().schedule(), x.schedule());
    EXPECT_GT(x.uncertainty(), 0.0);
  }
  EXPECT_THAT(r->method(), HasSubstr("lower confidence bound"));
  // Six schedules on two seeds: few, but not on one seed.
  ASSERT_EQ(r->warnings_size(), 1);
  EXPECT_THAT(r->warnings(0), HasSubstr("fitted on 6 schedules"));
  // The widest first layer is the best guess among the untried ones.
  EXPECT_EQ(ParseSchedule(r->suggestions(0).schedule())->heads(0), 1);
}

// AshaTest drives a STRATEGY_ASHA experiment by hand: three schedules and
// the baseline on one seed, one rung at step 20, eta 3.
class AshaTest : public ServiceTest {
 protected:
  static v1::ExperimentSpec AshaSpec() {
    v1::ExperimentSpec spec = Spec({"1x2,4x4", "2x2,4x4", "2x3,4x3"}, {1});
    spec.set_strategy(v1::STRATEGY_ASHA);
    spec.mutable_budget()->set_eval_every(10);
    spec.mutable_budget()->set_log_every(10);
    spec.mutable_asha()->add_rungs(20);
    return spec;
  }

  // Loss is each schedule's val loss curve: lower for wider first layers,
  // the baseline (4x6) in between.
  static double Loss(const std::string& schedule, int64_t step) {
    const double level = schedule == "1x2,4x4"   ? 1.0
                         : schedule == "2x2,4x4" ? 2.0
                         : schedule == "4x6"     ? 2.5
                                                 : 3.0;
    return level + (100 - step) / 100.0;
  }

  // Train says where the attempt resumed (Start) and reports its train and
  // val points up to the task's stop step (the whole budget when 0); then it
  // completes through the RPC, or in storage only when `rpc` is false, as
  // if the coordinator died before deciding on it.
  void Train(const std::string& worker, const v1::TrialTask& task,
             bool rpc = true) {
    const v1::Trial& t = task.trial();
    v1::StartRequest start;
    start.set_worker_id(worker);
    start.set_trial_id(t.id());
    start.set_attempt(t.attempt());
    start.set_resumed_from_step(task.resume_step());
    v1::StartResponse started;
    auto ctx = Ctx(worker_token_);
    ASSERT_TRUE(workers_->Start(ctx.get(), start, &started).ok());
    const int64_t end =
        task.stop_at_step() > 0 ? task.stop_at_step() : t.total_steps();
    std::vector<v1::LossPoint> points;
    for (int64_t step = task.resume_step() + 10; step <= end; step += 10) {
      const auto loss = static_cast<float>(Loss(t.schedule(), step));
      points.push_back(Point(v1::SPLIT_TRAIN, step, loss));
      points.push_back(Point(v1::SPLIT_VAL, step, loss));
    }
    v1::TrialMetrics metrics;
    metrics.set_final_val_loss(Loss(t.schedule(), end));
    metrics.set_min_val_loss(Loss(t.schedule(), end));
    metrics.set_steps(end);
    if (!rpc) {
      ASSERT_TRUE(
          coordinator_->store()
              ->CompleteTrial(storage::AttemptRef{t.id(), t.attempt(), worker},
                              metrics, points, clock_.NowMs())
              .ok());
      return;
    }
    v1::CompleteRequest req;
    req.set_worker_id(worker);
    req.set_trial_id(t.id());
    req.set_attempt(t.attempt());
    *req.mutable_metrics() = metrics;
    for (const v1::LossPoint& p : points) *req.add_points() = p;
    v1::CompleteResponse resp;
    auto complete_ctx = Ctx(worker_token_);
    ASSERT_TRUE(workers_->Complete(complete_ctx.get(), req, &resp).ok());
  }

  std::map<std::string, v1::Trial> TrialsBySchedule(int64_t id) {
    v1::ListTrialsRequest req;
    req.set_experiment_id(id);
    v1::ListTrialsResponse resp;
    auto ctx = Ctx(viewer_);
    EXPECT_TRUE(experiments_->ListTrials(ctx.get(), req, &resp).ok());
    std::map<std::string, v1::Trial> out;
    for (const v1::Trial& t : resp.trials()) out[t.schedule()] = t;
    return out;
  }
};

TEST_F(AshaTest, PromotesTheBestAtTheRungAndResumesItFromTheRungCheckpoint) {
  const int64_t id = Submit(alice_, AshaSpec());
  ASSERT_GT(id, 0);
  const std::string worker = Register(worker_token_);
  // The baseline trains the whole budget; the schedules stop at the rung.
  const v1::TrialTask baseline = Lease(worker_token_, worker);
  EXPECT_EQ(baseline.trial().schedule(), "4x6");
  EXPECT_EQ(baseline.stop_at_step(), 0);
  Train(worker, baseline);
  // The schedules come in the order sample_seed shuffles them.
  std::vector<std::string> leased;
  for (int i = 0; i < 2; ++i) {
    const v1::TrialTask task = Lease(worker_token_, worker);
    EXPECT_EQ(task.stop_at_step(), 20) << task.trial().schedule();
    leased.push_back(task.trial().schedule());
    Train(worker, task);
  }
  // Two of the three members at the rung: the synchronous rule waits for
  // the third, and both ended their attempt waiting there.
  std::map<std::string, v1::Trial> trials = TrialsBySchedule(id);
  EXPECT_EQ(trials[leased[0]].state(), v1::TRIAL_STOPPED_AT_RUNG);
  EXPECT_EQ(trials[leased[1]].state(), v1::TRIAL_STOPPED_AT_RUNG);
  EXPECT_EQ(GetExperiment(id).counts().stopped_at_rung(), 2);
  // The third arrives but completes in storage only: the coordinator died
  // before its decision, which the restart makes.
  const v1::TrialTask third = Lease(worker_token_, worker);
  ASSERT_EQ(third.stop_at_step(), 20);
  Train(worker, third, /*rpc=*/false);
  EXPECT_EQ(Lease(worker_token_, worker).trial().id(), 0);
  EXPECT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_ACTIVE);

  Restart();
  trials = TrialsBySchedule(id);
  EXPECT_EQ(trials["1x2,4x4"].state(), v1::TRIAL_QUEUED);
  EXPECT_EQ(trials["1x2,4x4"].target_steps(), 0);  // on to the whole budget
  EXPECT_EQ(trials["2x2,4x4"].state(), v1::TRIAL_STOPPED_AT_RUNG);
  const std::string note = GetExperiment(id).seeds_note();
  EXPECT_THAT(note, HasSubstr("promoted 1x2,4x4 at 20 to the budget"));
  Restart();  // decided again on the same state: nothing changes
  EXPECT_EQ(GetExperiment(id).seeds_note(), note);
  EXPECT_EQ(GetExperiment(id).counts().queued(), 1);

  const v1::TrialTask promoted = Lease(worker_token_, worker);
  EXPECT_EQ(promoted.trial().schedule(), "1x2,4x4");
  EXPECT_EQ(promoted.trial().attempt(), 2);
  EXPECT_EQ(promoted.resume_step(), 20);
  EXPECT_EQ(promoted.stop_at_step(), 0);
  EXPECT_GE(promoted.stored_step(), 20);
  Train(worker, promoted);

  const v1::Experiment e = GetExperiment(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(e.counts().completed(), 2);
  EXPECT_EQ(e.counts().stopped_at_rung(), 2);
  const v1::Trial resumed = GetTrial(promoted.trial().id());
  ASSERT_EQ(resumed.attempts_size(), 2);
  EXPECT_EQ(resumed.attempts(0).outcome(), v1::TRIAL_STOPPED_AT_RUNG);
  EXPECT_EQ(resumed.attempts(1).resumed_from_step(), 20);
  EXPECT_EQ(resumed.state(), v1::TRIAL_COMPLETED);

  // The ranking holds the schedule that trained the budget; the rung view
  // shows every schedule that reached the rung, paired with the baseline.
  v1::RankRequest rank;
  rank.set_experiment_id(id);
  v1::RankResponse ranked;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx.get(), rank, &ranked).ok());
  ASSERT_EQ(ranked.schedules_size(), 2);  // the baseline and 1x2,4x4
  ASSERT_EQ(ranked.asha_rungs_size(), 1);
  const v1::AshaRung& rung = ranked.asha_rungs(0);
  EXPECT_EQ(rung.step(), 20);
  EXPECT_TRUE(rung.paired());
  EXPECT_EQ(rung.promote_quota(), 1);
  EXPECT_EQ(rung.members(), 3);
  EXPECT_EQ(rung.promoted(), 1);
  EXPECT_TRUE(rung.complete());
  // The cost: the baseline 100 steps, the schedules 20 each, the promoted
  // one 80 more, of a grid of 4 schedules x 1 seed x 100 steps.
  EXPECT_EQ(ranked.experiment().steps_trained(), 100 + 3 * 20 + 80);
  EXPECT_DOUBLE_EQ(ranked.experiment().grid_steps(), 400.0);
  ASSERT_EQ(rung.schedules_size(), 3);
  EXPECT_EQ(rung.schedules(0).schedule(), "1x2,4x4");
  EXPECT_TRUE(rung.schedules(0).promoted());
  EXPECT_NEAR(rung.schedules(0).score(), -1.5, 1e-6);
  EXPECT_FALSE(rung.schedules(1).promoted());
}

TEST_F(AshaTest, APromotedTrialWhoseLeaseExpiresKeepsItsTarget) {
  v1::ExperimentSpec spec = AshaSpec();
  spec.mutable_asha()->set_eta(2);  // max(1, floor(3 / 2)) = 1 goes on
  const int64_t id = Submit(alice_, spec);
  ASSERT_GT(id, 0);
  const std::string worker = Register(worker_token_);
  for (int i = 0; i < 4; ++i) Train(worker, Lease(worker_token_, worker));
  const v1::TrialTask promoted = Lease(worker_token_, worker);
  ASSERT_EQ(promoted.trial().schedule(), "1x2,4x4");
  ASSERT_EQ(promoted.resume_step(), 20);
  // The worker dies: the next attempt still trains to the whole budget from
  // the rung, not back to the rung or from 0.
  clock_.Advance(31'000);
  ASSERT_EQ(*coordinator_->queue()->ExpireLeases(), 1);
  const v1::TrialTask again = Lease(worker_token_, worker);
  EXPECT_EQ(again.trial().id(), promoted.trial().id());
  EXPECT_EQ(again.trial().attempt(), promoted.trial().attempt() + 1);
  EXPECT_EQ(again.stop_at_step(), 0);
  EXPECT_EQ(again.resume_step(), 20);
  Train(worker, again);
  EXPECT_EQ(GetTrial(again.trial().id()).state(), v1::TRIAL_COMPLETED);
}

TEST_F(AshaTest, BadPoliciesAreRefusedNamingTheProblem) {
  v1::ExperimentSpec low_eta = AshaSpec();
  low_eta.mutable_asha()->set_eta(1);
  v1::ExperimentSpec past_budget = AshaSpec();
  past_budget.mutable_asha()->add_rungs(100);
  for (const auto& [spec, message] :
       std::vector<std::pair<v1::ExperimentSpec, std::string>>{
           {low_eta, "asha.eta must be at least 2 (got 1)"},
           {past_budget,
            "asha.rungs[1] = 100 is not below budget.steps (100)"}}) {
    grpc::Status status;
    EXPECT_EQ(Submit(alice_, spec, &status), 0);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr(message));
  }
}

}  // namespace
}  // namespace prism::server::testing
