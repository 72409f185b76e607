// ExperimentService.Extend through the services: seeds and schedules added
// to a stored experiment train only the missing (schedule, seed) pairs, a
// done experiment reopens and ends again (grid, ASHA, adaptive seeds), the
// ranking then uses every seed, and each refusal (another user's, a limit,
// a cancelled experiment, bad input) changes nothing.
// A real coordinator (SQLite file, gRPC on loopback, fake clock) driven
// through the generated stubs (service_fixture.h).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/service_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kBaseline[] = "4x6";
constexpr char kBetter[] = "2x2,4x4";
constexpr char kWorse[] = "1x2,4x4";

class ExtendTest : public ServiceTest {
 protected:
  void Customize(CoordinatorOptions* options) override {
    options->limits.max_trials_per_experiment = 40;
  }

  // Loss plants kBetter 0.1 below the baseline and kWorse 0.1 above, with
  // a little per-seed noise shared by every schedule (paired).
  static double Loss(const std::string& schedule, int64_t seed) {
    const double level = schedule == kBetter  ? 2.9
                         : schedule == kWorse ? 3.1
                                              : 3.0;
    return level + 0.01 * static_cast<double>(seed % 3) +
           0.001 * static_cast<double>(schedule.size() % 2);
  }

  // RunQueued leases and completes trials until none is left; returns the
  // (schedule, seed) pairs it trained, in order.
  std::vector<std::pair<std::string, int64_t>> RunQueued() {
    const std::string worker = Register(worker_token_);
    std::vector<std::pair<std::string, int64_t>> trained;
    for (int n = 0; n < 200; ++n) {
      const v1::TrialTask task = Lease(worker_token_, worker);
      if (task.trial().id() == 0) break;
      v1::CompleteResponse done;
      EXPECT_TRUE(Complete(worker_token_, worker, task.trial(),
                           Loss(task.trial().schedule(), task.trial().seed()),
                           &done)
                      .ok());
      trained.emplace_back(task.trial().schedule(), task.trial().seed());
    }
    return trained;
  }

  grpc::Status Extend(const std::string& token, const v1::ExtendRequest& req,
                      v1::ExtendResponse* resp) {
    auto ctx = Ctx(token);
    return experiments_->Extend(ctx.get(), req, resp);
  }

  static v1::ExtendRequest AddSeeds(int64_t id, int n) {
    v1::ExtendRequest req;
    req.set_id(id);
    req.set_add_seeds(n);
    return req;
  }

  // A finished grid of the baseline and two schedules on seed 1.
  int64_t FinishedGrid() {
    const int64_t id = Submit(alice_, Spec({kBetter, kWorse}, {1}));
    EXPECT_GT(id, 0);
    EXPECT_EQ(RunQueued().size(), 3u);
    EXPECT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_DONE);
    return id;
  }
};

