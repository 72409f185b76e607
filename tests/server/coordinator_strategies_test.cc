// In-process service tests: a real coordinator (SQLite file, gRPC on
// loopback, fake clock) driven through the generated stubs.
#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/worker_protocol.h"
#include "scheduler/schedule.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ServiceTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorTest::SetUp();
    alice_ = Token("alice", v1::ROLE_USER);
    bob_ = Token("bob", v1::ROLE_USER);
    worker_token_ = Token("farm", v1::ROLE_WORKER);
    viewer_ = Token("vera", v1::ROLE_VIEWER);
  }

  v1::Experiment GetExperiment(int64_t id) {
    v1::GetExperimentRequest req;
    req.set_id(id);
    v1::Experiment e;
    auto ctx = Ctx(viewer_);
    EXPECT_TRUE(experiments_->Get(ctx.get(), req, &e).ok());
    return e;
  }

  int CountExperiments() {
    v1::ListExperimentsRequest req;
    v1::ListExperimentsResponse resp;
    auto ctx = Ctx(kAdminToken);
    EXPECT_TRUE(experiments_->List(ctx.get(), req, &resp).ok());
    return resp.experiments_size();
  }

  v1::Trial GetTrial(int64_t id) {
    v1::GetTrialRequest req;
    req.set_trial_id(id);
    v1::GetTrialResponse resp;
    auto ctx = Ctx(viewer_);
    EXPECT_TRUE(results_->GetTrial(ctx.get(), req, &resp).ok());
    return resp.trial();
  }

  v1::HeartbeatResponse Heartbeat(const std::string& worker,
                                  const v1::Trial& trial, int64_t step) {
    v1::HeartbeatRequest req;
    req.set_worker_id(worker);
    req.set_trial_id(trial.id());
    req.set_attempt(trial.attempt());
    req.set_step(step);
    v1::HeartbeatResponse resp;
    auto ctx = Ctx(worker_token_);
    grpc::Status s = workers_->Heartbeat(ctx.get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  std::string alice_, bob_, worker_token_, viewer_;
};

TEST_F(ServiceTest, SubmitLeaseReportCompleteThenRank) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4", "1x2,4x4"}, {1, 2}));
  ASSERT_GT(id, 0);
  v1::Experiment e = GetExperiment(id);
  EXPECT_EQ(e.owner(), "alice");
  EXPECT_EQ(e.counts().total(), 6);  // 2 schedules + baseline, 2 seeds
  // The stored spec is resolved from the preset.
  EXPECT_EQ(e.spec().model().d_model(), 128);
  EXPECT_GT(e.spec().budget().batch_size(), 0);
  EXPECT_EQ(e.spec().max_attempts(), 2);

  const std::string worker = Register(worker_token_);
  const std::map<std::string, double> loss = {
      {"4x6", 3.0}, {"2x2,4x4", 2.9}, {"1x2,4x4", 3.1}};
  for (int i = 0; i < 6; ++i) {
    v1::TrialTask task = Lease(worker_token_, worker);
    ASSERT_NE(task.trial().id(), 0) << "lease " << i;
    EXPECT_EQ(task.trial().attempt(), 1);
    EXPECT_EQ(task.model().context(), 128);
    EXPECT_EQ(task.budget().steps(), 100);
    EXPECT_EQ(task.trial().principles().schedule(), task.trial().schedule());
    EXPECT_FALSE(task.checkpoint_key().empty());
    v1::ReportResponse report;
    ASSERT_TRUE(Report(worker_token_, worker, task.trial(),
                       {Point(v1::SPLIT_TRAIN, 10, 4.0f),
                        Point(v1::SPLIT_TRAIN, 20, 3.5f)},
                       &report)
                    .ok());
    EXPECT_EQ(report.stored(), 2);
    EXPECT_EQ(GetTrial(task.trial().id()).state(), v1::TRIAL_RUNNING);
    v1::CompleteResponse done;
    ASSERT_TRUE(Complete(worker_token_, worker, task.trial(),
                         loss.at(task.trial().schedule()), &done)
                    .ok());
    EXPECT_EQ(done.trial().state(), v1::TRIAL_COMPLETED);
  }
  EXPECT_EQ(Lease(worker_token_, worker).trial().id(), 0);
  EXPECT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_DONE);

  v1::RankRequest req;
  req.set_experiment_id(id);
  v1::RankResponse rank;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx.get(), req, &rank).ok());
  ASSERT_EQ(rank.schedules_size(), 3);
  EXPECT_EQ(rank.total(), 3);
  EXPECT_EQ(rank.schedules(0).schedule(), "2x2,4x4");
  EXPECT_EQ(rank.schedules(0).rank(), 1);
  EXPECT_NEAR(rank.schedules(0).delta_vs_baseline().mean(), -0.1, 1e-6);
  EXPECT_EQ(rank.schedules(0).seeds_completed(), 2);
  // Equal deltas on both seeds: p 0, better after Holm over 2 schedules.
  EXPECT_EQ(rank.schedules(0).verdict(), v1::VERDICT_BETTER);
  EXPECT_EQ(rank.schedules(0).paired_seeds(), 2);
  ASSERT_TRUE(rank.schedules(0).has_adjusted_p_value());
  EXPECT_EQ(rank.schedules(0).adjusted_p_value(), 0.0);
  EXPECT_TRUE(rank.schedules(0).delta_vs_baseline().has_low());
  EXPECT_EQ(rank.schedules(1).schedule(), "4x6");
  EXPECT_EQ(rank.schedules(1).verdict(), v1::VERDICT_UNSPECIFIED);
  EXPECT_FALSE(rank.schedules(1).has_p_value());
  EXPECT_EQ(rank.schedules(2).schedule(), "1x2,4x4");
  EXPECT_EQ(rank.schedules(2).verdict(), v1::VERDICT_WORSE);
  // Curves 3.4 at step 50 and 2.9 at 100 cross the baseline's 3.0 at 90
  // (interpolated); the baseline gets there at 100. 1x2,4x4 never does: 0
  // of 2 seeds, counted.
  EXPECT_NEAR(rank.schedules(0).speedup().mean(), 100.0 / 90, 1e-4);
  EXPECT_EQ(rank.schedules(0).speedup().n(), 2);
  EXPECT_EQ(rank.schedules(0).speedup_seeds(), 2);
  EXPECT_EQ(rank.schedules(2).speedup().n(), 0);
  EXPECT_EQ(rank.schedules(2).speedup_seeds(), 2);
  // One worker ran every trial: tokens/s paired on it.
  EXPECT_EQ(rank.schedules(0).throughput_pairing(),
            v1::THROUGHPUT_PAIRING_WORKER);
  EXPECT_EQ(rank.schedules(0).throughput_pairs(), 2);
  EXPECT_DOUBLE_EQ(rank.schedules(0).throughput_ratio().mean(), 1.0);
  EXPECT_EQ(rank.compared_schedules(), 2);
  EXPECT_EQ(rank.baseline().schedule(), "4x6");
  EXPECT_EQ(rank.experiment().id(), id);
  ASSERT_EQ(rank.principle_effects_size(), 3);
  // Both schedules satisfy every principle: no effect to estimate.
  for (const v1::PrincipleEffect& e : rank.principle_effects()) {
    EXPECT_EQ(e.status(), v1::EFFECT_NOTHING_VIOLATES);
    EXPECT_FALSE(e.has_effect());
    EXPECT_EQ(e.note(), "nothing violates it");
    EXPECT_EQ(e.satisfied(), 2);
  }
}

