// Leases through the services: priority and fair share, the per-user
// limit, expiry and requeue, releases, a lost Lease answer, cancel and pause.
// A real coordinator (SQLite file, gRPC on loopback, fake clock)
// driven through the generated stubs (service_fixture.h).
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/service_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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

}  // namespace
}  // namespace prism::server::testing