TEST_F(ExtendTest, AddingSeedsTrainsOnlyTheNewPairsAndRanksOnEverySeed) {
  const int64_t id = FinishedGrid();
  v1::ExtendResponse resp;
  ASSERT_TRUE(Extend(alice_, AddSeeds(id, 2), &resp).ok());
  EXPECT_EQ(resp.trials_created(), 6);  // 3 schedules x seeds 2 and 3
  EXPECT_EQ(resp.trials_reused(), 3);
  EXPECT_THAT(resp.seeds_added(), ElementsAre(2, 3));
  EXPECT_EQ(resp.experiment().state(), v1::EXPERIMENT_ACTIVE);
  EXPECT_THAT(resp.experiment().spec().seeds(), ElementsAre(1, 2, 3));
  EXPECT_EQ(resp.headroom().trials(), 9);
  EXPECT_EQ(resp.headroom().queued_trials(), 6);
  EXPECT_EQ(resp.headroom().max_trials_per_experiment(), 40);
  // The bill is the new trials' only: 6 trials of the whole budget.
  const int64_t budget = resp.experiment().spec().budget().steps();
  ASSERT_GT(budget, 0);
  EXPECT_EQ(resp.plan().trials(), 6);
  EXPECT_DOUBLE_EQ(resp.plan().steps(), 6.0 * budget);
  EXPECT_DOUBLE_EQ(resp.plan().max_steps(), 6.0 * budget);
  EXPECT_GT(resp.plan().tokens(), 0);
  EXPECT_FALSE(resp.plan().throughput_source().empty());

  // Only the new pairs train: seed 1's trials are reused as they are.
  const auto trained = RunQueued();
  ASSERT_EQ(trained.size(), 6u);
  for (const auto& [schedule, seed] : trained) {
    EXPECT_NE(seed, 1) << schedule;
  }
  const v1::Experiment done = GetExperiment(id);
  EXPECT_EQ(done.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(done.counts().completed(), 9);

  const v1::RankResponse ranked = RankExperiment(id);
  ASSERT_EQ(ranked.schedules_size(), 3);
  for (const v1::RankedSchedule& s : ranked.schedules()) {
    EXPECT_EQ(s.seeds_completed(), 3) << s.schedule();
  }
  EXPECT_EQ(ranked.schedules(0).schedule(), kBetter);

  // to_seeds fills up to the experiment's first N seeds.
  v1::ExtendRequest to;
  to.set_id(id);
  to.set_to_seeds(4);
  ASSERT_TRUE(Extend(alice_, to, &resp).ok());
  EXPECT_EQ(resp.trials_created(), 3);
  EXPECT_THAT(resp.seeds_added(), ElementsAre(4));
  EXPECT_EQ(resp.trials_reused(), 9);
}

TEST_F(ExtendTest,
       SeedSchedulesNarrowWhichSchedulesGetSeedsButTheBaselineAlways) {
  const int64_t id = FinishedGrid();
  v1::ExtendRequest req;
  req.set_id(id);
  req.add_seeds(7);
  req.add_seed_schedules("2x2,4x4");  // canonical form; any spelling parses
  v1::ExtendResponse resp;
  ASSERT_TRUE(Extend(alice_, req, &resp).ok());
  EXPECT_EQ(resp.trials_created(), 2);
  const auto seeds = SeedsBySchedule(id);
  EXPECT_THAT(seeds.at(kBaseline), ElementsAre(1, 7));
  EXPECT_THAT(seeds.at(kBetter), ElementsAre(1, 7));
  EXPECT_THAT(seeds.at(kWorse), ElementsAre(1));
}

TEST_F(ExtendTest, AddingSchedulesTrainsThemOnEverySeedAndListsThemInTheSpec) {
  const int64_t id = Submit(alice_, Spec({kBetter}, {1, 2}));
  ASSERT_EQ(RunQueued().size(), 4u);
  v1::ExtendRequest req;
  req.set_id(id);
  req.add_schedules(kWorse);
  v1::ExtendResponse resp;
  ASSERT_TRUE(Extend(alice_, req, &resp).ok());
  EXPECT_EQ(resp.trials_created(), 2);
  EXPECT_THAT(resp.schedules_added(), ElementsAre(kWorse));
  EXPECT_THAT(resp.experiment().spec().schedules(),
              ElementsAre(kBetter, kWorse));
  const auto trained = RunQueued();
  ASSERT_EQ(trained.size(), 2u);
  EXPECT_EQ(trained[0].first, kWorse);
  EXPECT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(RankExperiment(id).schedules_size(), 3);
}

TEST_F(ExtendTest, ADryRunChecksEverythingAndStoresNothing) {
  const int64_t id = FinishedGrid();
  v1::ExtendRequest req = AddSeeds(id, 2);
  req.set_dry_run(true);
  v1::ExtendResponse resp;
  ASSERT_TRUE(Extend(alice_, req, &resp).ok());
  EXPECT_EQ(resp.trials_created(), 6);
  EXPECT_THAT(resp.seeds_added(), ElementsAre(2, 3));
  EXPECT_EQ(resp.plan().trials(), 6);  // what it would cost
  EXPECT_EQ(resp.experiment().state(), v1::EXPERIMENT_DONE);
  const v1::Experiment after = GetExperiment(id);
  EXPECT_EQ(after.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(after.counts().total(), 3);
  EXPECT_THAT(after.spec().seeds(), ElementsAre(1));
}

TEST_F(ExtendTest, AnotherUsersExperimentIsRefusedAndUnchanged) {
  const int64_t id = FinishedGrid();
  v1::ExtendResponse resp;
  const grpc::Status s = Extend(bob_, AddSeeds(id, 1), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Extend(viewer_, AddSeeds(id, 1), &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(GetExperiment(id).counts().total(), 3);
  EXPECT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_DONE);
  // An admin may.
  ASSERT_TRUE(Extend(kAdminToken, AddSeeds(id, 1), &resp).ok());
  EXPECT_EQ(resp.trials_created(), 3);
}

TEST_F(ExtendTest, ACancelledExperimentIsRefused) {
  const int64_t id = Submit(alice_, Spec({kBetter}, {1}));
  v1::ExperimentRef ref;
  ref.set_id(id);
  v1::Experiment e;
  auto ctx = Ctx(alice_);
  ASSERT_TRUE(experiments_->Cancel(ctx.get(), ref, &e).ok());
  v1::ExtendResponse resp;
  const grpc::Status s = Extend(alice_, AddSeeds(id, 1), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("cancelled"));
  EXPECT_EQ(GetExperiment(id).counts().total(), 2);
}

// A ladder's rung carried its ranking up already: more seeds there would
// not change what the next rung trains.
TEST_F(ExtendTest, ALaddersRungIsRefused) {
  storage::NewExperiment e;
  e.name = "ladder";
  e.owner = "alice";
  e.spec = Spec({kBaseline}, {1});
  e.spec.mutable_ladder()->add_rungs();
  e.spec.mutable_ladder()->add_rungs();
  e.max_attempts = 1;
  e.total_steps = 100;
  e.config_fingerprint = "fp";
  e.trials.push_back(storage::NewTrial{kBaseline, 1, true});
  absl::StatusOr<storage::CreatedExperiment> created =
      coordinator_->store()->CreateExperiment(e);
  ASSERT_TRUE(created.ok()) << created.status();
  v1::ExtendResponse resp;
  const grpc::Status s = Extend(alice_, AddSeeds(created->id, 1), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("rung 1 of ladder"));
  EXPECT_EQ(GetExperiment(created->id).counts().total(), 1);
}

TEST_F(ExtendTest, BadRequestsAreRefusedNamingTheFieldWithNothingAdded) {
  const int64_t id = FinishedGrid();
  struct Case {
    std::function<void(v1::ExtendRequest*)> set;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](v1::ExtendRequest* r) { r->add_seeds(1); },
       "seeds[0]: the experiment already has seed 1"},
      {[](v1::ExtendRequest* r) {
         r->add_seeds(5);
         r->add_seeds(5);
       },
       "seeds[1]: seed 5 is listed twice"},
      {[](v1::ExtendRequest* r) {
         r->set_add_seeds(1);
         r->set_to_seeds(3);
       },
       "add_seeds, to_seeds, seeds: set at most one"},
      {[](v1::ExtendRequest* r) { r->set_to_seeds(1); },
       "to_seeds: 1 is not above the 1 seeds the experiment has"},
      {[](v1::ExtendRequest* r) { r->add_schedules("2x2"); },
       "schedules[0] '2x2': has 2 layers but the model has 6"},
      {[](v1::ExtendRequest* r) { r->add_schedules(kBetter); },
       "schedules[0] '2x2,4x4': the experiment already has it"},
      {[](v1::ExtendRequest* r) {
         r->set_add_seeds(1);
         r->add_seed_schedules("2x3,4x3");
       },
       "seed_schedules[0] '2x3,4x3': is not a schedule this experiment "
       "trained"},
      {[](v1::ExtendRequest*) {}, "nothing to add"},
  };
  for (const Case& c : cases) {
    v1::ExtendRequest req;
    req.set_id(id);
    c.set(&req);
    v1::ExtendResponse resp;
    const grpc::Status s = Extend(alice_, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_THAT(s.error_message(), HasSubstr(c.message));
  }
  EXPECT_EQ(GetExperiment(id).counts().total(), 3);
  EXPECT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_DONE);
  v1::ExtendResponse resp;
  EXPECT_EQ(Extend(alice_, AddSeeds(404, 1), &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ExtendTest, EachLimitIsRefusedByNameWithNothingAdded) {
  struct Case {
    v1::ExperimentSpec spec;
    std::function<void(v1::ExtendRequest*)> set;
    std::string message;
  };
  v1::ExperimentSpec policy = Spec({kBetter}, {});
  policy.mutable_seeds_policy()->set_min(2);
  policy.mutable_seeds_policy()->set_max(3);
  v1::ExperimentSpec racing = Spec({kBetter, kWorse}, {1, 2});
  racing.mutable_racing()->set_max_seeds(3);
  const std::vector<Case> cases = {
      {policy, [](v1::ExtendRequest* r) { r->set_to_seeds(4); },
       "would have 4 seeds; limit seeds_policy.max=3"},
      {racing, [](v1::ExtendRequest* r) { r->set_add_seeds(2); },
       "would have 4 seeds; limit racing.max_seeds=3"},
      {Spec({kBetter}, {1}), [](v1::ExtendRequest* r) { r->set_to_seeds(65); },
       "limit 64 seeds per schedule"},
      {Spec({kBetter, kWorse}, {1}),
       [](v1::ExtendRequest* r) { r->set_add_seeds(13); },
       "would have 42 trials (39 new); limit --max-trials-per-experiment=40"},
  };
  for (const Case& c : cases) {
    const int64_t id = Submit(alice_, c.spec);
    ASSERT_GT(id, 0) << c.message;
    const int total = GetExperiment(id).counts().total();
    v1::ExtendRequest req;
    req.set_id(id);
    c.set(&req);
    v1::ExtendResponse resp;
    const grpc::Status s = Extend(alice_, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << c.message << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.message));
    EXPECT_EQ(GetExperiment(id).counts().total(), total) << c.message;
  }

  // The caller's queued-trial quota.
  v1::SetUserPolicyRequest quota;
  quota.set_user("alice");
  quota.set_max_queued(20);
  v1::UserPolicy policy_set;
  auto ctx = Ctx(kAdminToken);
  ASSERT_TRUE(experiments_->SetUserPolicy(ctx.get(), quota, &policy_set).ok());
  const int64_t id = Submit(alice_, Spec({kBetter}, {1}));
  ASSERT_GT(id, 0);
  v1::ExtendResponse resp;
  const grpc::Status s = Extend(alice_, AddSeeds(id, 8), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("quota max_queued=20"));
  EXPECT_EQ(GetExperiment(id).counts().total(), 2);
}

TEST_F(ExtendTest, AnAdaptiveSeedsExperimentReopensAndEndsAgain) {
  v1::ExperimentSpec spec = Spec({kBetter, kWorse}, {});
  spec.mutable_seeds_policy()->set_min(2);
  spec.mutable_seeds_policy()->set_max(6);
  const int64_t id = Submit(alice_, spec);
  ASSERT_GT(id, 0);
  RunQueued();
  ASSERT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_DONE);
  const int before = GetExperiment(id).counts().total();
  v1::ExtendResponse resp;
  ASSERT_TRUE(Extend(alice_, AddSeeds(id, 1), &resp).ok());
  EXPECT_GT(resp.trials_created(), 0);
  EXPECT_EQ(resp.experiment().state(), v1::EXPERIMENT_ACTIVE);
  const auto trained = RunQueued();
  EXPECT_GE(static_cast<int>(trained.size()), resp.trials_created());
  const v1::Experiment done = GetExperiment(id);
  EXPECT_EQ(done.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(done.counts().total(), before + static_cast<int>(trained.size()));
}

// An ASHA experiment: three schedules screened at a rung of 20 steps, the
// best (kAshaBest) promoted to the budget.
constexpr char kAshaBest[] = "1x2,4x4";

class ExtendAshaTest : public ExtendTest {
 protected:
  static double Loss(const std::string& schedule, int64_t step) {
    const double level = schedule == kAshaBest   ? 1.0
                         : schedule == kBaseline ? 2.5
                                                 : 3.0;
    return level + (100 - step) / 100.0;
  }

  // Train trains the task to its stop step (the budget when 0), reporting
  // val points every 10 steps, and completes it.
  void Train(const std::string& worker, const v1::TrialTask& task) {
    const v1::Trial& t = task.trial();
    const int64_t end =
        task.stop_at_step() > 0 ? task.stop_at_step() : t.total_steps();
    v1::CompleteRequest req;
    req.set_worker_id(worker);
    req.set_trial_id(t.id());
    req.set_attempt(t.attempt());
    for (int64_t step = task.resume_step() + 10; step <= end; step += 10) {
      *req.add_points() = Point(v1::SPLIT_VAL, step,
                                static_cast<float>(Loss(t.schedule(), step)));
    }
    req.mutable_metrics()->set_final_val_loss(Loss(t.schedule(), end));
    req.mutable_metrics()->set_min_val_loss(Loss(t.schedule(), end));
    req.mutable_metrics()->set_steps(end);
    v1::CompleteResponse resp;
    auto ctx = Ctx(worker_token_);
    const grpc::Status s = workers_->Complete(ctx.get(), req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // TrainAll trains every trial there is to lease; returns the tasks.
  std::vector<v1::TrialTask> TrainAll(const std::string& worker) {
    std::vector<v1::TrialTask> tasks;
    for (int n = 0; n < 2000; ++n) {
      const v1::TrialTask task = Lease(worker_token_, worker);
      if (task.trial().id() == 0) break;
      Train(worker, task);
      tasks.push_back(task);
    }
    return tasks;
  }
};

TEST_F(ExtendAshaTest,
       SeedsGoToTheSchedulesThatReachedTheBudgetAndItEndsAgain) {
  v1::ExperimentSpec spec = Spec({kAshaBest, kBetter, "2x3,4x3"}, {1});
  spec.set_strategy(v1::STRATEGY_ASHA);
  spec.mutable_budget()->set_eval_every(10);
  spec.mutable_budget()->set_log_every(10);
  spec.mutable_asha()->add_rungs(20);
  const int64_t id = Submit(alice_, spec);
  ASSERT_GT(id, 0);
  const std::string worker = Register(worker_token_);
  TrainAll(worker);
  v1::Experiment e = GetExperiment(id);
  ASSERT_EQ(e.state(), v1::EXPERIMENT_DONE);
  ASSERT_EQ(e.counts().stopped_at_rung(), 2);

  v1::ExtendResponse resp;
  ASSERT_TRUE(Extend(alice_, AddSeeds(id, 2), &resp).ok());
  // The promoted schedule and the baseline, not the two stopped at the rung.
  EXPECT_EQ(resp.trials_created(), 4);
  EXPECT_EQ(resp.experiment().state(), v1::EXPERIMENT_ACTIVE);
  const std::vector<v1::TrialTask> tasks = TrainAll(worker);
  ASSERT_EQ(tasks.size(), 4u);
  for (const v1::TrialTask& t : tasks) {
    EXPECT_EQ(t.stop_at_step(), 0) << t.trial().schedule();
    EXPECT_NE(t.trial().seed(), 1);
    EXPECT_TRUE(t.trial().schedule() == kAshaBest ||
                t.trial().schedule() == kBaseline)
        << t.trial().schedule();
  }
  e = GetExperiment(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(e.counts().stopped_at_rung(), 2);
  const v1::RankResponse ranked = RankExperiment(id);
  ASSERT_EQ(ranked.schedules_size(), 2);
  for (const v1::RankedSchedule& s : ranked.schedules()) {
    EXPECT_EQ(s.seeds_completed(), 3) << s.schedule();
  }
}

TEST_F(ExtendAshaTest, AGuidedScreeningExperimentReopensAndEndsAgain) {
  v1::ExperimentSpec spec;
  spec.set_name("screening");
  spec.mutable_model()->set_preset("tiny");
  spec.add_seeds(1);
  spec.add_seeds(2);
  spec.set_strategy(v1::STRATEGY_GUIDED_SCREENING);
  spec.mutable_screening()->set_bracket_size(6);
  spec.mutable_screening()->set_grid_fraction(0.1);
  spec.mutable_budget()->set_steps(180);
  spec.mutable_budget()->set_eval_every(20);
  spec.mutable_budget()->set_log_every(10);
  spec.set_sample_seed(4);
  grpc::Status submitted;
  const int64_t id = Submit(alice_, spec, &submitted);
  ASSERT_GT(id, 0) << submitted.error_message();
  const std::string worker = Register(worker_token_);
  TrainAll(worker);
  v1::Experiment e = GetExperiment(id);
  ASSERT_EQ(e.state(), v1::EXPERIMENT_DONE);
  const int ranked = RankExperiment(id).schedules_size();
  ASSERT_GT(e.counts().stopped_at_rung(), 0);
  const int stopped = e.counts().stopped_at_rung();

  v1::ExtendResponse resp;
  ASSERT_TRUE(Extend(alice_, AddSeeds(id, 1), &resp).ok());
  // Seed 3 for each schedule that reached the budget and the baseline.
  EXPECT_EQ(resp.trials_created(), ranked);
  EXPECT_EQ(resp.experiment().state(), v1::EXPERIMENT_ACTIVE);
  for (const v1::TrialTask& t : TrainAll(worker)) {
    EXPECT_EQ(t.trial().seed(), 3) << t.trial().schedule();
    EXPECT_EQ(t.stop_at_step(), 0) << t.trial().schedule();
  }
  e = GetExperiment(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(e.counts().stopped_at_rung(), stopped);
  const v1::RankResponse after = RankExperiment(id);
  ASSERT_EQ(after.schedules_size(), ranked);
  for (const v1::RankedSchedule& s : after.schedules()) {
    EXPECT_EQ(s.seeds_completed(), 3) << s.schedule();
  }
}

TEST_F(ExtendTest, ARacedExperimentReopensAndEndsAgain) {
  v1::ExperimentSpec spec = Spec({kBetter, kWorse}, {1, 2, 3});
  spec.mutable_racing()->set_max_seeds(12);
  const int64_t id = Submit(alice_, spec);
  ASSERT_GT(id, 0);
  RunQueued();
  ASSERT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_DONE);
  const int before = GetExperiment(id).counts().total();
  v1::ExtendResponse resp;
  ASSERT_TRUE(Extend(alice_, AddSeeds(id, 1), &resp).ok());
  EXPECT_EQ(resp.trials_created(), 3);  // every schedule and the baseline
  ASSERT_EQ(resp.seeds_added_size(), 1);
  const int64_t added = resp.seeds_added(0);
  const auto trained = RunQueued();
  ASSERT_GE(trained.size(), 3u);
  const v1::Experiment done = GetExperiment(id);
  EXPECT_EQ(done.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(done.counts().total(), before + static_cast<int>(trained.size()));
  for (const auto& [schedule, seeds] : SeedsBySchedule(id)) {
    EXPECT_EQ(std::count(seeds.begin(), seeds.end(), added), 1) << schedule;
  }
}

}  // namespace
}  // namespace prism::server::testing