TEST_F(ServiceTest, RankCountsDivergedSeedsOutsideTheVerdict) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1, 2}));
  const std::string worker = Register(worker_token_);
  for (int i = 0; i < 4; ++i) {
    v1::TrialTask task = Lease(worker_token_, worker);
    ASSERT_NE(task.trial().id(), 0) << "lease " << i;
    const bool diverge =
        !task.trial().is_baseline() && task.trial().seed() == 2;
    v1::CompleteResponse done;
    if (diverge) {
      v1::CompleteRequest req;
      req.set_worker_id(worker);
      req.set_trial_id(task.trial().id());
      req.set_attempt(task.trial().attempt());
      req.mutable_metrics()->set_diverged(true);
      auto ctx = Ctx(worker_token_);
      ASSERT_TRUE(workers_->Complete(ctx.get(), req, &done).ok());
      EXPECT_EQ(done.trial().state(), v1::TRIAL_DIVERGED);
    } else {
      ASSERT_TRUE(Complete(worker_token_, worker, task.trial(),
                           task.trial().is_baseline() ? 3.0 : 2.9, &done)
                      .ok());
    }
  }
  v1::RankRequest req;
  req.set_experiment_id(id);
  v1::RankResponse rank;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx.get(), req, &rank).ok());
  ASSERT_EQ(rank.schedules_size(), 2);
  // One paired seed left: no interval, no test, needs seeds, ranked last.
  const v1::RankedSchedule& s = rank.schedules(1);
  EXPECT_EQ(s.schedule(), "2x2,4x4");
  EXPECT_EQ(s.verdict(), v1::VERDICT_NEEDS_SEEDS);
  EXPECT_EQ(s.seeds_completed(), 1);
  EXPECT_EQ(s.seeds_diverged(), 1);
  EXPECT_EQ(s.seeds_failed(), 0);
  EXPECT_EQ(s.paired_seeds(), 1);
  EXPECT_TRUE(s.diverged());
  EXPECT_NEAR(s.delta_vs_baseline().mean(), -0.1, 1e-6);
  EXPECT_EQ(s.delta_vs_baseline().n(), 1);
  EXPECT_FALSE(s.delta_vs_baseline().has_low());
  EXPECT_FALSE(s.delta_vs_baseline().has_high());
  EXPECT_FALSE(s.final_val_loss().has_low());
  EXPECT_FALSE(s.has_p_value());
  EXPECT_FALSE(s.has_adjusted_p_value());
  EXPECT_EQ(rank.compared_schedules(), 0);
  EXPECT_EQ(rank.schedules(0).schedule(), "4x6");
  EXPECT_TRUE(rank.schedules(0).final_val_loss().has_low());
}

TEST_F(ServiceTest, RankFiltersSortsAndPages) {
  const int64_t id =
      Submit(alice_, Spec({"2x2,4x4", "1x2,4x4", "1x1,4x5"}, {1}));
  const std::string worker = Register(worker_token_);
  const std::map<std::string, double> loss = {
      {"4x6", 3.0}, {"2x2,4x4", 2.9}, {"1x2,4x4", 3.1}, {"1x1,4x5", 2.95}};
  for (int i = 0; i < 4; ++i) {
    v1::TrialTask task = Lease(worker_token_, worker);
    v1::CompleteResponse done;
    ASSERT_TRUE(Complete(worker_token_, worker, task.trial(),
                         loss.at(task.trial().schedule()), &done)
                    .ok());
  }
  v1::RankRequest req;
  req.set_experiment_id(id);
  req.set_page_size(2);
  req.set_sort(v1::RANK_SORT_VAL_LOSS);
  req.set_descending(true);
  v1::RankResponse page1;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx.get(), req, &page1).ok());
  ASSERT_EQ(page1.schedules_size(), 2);
  EXPECT_EQ(page1.schedules(0).schedule(), "1x2,4x4");
  EXPECT_EQ(page1.total(), 4);
  ASSERT_FALSE(page1.next_page_token().empty());
  req.set_page_token(page1.next_page_token());
  v1::RankResponse page2;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx2.get(), req, &page2).ok());
  ASSERT_EQ(page2.schedules_size(), 2);
  EXPECT_EQ(page2.schedules(1).schedule(), "2x2,4x4");
  EXPECT_TRUE(page2.next_page_token().empty());

  // "1x1,4x5" has a single-layer run: not smooth.
  v1::RankRequest smooth;
  smooth.set_experiment_id(id);
  smooth.add_require(v1::PRINCIPLE_SMOOTH);
  v1::RankResponse filtered;
  auto ctx3 = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx3.get(), smooth, &filtered).ok());
  EXPECT_EQ(filtered.total(), 3);
  for (const v1::RankedSchedule& r : filtered.schedules()) {
    EXPECT_NE(r.schedule(), "1x1,4x5");
  }

  v1::RankRequest bad = req;
  bad.set_page_token("garbage");
  v1::RankResponse ignored;
  auto ctx4 = Ctx(viewer_);
  EXPECT_EQ(results_->Rank(ctx4.get(), bad, &ignored).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServiceTest, GetTrialIncludesSameSeedBaselineAndCompareIsPaired) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {7}));
  const std::string worker = Register(worker_token_);
  int64_t prism_trial = 0;
  for (int i = 0; i < 2; ++i) {
    v1::TrialTask task = Lease(worker_token_, worker);
    const bool is_baseline = task.trial().is_baseline();
    if (!is_baseline) prism_trial = task.trial().id();
    v1::CompleteResponse done;
    ASSERT_TRUE(Complete(worker_token_, worker, task.trial(),
                         is_baseline ? 3.0 : 2.8, &done)
                    .ok());
  }
  v1::GetTrialRequest req;
  req.set_trial_id(prism_trial);
  req.set_with_baseline(true);
  v1::GetTrialResponse resp;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->GetTrial(ctx.get(), req, &resp).ok());
  EXPECT_EQ(resp.trial().schedule(), "2x2,4x4");
  EXPECT_EQ(resp.points_size(), 2);
  EXPECT_TRUE(resp.baseline().is_baseline());
  EXPECT_EQ(resp.baseline().seed(), 7);
  EXPECT_EQ(resp.baseline_points_size(), 2);
  ASSERT_EQ(resp.trial().attempts_size(), 1);
  EXPECT_TRUE(resp.trial().principles().smooth());

  v1::CompareRequest cmp;
  cmp.set_experiment_id(id);
  cmp.set_schedule_a("4x6");
  cmp.set_schedule_b("2x2,4x4");
  v1::CompareResponse compared;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(results_->Compare(ctx2.get(), cmp, &compared).ok());
  EXPECT_NEAR(compared.delta().mean(), -0.2, 1e-6);
  EXPECT_EQ(compared.delta().n(), 1);
  EXPECT_FALSE(compared.delta().has_low());
  EXPECT_EQ(compared.verdict(), v1::VERDICT_NEEDS_SEEDS);
  EXPECT_FALSE(compared.has_p_value());
  cmp.set_schedule_b("1x2,4x4");
  auto ctx3 = Ctx(viewer_);
  EXPECT_EQ(results_->Compare(ctx3.get(), cmp, &compared).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, HigherPriorityLeasesFirstThenFairShareBetweenUsers) {
  const int64_t a1 = Submit(alice_, Spec({"2x2,4x4"}, {1, 2, 3}));
  const int64_t a2 = Submit(alice_, Spec({"2x2,4x4"}, {1}, /*priority=*/5));
  const int64_t b1 = Submit(bob_, Spec({"2x2,4x4"}, {1, 2, 3}));
  // Six workers, one lease each (a worker holds one trial at a time).
  std::vector<int64_t> order;
  for (int i = 0; i < 6; ++i) {
    const std::string worker = Register(worker_token_);
    order.push_back(Lease(worker_token_, worker).trial().experiment_id());
  }
  // a2's two trials first (priority 5); then alice holds 2 live trials and
  // bob none, so bob's go until they are even, then alternate (alice's
  // older experiment wins ties).
  EXPECT_THAT(order, ElementsAre(a2, a2, b1, b1, a1, b1));
}

class PerUserLimitTest : public ServiceTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    o->max_running_per_user = 2;
  }
};

TEST_F(PerUserLimitTest, UserAtLimitIsSkippedUntilATrialFinishes) {
  Submit(alice_, Spec({"2x2,4x4", "1x2,4x4"}, {1, 2}));
  // One worker per lease: a worker holds one trial at a time.
  const std::string worker = Register(worker_token_);
  const v1::TrialTask first = Lease(worker_token_, worker);
  ASSERT_NE(Lease(worker_token_, Register(worker_token_)).trial().id(), 0);
  const std::string idle = Register(worker_token_);
  EXPECT_EQ(Lease(worker_token_, idle).trial().id(), 0);
  const int64_t bob_exp = Submit(bob_, Spec({"2x2,4x4"}, {1}));
  EXPECT_EQ(Lease(worker_token_, idle).trial().experiment_id(), bob_exp);
  v1::CompleteResponse done;
  ASSERT_TRUE(Complete(worker_token_, worker, first.trial(), 3.0, &done).ok());
  EXPECT_EQ(Lease(worker_token_, worker).trial().experiment_id(),
            first.trial().experiment_id());
}

TEST_F(ServiceTest, WallClockSteppedAnHourMovesNoLeaseDeadline) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w1 = Register(worker_token_);
  const v1::TrialTask first = Lease(worker_token_, w1);
  ASSERT_EQ(first.trial().attempt(), 1);
  // Forward an hour: the lease (30 s) does not expire with it.
  clock_.StepWall(3'600'000);
  clock_.Advance(10'000);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 0);
  EXPECT_FALSE(Heartbeat(w1, first.trial(), 10).stop());
  // Back two hours: a worker that went silent still loses its lease once
  // the lease has really passed, not an hour later.
  clock_.StepWall(-7'200'000);
  clock_.Advance(29'000);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 0);
  clock_.Advance(2'000);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 1);
  EXPECT_EQ(GetTrial(first.trial().id()).state(), v1::TRIAL_QUEUED);
}

TEST_F(ServiceTest, ExpiredLeaseRequeuesWithNextAttemptThenFailsAtMax) {
  Submit(alice_, Spec({"4x6"}, {1}));  // the baseline alone: one trial
  const std::string w1 = Register(worker_token_);
  const std::string w2 = Register(worker_token_);
  const v1::TrialTask first = Lease(worker_token_, w1);
  ASSERT_EQ(first.trial().attempt(), 1);
  clock_.Advance(29'000);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 0);
  clock_.Advance(2'000);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 1);
  EXPECT_EQ(GetTrial(first.trial().id()).state(), v1::TRIAL_QUEUED);

  const v1::TrialTask second = Lease(worker_token_, w2);
  EXPECT_EQ(second.trial().id(), first.trial().id());
  EXPECT_EQ(second.trial().attempt(), 2);
  // Heartbeats keep it alive past the original deadline...
  clock_.Advance(20'000);
  EXPECT_FALSE(Heartbeat(w2, second.trial(), 10).stop());
  clock_.Advance(20'000);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 0);
  // ...until they stop; max_attempts is 2, so the trial fails.
  clock_.Advance(31'000);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 1);
  v1::Trial failed = GetTrial(first.trial().id());
  EXPECT_EQ(failed.state(), v1::TRIAL_FAILED);
  EXPECT_THAT(failed.error(), HasSubstr("lease expired"));
  ASSERT_EQ(failed.attempts_size(), 2);
  EXPECT_EQ(failed.attempts(0).worker_id(), w1);
  EXPECT_EQ(failed.attempts(1).worker_id(), w2);
}

TEST_F(ServiceTest, ReleasesNeverFailATrialButMaxAttemptsExpiriesDo) {
  Submit(alice_, Spec({"4x6"}, {1}));  // one trial; max_attempts is 2
  const std::string w = Register(worker_token_);
  constexpr int kReleases = 6;
  int64_t trial_id = 0;
  for (int i = 1; i <= kReleases; ++i) {
    const v1::TrialTask task = Lease(worker_token_, w);
    ASSERT_EQ(task.trial().attempt(), i);
    trial_id = task.trial().id();
    v1::FailRequest release;
    release.set_worker_id(w);
    release.set_trial_id(trial_id);
    release.set_attempt(i);
    release.set_message("worker shut down at step 3");
    release.set_released(true);
    v1::FailResponse resp;
    auto ctx = Ctx(worker_token_);
    ASSERT_TRUE(workers_->Fail(ctx.get(), release, &resp).ok());
    EXPECT_EQ(resp.trial().state(), v1::TRIAL_QUEUED);
  }
  v1::Trial released = GetTrial(trial_id);
  EXPECT_EQ(released.state(), v1::TRIAL_QUEUED);
  EXPECT_EQ(released.error(), "");
  ASSERT_EQ(released.attempts_size(), kReleases);
  for (const v1::TrialAttempt& a : released.attempts()) {
    EXPECT_EQ(a.outcome(), v1::TRIAL_QUEUED);
    EXPECT_THAT(a.message(), HasSubstr("released by worker"));
  }

  // Two expiries (max_attempts) do fail it.
  for (int expiry = 1; expiry <= 2; ++expiry) {
    const v1::TrialTask task = Lease(worker_token_, w);
    ASSERT_EQ(task.trial().id(), trial_id);
    clock_.Advance(31'000);
    ASSERT_EQ(*coordinator_->queue()->ExpireLeases(), 1);
    EXPECT_EQ(GetTrial(trial_id).state(),
              expiry < 2 ? v1::TRIAL_QUEUED : v1::TRIAL_FAILED);
  }
  const v1::Trial failed = GetTrial(trial_id);
  EXPECT_EQ(failed.attempt(), kReleases + 2);
  EXPECT_THAT(failed.error(), HasSubstr("2 of 2 allowed attempts failed"));
}

TEST_F(ServiceTest, StartRecordsTheStepTheWorkerResumedFrom) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w1 = Register(worker_token_);
  const std::string w2 = Register(worker_token_);
  const v1::TrialTask first = Lease(worker_token_, w1);
  // The coordinator's last known step (15) is past the checkpoint (10).
  EXPECT_FALSE(Heartbeat(w1, first.trial(), 15).stop());
  clock_.Advance(31'000);
  ASSERT_EQ(*coordinator_->queue()->ExpireLeases(), 1);
  const v1::TrialTask second = Lease(worker_token_, w2);
  EXPECT_EQ(second.resume_step(), 15);
  EXPECT_FALSE(
      GetTrial(second.trial().id()).attempts(1).has_resumed_from_step());

  v1::StartRequest start;
  start.set_worker_id(w2);
  start.set_trial_id(second.trial().id());
  start.set_attempt(2);
  start.set_resumed_from_step(10);
  v1::StartResponse started;
  auto ctx = Ctx(worker_token_);
  ASSERT_TRUE(workers_->Start(ctx.get(), start, &started).ok());
  EXPECT_GT(started.lease_deadline_unix_ms(), clock_.NowMs());
  const v1::Trial trial = GetTrial(second.trial().id());
  EXPECT_EQ(trial.state(), v1::TRIAL_RUNNING);
  ASSERT_EQ(trial.attempts_size(), 2);
  EXPECT_EQ(trial.attempts(1).resumed_from_step(), 10);

  // The superseded attempt cannot claim a start, nor a negative step.
  start.set_worker_id(w1);
  start.set_attempt(1);
  auto ctx2 = Ctx(worker_token_);
  EXPECT_EQ(workers_->Start(ctx2.get(), start, &started).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  start.set_worker_id(w2);
  start.set_attempt(2);
  start.set_resumed_from_step(-1);
  auto ctx3 = Ctx(worker_token_);
  EXPECT_EQ(workers_->Start(ctx3.get(), start, &started).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServiceTest, SupersededAttemptIsRefusedAndToldToStop) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w1 = Register(worker_token_);
  const std::string w2 = Register(worker_token_);
  const v1::TrialTask stale = Lease(worker_token_, w1);
  clock_.Advance(31'000);
  ASSERT_EQ(*coordinator_->queue()->ExpireLeases(), 1);
  const v1::TrialTask fresh = Lease(worker_token_, w2);
  ASSERT_EQ(fresh.trial().attempt(), 2);

  v1::ReportResponse report;
  grpc::Status s = Report(worker_token_, w1, stale.trial(),
                          {Point(v1::SPLIT_TRAIN, 5, 1.0f)}, &report);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("does not hold the lease"));
  v1::CompleteResponse done;
  EXPECT_EQ(Complete(worker_token_, w1, stale.trial(), 1.0, &done).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::FailRequest fail;
  fail.set_worker_id(w1);
  fail.set_trial_id(stale.trial().id());
  fail.set_attempt(1);
  v1::FailResponse failed;
  auto ctx = Ctx(worker_token_);
  EXPECT_EQ(workers_->Fail(ctx.get(), fail, &failed).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(Heartbeat(w1, stale.trial(), 5).stop());
  EXPECT_FALSE(Heartbeat(w2, fresh.trial(), 5).stop());
  // Nothing of the stale attempt was stored.
  v1::GetTrialRequest req;
  req.set_trial_id(fresh.trial().id());
  v1::GetTrialResponse trial;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(results_->GetTrial(ctx2.get(), req, &trial).ok());
  EXPECT_EQ(trial.points_size(), 0);
}

TEST_F(ServiceTest, DuplicatePointsAreStoredOnceAndCompleteIsIdempotent) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w = Register(worker_token_);
  const v1::TrialTask task = Lease(worker_token_, w);
  const std::vector<v1::LossPoint> points = {Point(v1::SPLIT_TRAIN, 1, 5.0f),
                                             Point(v1::SPLIT_TRAIN, 2, 4.0f)};
  v1::ReportResponse first, again;
  ASSERT_TRUE(Report(worker_token_, w, task.trial(), points, &first).ok());
  ASSERT_TRUE(Report(worker_token_, w, task.trial(), points, &again).ok());
  EXPECT_EQ(first.stored(), 2);
  EXPECT_EQ(again.stored(), 0);
  EXPECT_EQ(again.duplicates(), 2);
  v1::CompleteResponse done, done_again;
  ASSERT_TRUE(Complete(worker_token_, w, task.trial(), 3.0, &done).ok());
  ASSERT_TRUE(Complete(worker_token_, w, task.trial(), 3.0, &done_again).ok());
  EXPECT_EQ(done_again.trial().finished_unix_ms(),
            done.trial().finished_unix_ms());
  v1::GetTrialRequest req;
  req.set_trial_id(task.trial().id());
  v1::GetTrialResponse trial;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->GetTrial(ctx.get(), req, &trial).ok());
  EXPECT_EQ(trial.points_size(), 4);  // 2 train + 2 val from Complete
}

TEST_F(ServiceTest, BadPointsAreInvalidArgument) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w = Register(worker_token_);
  const v1::TrialTask task = Lease(worker_token_, w);
  v1::ReportResponse r;
  EXPECT_EQ(Report(worker_token_, w, task.trial(),
                   {Point(v1::SPLIT_UNSPECIFIED, 1, 1.0f)}, &r)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Report(worker_token_, w, task.trial(),
                   {Point(v1::SPLIT_TRAIN, -1, 1.0f)}, &r)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServiceTest, CancelStopsRunningTrialsAndCancelsQueuedOnes) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  const std::string w = Register(worker_token_);
  const v1::TrialTask task = Lease(worker_token_, w);
  v1::ExperimentRef ref;
  ref.set_id(id);
  v1::Experiment cancelled;
  auto ctx = Ctx(alice_);
  ASSERT_TRUE(experiments_->Cancel(ctx.get(), ref, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::EXPERIMENT_CANCELLED);
  EXPECT_EQ(cancelled.counts().cancelled(), 2);
  EXPECT_TRUE(Heartbeat(w, task.trial(), 3).stop());
  EXPECT_EQ(Lease(worker_token_, w).trial().id(), 0);
}

TEST_F(ServiceTest, PausedExperimentsAreNotLeasedUntilResumed) {
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w = Register(worker_token_);
  v1::ExperimentRef ref;
  ref.set_id(id);
  v1::Experiment e;
  auto ctx = Ctx(alice_);
  ASSERT_TRUE(experiments_->Pause(ctx.get(), ref, &e).ok());
  EXPECT_EQ(e.state(), v1::EXPERIMENT_PAUSED);
  EXPECT_EQ(Lease(worker_token_, w).trial().id(), 0);
  auto ctx2 = Ctx(kAdminToken);  // admins may change anyone's
  ASSERT_TRUE(experiments_->Resume(ctx2.get(), ref, &e).ok());
  EXPECT_NE(Lease(worker_token_, w).trial().id(), 0);
  v1::SetPriorityRequest prio;
  prio.set_id(id);
  prio.set_priority(9);
  auto ctx3 = Ctx(alice_);
  ASSERT_TRUE(experiments_->SetPriority(ctx3.get(), prio, &e).ok());
  EXPECT_EQ(e.priority(), 9);
}

TEST_F(ServiceTest, RestartExtendsLiveLeasesSoWorkersCanReconnect) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w = Register(worker_token_);
  const v1::TrialTask task = Lease(worker_token_, w);
  Restart();
  // The coordinator was "down" past the lease; the restart extended it.
  clock_.Advance(25'000);
  Restart();
  clock_.Advance(25'000);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 0);
  v1::ReportResponse r;
  EXPECT_TRUE(Report(worker_token_, w, task.trial(),
                     {Point(v1::SPLIT_TRAIN, 1, 1.0f)}, &r)
                  .ok());
  EXPECT_EQ(r.stored(), 1);
}

TEST_F(ServiceTest, RestartGraceCoversALeaseAHeartbeatAndTheReconnectBound) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w = Register(worker_token_);
  Lease(worker_token_, w);
  Restart();
  // A worker that heartbeated just before the crash may next get through a
  // heartbeat period plus its reconnect bound after the restart.
  const int64_t grace = v1::RestartGraceMs(30, 5);
  EXPECT_GT(grace, (30 + 5) * 1000);
  clock_.Advance(grace - 1);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 0);
  clock_.Advance(2);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 1);
}

TEST_F(ServiceTest, ALostLeaseAnswerIsDeliveredAgainNotWaitedOut) {
  Submit(alice_, Spec({"4x6", "2x2,4x4"}, {1}));
  const std::string w = Register(worker_token_);
  const v1::TrialTask first = Lease(worker_token_, w);
  ASSERT_NE(first.trial().id(), 0);
  // The answer never reached the worker, which asks again: same trial, same
  // attempt, not the next trial and not a second attempt.
  const v1::TrialTask again = Lease(worker_token_, w);
  EXPECT_EQ(again.trial().id(), first.trial().id());
  EXPECT_EQ(again.trial().attempt(), 1);
  // Another worker gets the other trial.
  const std::string other = Register(worker_token_);
  const v1::TrialTask second = Lease(worker_token_, other);
  EXPECT_NE(second.trial().id(), first.trial().id());
  // Once the worker reported, the trial is running: never handed out again.
  v1::ReportResponse r;
  ASSERT_TRUE(Report(worker_token_, w, first.trial(),
                     {Point(v1::SPLIT_VAL, 0, 1.0f)}, &r)
                  .ok());
  EXPECT_EQ(Lease(worker_token_, w).trial().id(), 0);
}

TEST_F(ServiceTest, ListTrialsPagesWithTotals) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4", "1x2,4x4"}, {1, 2}));
  v1::ListTrialsRequest req;
  req.set_experiment_id(id);
  req.set_page_size(4);
  v1::ListTrialsResponse page;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(experiments_->ListTrials(ctx.get(), req, &page).ok());
  EXPECT_EQ(page.trials_size(), 4);
  EXPECT_EQ(page.total(), 6);
  EXPECT_TRUE(page.trials(0).is_baseline());
  req.set_page_token(page.next_page_token());
  v1::ListTrialsResponse rest;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(experiments_->ListTrials(ctx2.get(), req, &rest).ok());
  EXPECT_EQ(rest.trials_size(), 2);
  EXPECT_TRUE(rest.next_page_token().empty());
}

TEST_F(ServiceTest, WatchStreamsTheExperimentThenItsEvents) {
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", std::string("Bearer ") + viewer_);
  v1::WatchRequest req;
  req.set_experiment_id(id);
  auto reader = results_->Watch(&ctx, req);
  v1::WatchResponse round;
  ASSERT_TRUE(reader->Read(&round));
  ASSERT_EQ(round.events_size(), 1);
  EXPECT_EQ(round.events(0).experiment_updated().id(), id);
  // Events arrive in rounds (one message each); read until `want` is seen.
  auto next = [&](auto want) -> std::optional<v1::ExperimentEvent> {
    while (reader->Read(&round)) {
      for (const v1::ExperimentEvent& e : round.events()) {
        if (want(e)) return e;
      }
    }
    return std::nullopt;
  };
  const std::string w = Register(worker_token_);
  const v1::TrialTask task = Lease(worker_token_, w);
  std::optional<v1::ExperimentEvent> leased =
      next([&](const v1::ExperimentEvent& e) {
        return e.trial_updated().id() == task.trial().id();
      });
  ASSERT_TRUE(leased.has_value());
  EXPECT_EQ(leased->trial_updated().state(), v1::TRIAL_LEASED);
  v1::ReportResponse r;
  ASSERT_TRUE(Report(worker_token_, w, task.trial(),
                     {Point(v1::SPLIT_TRAIN, 3, 2.0f)}, &r)
                  .ok());
  std::optional<v1::ExperimentEvent> reported =
      next([](const v1::ExperimentEvent& e) { return e.points_size() > 0; });
  ASSERT_TRUE(reported.has_value());
  ASSERT_EQ(reported->points_size(), 1);
  EXPECT_EQ(reported->points(0).step(), 3);
  EXPECT_EQ(reported->trial_updated().state(), v1::TRIAL_RUNNING);
  ctx.TryCancel();
  while (reader->Read(&round)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(ServiceTest, ScheduleServiceCountsListsAndChecks) {
  v1::CountSchedulesRequest count;
  count.mutable_space()->set_d_model(768);
  count.mutable_space()->set_layers(12);
  count.mutable_space()->set_base_heads(12);
  v1::CountSchedulesResponse counted;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(schedules_->Count(ctx.get(), count, &counted).ok());
  EXPECT_EQ(counted.count(), 12376u);

  v1::ListSchedulesRequest list;
  *list.mutable_space() = count.space();
  list.set_page_size(5);
  v1::ListSchedulesResponse listed;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(schedules_->List(ctx2.get(), list, &listed).ok());
  EXPECT_EQ(listed.schedules_size(), 5);
  EXPECT_FALSE(listed.next_page_token().empty());

  v1::CheckScheduleRequest check;
  check.set_d_model(768);
  check.set_base_heads(12);
  check.set_schedule("3x3,6x3,12x6");
  v1::CheckScheduleResponse checked;
  auto ctx3 = Ctx(viewer_);
  ASSERT_TRUE(schedules_->Check(ctx3.get(), check, &checked).ok());
  EXPECT_TRUE(checked.report().smooth());
  EXPECT_THAT(checked.report().head_dims(), ::testing::Contains(256));
  check.set_schedule("5x3,12x9");
  auto ctx4 = Ctx(viewer_);
  grpc::Status bad = schedules_->Check(ctx4.get(), check, &checked);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("divisibility"));
}

// --- auth ----------------------------------------------------------------

TEST_F(ServiceTest, CallsWithoutOrWithAnUnknownTokenAreUnauthenticated) {
  grpc::Status s;
  Submit("", Spec({"4x6"}, {1}), &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("missing credentials"));
  Submit("prism_not_a_token", Spec({"4x6"}, {1}), &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::ListExperimentsRequest req;
  v1::ListExperimentsResponse resp;
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Basic abc");
  EXPECT_EQ(experiments_->List(&ctx, req, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(ServiceTest, WorkersCannotSubmitAndViewersCannotWrite) {
  grpc::Status s;
  Submit(worker_token_, Spec({"4x6"}, {1}), &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("worker"));
  Submit(viewer_, Spec({"4x6"}, {1}), &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  v1::ExperimentRef ref;
  ref.set_id(id);
  v1::Experiment e;
  auto ctx = Ctx(viewer_);
  EXPECT_EQ(experiments_->Cancel(ctx.get(), ref, &e).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::RegisterRequest reg;
  v1::RegisterResponse registered;
  auto ctx2 = Ctx(viewer_);
  EXPECT_EQ(workers_->Register(ctx2.get(), reg, &registered).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  auto ctx3 = Ctx(alice_);  // users do not act as workers
  EXPECT_EQ(workers_->Register(ctx3.get(), reg, &registered).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Reading is fine for a viewer.
  EXPECT_EQ(GetExperiment(id).id(), id);
}

TEST_F(ServiceTest, UsersChangeOnlyTheirOwnExperiments) {
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  v1::ExperimentRef ref;
  ref.set_id(id);
  v1::Experiment e;
  auto ctx = Ctx(bob_);
  grpc::Status s = experiments_->Cancel(ctx.get(), ref, &e);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("alice"));
  EXPECT_EQ(GetExperiment(id).state(), v1::EXPERIMENT_ACTIVE);
  auto ctx2 = Ctx(alice_);
  EXPECT_TRUE(experiments_->Cancel(ctx2.get(), ref, &e).ok());
}

TEST_F(ServiceTest, OnlyAdminsCreateTokensAndWhoAmIAnswersEveryone) {
  v1::CreateTokenRequest req;
  req.set_user("mallory");
  req.set_role(v1::ROLE_ADMIN);
  v1::CreateTokenResponse resp;
  auto ctx = Ctx(alice_);
  EXPECT_EQ(auth_->CreateToken(ctx.get(), req, &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::WhoAmIResponse who;
  auto ctx2 = Ctx(worker_token_);
  ASSERT_TRUE(auth_->WhoAmI(ctx2.get(), v1::WhoAmIRequest(), &who).ok());
  EXPECT_EQ(who.user(), "farm");
  EXPECT_EQ(who.role(), v1::ROLE_WORKER);
  const std::string token = Token("newbie", v1::ROLE_VIEWER);
  EXPECT_EQ(token.rfind("prism_", 0), 0u);
  EXPECT_EQ(token.size(), 6u + 64u);
}

TEST_F(ServiceTest, AWorkerIdBelongsToTheUserWhoRegisteredIt) {
  const std::string w = Register(worker_token_);
  const std::string other = Token("other-farm", v1::ROLE_WORKER);
  grpc::Status s;
  Lease(other, w, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  Lease(worker_token_, "never-registered", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("call Register first"));
}

TEST_F(ServiceTest, WorkersReadIdleBusyLostOrStopped) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string busy = Register(worker_token_);
  const std::string gone = Register(worker_token_);
  const std::string crashed = Register(worker_token_);
  const v1::TrialTask task = Lease(worker_token_, busy);
  auto states = [&] {
    v1::ListWorkersResponse resp;
    auto ctx = Ctx(viewer_);
    EXPECT_TRUE(
        workers_->ListWorkers(ctx.get(), v1::ListWorkersRequest(), &resp).ok());
    std::map<std::string, v1::WorkerState> by_id;
    for (const v1::Worker& w : resp.workers()) by_id[w.id()] = w.state();
    return by_id;
  };
  auto deregister = [&](const std::string& token, const std::string& id) {
    v1::DeregisterRequest req;
    req.set_worker_id(id);
    v1::DeregisterResponse resp;
    auto ctx = Ctx(token);
    return workers_->Deregister(ctx.get(), req, &resp);
  };
  EXPECT_EQ(states()[busy], v1::WORKER_BUSY);
  EXPECT_EQ(states()[gone], v1::WORKER_IDLE);

  EXPECT_TRUE(deregister(worker_token_, gone).ok());
  EXPECT_EQ(states()[gone], v1::WORKER_STOPPED);
  // Only the worker's own user (or an admin) says goodbye for it.
  EXPECT_EQ(
      deregister(Token("other-farm", v1::ROLE_WORKER), crashed).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(deregister(viewer_, crashed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(deregister(worker_token_, "").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(deregister(worker_token_, "never-registered").error_code(),
            grpc::StatusCode::NOT_FOUND);

  // Silence past the lease is lost; a stopped worker stays stopped.
  clock_.Advance(31'000);
  EXPECT_FALSE(Heartbeat(busy, task.trial(), 3).stop());
  EXPECT_EQ(states()[busy], v1::WORKER_BUSY);
  EXPECT_EQ(states()[crashed], v1::WORKER_LOST);
  EXPECT_EQ(states()[gone], v1::WORKER_STOPPED);

  // Registering again brings a stopped worker back.
  EXPECT_EQ(Register(worker_token_, gone), gone);
  EXPECT_EQ(states()[gone], v1::WORKER_IDLE);
}

// --- bad specs -----------------------------------------------------------

struct BadSpecCase {
  const char* name;
  const char* spec_text;
  const char* message;
};

class BadSpecTest : public ServiceTest,
                    public ::testing::WithParamInterface<BadSpecCase> {};

TEST_P(BadSpecTest, IsInvalidArgumentNamingTheProblemAndStoresNothing) {
  v1::SubmitRequest req;
  req.set_spec_text(GetParam().spec_text);
  v1::SubmitResponse resp;
  auto ctx = Ctx(alice_);
  grpc::Status s = experiments_->Submit(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr(GetParam().message));
  EXPECT_EQ(CountExperiments(), 0);
  absl::StatusOr<std::map<v1::TrialState, int64_t>> trials =
      coordinator_->store()->CountTrialsByState();
  ASSERT_TRUE(trials.ok());
  EXPECT_TRUE(trials->empty());
}

INSTANTIATE_TEST_SUITE_P(
    Specs, BadSpecTest,
    ::testing::Values(
        BadSpecCase{"UnknownPreset", "model { preset: 'huge' } seeds: 1",
                    "unknown preset 'huge'"},
        // d_model 96 / 4 heads = 24: even the baseline's head dim is not a
        // power of two.
        BadSpecCase{"PrinciplesLeaveNoSchedule",
                    "model { preset: 'tiny' d_model: 96 } seeds: 1 "
                    "principles: PRINCIPLE_POW2",
                    "leave no schedule"},
        BadSpecCase{"ZeroSeeds", "model { preset: 'tiny' }",
                    "at least one seed"},
        BadSpecCase{"DuplicateSeeds", "model { preset: 'tiny' } seeds: [1, 1]",
                    "seed 1 is listed twice"},
        BadSpecCase{"MalformedTextproto", "model { preset: 'tiny' \n seeds: 1",
                    "spec_text:2:"},
        BadSpecCase{"WrongDepth",
                    "model { preset: 'tiny' } seeds: 1 schedules: '2x2,4x8'",
                    "has 10 layers but the model has 6"},
        BadSpecCase{"BrokenHardConstraint",
                    "model { preset: 'tiny' } seeds: 1 schedules: '3x2,4x4'",
                    "divisibility"},
        BadSpecCase{"InconsistentOverride",
                    "model { preset: 'tiny' base_heads: 3 } seeds: 1",
                    "model:"},
        BadSpecCase{"NegativeSteps",
                    "model { preset: 'tiny' } seeds: 1 budget { steps: -5 }",
                    "budget.steps"},
        BadSpecCase{"RandomWithoutSamples",
                    "model { preset: 'tiny' } seeds: 1 strategy: "
                    "STRATEGY_RANDOM",
                    "samples must be positive"},
        BadSpecCase{"GridOverTheCap",
                    "model { preset: '124m' } seeds: [1, 2, 3, 4, 5, 6, 7, 8, "
                    "9]",
                    "STRATEGY_RANDOM"}),
    [](const ::testing::TestParamInfo<BadSpecCase>& info) {
      return std::string(info.param.name);
    });

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

  // SeedsBySchedule returns every trial's seed, by schedule.
  std::map<std::string, std::vector<int64_t>> SeedsBySchedule(int64_t id) {
    v1::ListTrialsRequest req;
    req.set_experiment_id(id);
    req.set_page_size(1000);
    v1::ListTrialsResponse resp;
    auto ctx = Ctx(viewer_);
    EXPECT_TRUE(experiments_->ListTrials(ctx.get(), req, &resp).ok());
    std::map<std::string, std::vector<int64_t>> out;
    for (const v1::Trial& t : resp.trials()) {
      out[t.schedule()].push_back(t.seed());
    }
    return out;
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

  v1::RankResponse RankExperiment(int64_t id) {
    v1::RankRequest req;
    req.set_experiment_id(id);
    v1::RankResponse resp;
    auto ctx = Ctx(viewer_);
    EXPECT_TRUE(results_->Rank(ctx.get(), req, &resp).ok());
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

// RssBytes is this process's resident set (the in-process coordinator's).
int64_t RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream in(line.substr(6));
      int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

TEST(MaxRequestBytesTest, FitsTheLargestSpecAndReport) {
  Limits limits;
  EXPECT_GE(MaxRequestBytes(limits),
            limits.max_points_per_report * kMaxLossPointWireBytes);
  EXPECT_GE(MaxRequestBytes(limits), limits.max_spec_bytes);
  EXPECT_LT(MaxRequestBytes(limits), int64_t{8} << 20);
  // A full report of the largest points really is within it.
  v1::ReportRequest report;
  report.set_worker_id(std::string(limits.max_string_bytes, 'w'));
  report.set_trial_id(std::numeric_limits<int64_t>::max());
  report.set_attempt(std::numeric_limits<int32_t>::max());
  for (int i = 0; i < limits.max_points_per_report; ++i) {
    v1::LossPoint* p = report.add_points();
    p->set_split(v1::SPLIT_VAL);
    p->set_step(std::numeric_limits<int64_t>::max());
    p->set_loss(1.5f);
    p->set_learning_rate(1e-3f);
    p->set_tokens_per_second(1e9);
    p->set_elapsed_seconds(1e6);
  }
  EXPECT_LE(static_cast<int64_t>(report.ByteSizeLong()),
            MaxRequestBytes(limits));
  limits.max_message_bytes = 1 << 20;
  EXPECT_EQ(MaxRequestBytes(limits), 1 << 20);
}

// Issue #32: parallel 60 MB Submits without a token, on connections of
// their own and eight on one connection, sent by another process
// (tests/server/grpc_flood.cc), are refused and the coordinator's memory
// stays within its gRPC memory quota.
TEST_F(CoordinatorTest, OversizedRequestsAreRefusedWithoutBeingBuffered) {
  const std::string flood =
      std::string(PRISM_BINARY_DIR) + "/tests/server/grpc_flood";
  const std::string out = dir_.File("flood.out");
  const int64_t before = RssBytes();
  std::atomic<int64_t> peak{before};
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      const int64_t now = RssBytes();
      int64_t seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const std::string command = absl::StrCat(
      flood, " ", coordinator_->grpc_address(), " 9 8 60000000 > ", out);
  const int rc = std::system(command.c_str());
  done = true;
  sampler.join();
  ASSERT_EQ(rc, 0) << command;
  std::ifstream codes(out);
  int code = 0, calls = 0;
  while (codes >> code) {
    ++calls;
    // Over the size limit, or cut off by the memory quota (its connection
    // closed).
    EXPECT_TRUE(code == grpc::StatusCode::RESOURCE_EXHAUSTED ||
                code == grpc::StatusCode::UNAVAILABLE)
        << code;
  }
  EXPECT_EQ(calls, 16);
  const int64_t growth = peak.load() - before;
  std::cout << "RSS before " << before / 1024 << " KiB, peak during " << calls
            << " oversized calls +" << growth / 1024 << " KiB\n";
  // gRPC 1.51 assembles a message before checking its size: what bounds
  // this is the memory quota (--grpc-max-buffered-bytes, 32 MiB), which gRPC
  // enforces after the fact; 16 x 60 MB got through to 550 MB without it.
  EXPECT_LT(growth, int64_t{112} << 20);
  // Still serving.
  v1::ListExperimentsResponse list;
  auto ctx = Ctx(kAdminToken);
  EXPECT_TRUE(
      experiments_->List(ctx.get(), v1::ListExperimentsRequest(), &list).ok());
}

}  // namespace
}  // namespace prism::server::testing
