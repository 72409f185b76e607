// Every limit of server/core/experiments/limits.h, exceeded through the real
// RPCs of a real coordinator: the call gets the right code and a message naming
// the flag and the value, and nothing is stored. Also the non-finite values a
// worker may send, which are refused, never dropped.
#include "server/core/experiments/limits.h"

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/experiments/ladder.h"
#include "server/core/infra/events.h"
#include "server/rpc/schedule_service.h"
#include "storage/sqlite_store.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Watch is an open (or refused) Watch call and its first Read's result.
struct Watch {
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientReader<v1::WatchResponse>> reader;
  bool first_read = false;
};

class LimitsTest : public CoordinatorTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    Limits& l = o->limits;
    l.max_trials_per_experiment = 10;
    l.max_seeds = 3;
    l.max_string_bytes = 100;
    l.max_spec_bytes = 2000;
    l.max_active_experiments_per_user = 2;
    l.max_points_per_report = 5;
    l.max_watch_streams = 3;
    l.max_watch_streams_per_user = 2;
    l.max_parameters = 50'000'000;
  }

  void SetUp() override {
    CoordinatorTest::SetUp();
    alice_ = Token("alice", v1::ROLE_USER);
    bob_ = Token("bob", v1::ROLE_USER);
    worker_token_ = Token("farm", v1::ROLE_WORKER);
  }

  int CountExperiments() {
    v1::ListExperimentsRequest req;
    v1::ListExperimentsResponse resp;
    auto ctx = Ctx(kAdminToken);
    EXPECT_TRUE(experiments_->List(ctx.get(), req, &resp).ok());
    return resp.experiments_size();
  }

  // ExpectRefused submits `spec` as alice and expects `code` with a message
  // containing `message`, and no experiment stored.
  void ExpectRefused(const v1::ExperimentSpec& spec, grpc::StatusCode code,
                     const std::string& message) {
    grpc::Status s;
    EXPECT_EQ(Submit(alice_, spec, &s), 0);
    EXPECT_EQ(s.error_code(), code) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(message));
    EXPECT_EQ(CountExperiments(), 0);
  }

  v1::GetTrialResponse GetTrial(int64_t id) {
    v1::GetTrialRequest req;
    req.set_trial_id(id);
    v1::GetTrialResponse resp;
    auto ctx = Ctx(alice_);
    EXPECT_TRUE(results_->GetTrial(ctx.get(), req, &resp).ok());
    return resp;
  }

  // Leased returns a trial of a fresh experiment, leased by a new worker.
  v1::Trial Leased(std::string* worker) {
    const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
    EXPECT_GT(id, 0);
    *worker = Register(worker_token_);
    return Lease(worker_token_, *worker).trial();
  }

  // OpenWatch starts a Watch of experiment `id` as `token`.
  Watch OpenWatch(const std::string& token, int64_t id) {
    Watch w;
    w.ctx = Ctx(token);
    v1::WatchRequest req;
    req.set_experiment_id(id);
    w.reader = results_->Watch(w.ctx.get(), req);
    v1::WatchResponse event;
    w.first_read = w.reader->Read(&event);
    return w;
  }

  std::string alice_, bob_, worker_token_;
};

TEST_F(LimitsTest, ExplicitScheduleListsCountAgainstTheTrialLimit) {
  // Bounded before planning: 4 listed schedules x 3 seeds.
  ExpectRefused(Spec({"2x2,4x4", "1x2,4x4", "2x3,4x3", "1x3,4x3"}, {1, 2, 3}),
                grpc::StatusCode::INVALID_ARGUMENT,
                "spec lists 4 schedules x 3 seeds = 12 trials; limit "
                "--max-trials-per-experiment=10");
  // And exactly after: 5 schedules and the baseline, x 2 seeds.
  ExpectRefused(
      Spec({"2x2,4x4", "1x2,4x4", "2x3,4x3", "1x3,4x3", "1x1,4x5"}, {1, 2}),
      grpc::StatusCode::INVALID_ARGUMENT,
      "spec has 12 trials; limit --max-trials-per-experiment=10");
}

TEST_F(LimitsTest, ASeedsPolicyCountsItsLastRound) {
  // 3 schedules and the baseline start with 2 seeds (8 trials, within 10)
  // but may grow to 3 seeds each: 12.
  v1::ExperimentSpec spec = Spec({"2x2,4x4", "1x2,4x4", "2x3,4x3"}, {});
  spec.mutable_seeds_policy()->set_min(2);
  spec.mutable_seeds_policy()->set_max(3);
  ExpectRefused(spec, grpc::StatusCode::INVALID_ARGUMENT,
                "spec may grow to 12 trials (4 schedules x seeds_policy.max "
                "3); limit --max-trials-per-experiment=10");
  // Its max is a number of seeds too.
  v1::ExperimentSpec many = Spec({"2x2,4x4"}, {});
  many.mutable_seeds_policy()->set_min(2);
  many.mutable_seeds_policy()->set_max(4);
  ExpectRefused(many, grpc::StatusCode::INVALID_ARGUMENT,
                "seeds_policy.max is 4; limit --max-seeds=3");
  spec.mutable_seeds_policy()->set_max(2);
  EXPECT_GT(Submit(alice_, spec), 0);
}

TEST_F(LimitsTest, GridAndRandomPlansAreCheckedToo) {
  v1::ExperimentSpec grid = Spec({}, {1, 2});
  ExpectRefused(grid, grpc::StatusCode::INVALID_ARGUMENT, "limit of 10 trials");
  v1::ExperimentSpec random = Spec({}, {1, 2});
  random.set_strategy(v1::STRATEGY_RANDOM);
  random.set_samples(6);
  ExpectRefused(random, grpc::StatusCode::INVALID_ARGUMENT,
                "limit of 10 trials");
}

TEST_F(LimitsTest, SeedsAreBounded) {
  ExpectRefused(Spec({"2x2,4x4"}, {1, 2, 3, 4}),
                grpc::StatusCode::INVALID_ARGUMENT,
                "seeds' count is 4; limit --max-seeds=3");
}

TEST_F(LimitsTest, StringsAreBounded) {
  v1::ExperimentSpec spec = Spec({"2x2,4x4"}, {1});
  spec.set_name(std::string(101, 'n'));
  ExpectRefused(spec, grpc::StatusCode::INVALID_ARGUMENT,
                "name's length in bytes is 101; limit --max-string-bytes=100");
  spec = Spec({"2x2,4x4"}, {1});
  spec.mutable_data()->add_train(std::string(500, 'p'));
  ExpectRefused(spec, grpc::StatusCode::INVALID_ARGUMENT,
                "data.train[0]'s length in bytes is 500");
  spec = Spec({std::string(200, '1')}, {1});
  ExpectRefused(spec, grpc::StatusCode::INVALID_ARGUMENT,
                "schedules[0]'s length in bytes is 200");

  v1::RegisterRequest req;
  req.set_host(std::string(101, 'h'));
  v1::RegisterResponse resp;
  auto ctx = Ctx(worker_token_);
  grpc::Status s = workers_->Register(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("host's length in bytes is 101; limit "
                        "--max-string-bytes=100"));
}

TEST_F(LimitsTest, SpecTextIsBoundedBeforeItIsParsed) {
  v1::SubmitRequest req;
  req.set_spec_text("name: \"x\"\n" + std::string(3000, '#'));
  v1::SubmitResponse resp;
  auto ctx = Ctx(alice_);
  grpc::Status s = experiments_->Submit(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("spec_text's length in bytes is 3010; limit "
                        "--max-spec-bytes=2000"));
  EXPECT_EQ(CountExperiments(), 0);
}

TEST_F(LimitsTest, UsersPrioritiesAreBoundedAndAdminsAreNot) {
  ExpectRefused(Spec({"2x2,4x4"}, {1}, /*priority=*/2147483647),
                grpc::StatusCode::INVALID_ARGUMENT,
                "priority is 2147483647; limit --max-user-priority=10");
  ExpectRefused(Spec({"2x2,4x4"}, {1}, /*priority=*/-11),
                grpc::StatusCode::INVALID_ARGUMENT,
                "limit --max-user-priority=10");
  const int64_t mine = Submit(alice_, Spec({"2x2,4x4"}, {1}, /*priority=*/10));
  ASSERT_GT(mine, 0);

  v1::SetPriorityRequest raise;
  raise.set_id(mine);
  raise.set_priority(1000);
  v1::Experiment e;
  auto ctx = Ctx(alice_);
  grpc::Status s = experiments_->SetPriority(ctx.get(), raise, &e);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("priority is 1000"));
  // An admin may; the refused call changed nothing before.
  v1::GetExperimentRequest get;
  get.set_id(mine);
  auto get_ctx = Ctx(alice_);
  ASSERT_TRUE(experiments_->Get(get_ctx.get(), get, &e).ok());
  EXPECT_EQ(e.priority(), 10);
  auto admin_ctx = Ctx(kAdminToken);
  ASSERT_TRUE(experiments_->SetPriority(admin_ctx.get(), raise, &e).ok());
  EXPECT_EQ(e.priority(), 1000);
  EXPECT_GT(Submit(kAdminToken, Spec({"2x2,4x4"}, {1}, /*priority=*/500)), 0);
}

TEST_F(LimitsTest, MaxAttemptsIsCapped) {
  v1::ExperimentSpec spec = Spec({"2x2,4x4"}, {1});
  spec.set_max_attempts(2000000000);
  ExpectRefused(spec, grpc::StatusCode::INVALID_ARGUMENT,
                "max_attempts is 2000000000; limit --max-attempts-limit=20");
}

TEST_F(LimitsTest, ModelSizeIsBounded) {
  v1::ExperimentSpec spec = Spec({}, {1});
  spec.mutable_model()->set_layers(1000);
  ExpectRefused(spec, grpc::StatusCode::INVALID_ARGUMENT,
                "model.layers is 1000; limit --max-layers=512");
  spec = Spec({}, {1});
  spec.mutable_model()->set_d_model(1 << 30);
  ExpectRefused(spec, grpc::StatusCode::INVALID_ARGUMENT,
                "model.d_model is 1073741824; limit --max-d-model=16384");
  spec = Spec({}, {1});
  spec.mutable_model()->set_context(1 << 20);
  ExpectRefused(spec, grpc::StatusCode::INVALID_ARGUMENT,
                "limit --max-context=131072");
  // A preset within every shape limit, but over the parameter limit.
  spec = Spec({"12x12"}, {1});
  spec.mutable_model()->set_preset("124m");
  ExpectRefused(spec, grpc::StatusCode::INVALID_ARGUMENT,
                "limit --max-parameters=50000000");
}

TEST_F(LimitsTest, ActiveExperimentsPerUserAreBounded) {
  const int64_t first = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  ASSERT_GT(first, 0);
  ASSERT_GT(Submit(alice_, Spec({"2x2,4x4"}, {2})), 0);
  grpc::Status s;
  EXPECT_EQ(Submit(alice_, Spec({"2x2,4x4"}, {3}), &s), 0);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(),
              HasSubstr("user 'alice' has 2 active or paused experiments; "
                        "limit --max-active-experiments-per-user=2"));
  EXPECT_EQ(CountExperiments(), 2);
  // Other users and admins are not affected; a cancelled one frees a slot.
  EXPECT_GT(Submit(bob_, Spec({"2x2,4x4"}, {1})), 0);
  v1::ExperimentRef ref;
  ref.set_id(first);
  v1::Experiment cancelled;
  auto ctx = Ctx(alice_);
  ASSERT_TRUE(experiments_->Cancel(ctx.get(), ref, &cancelled).ok());
  EXPECT_GT(Submit(alice_, Spec({"2x2,4x4"}, {3})), 0);
}

TEST_F(LimitsTest, PointsPerReportAreBoundedAndNothingIsStored) {
  std::string worker;
  const v1::Trial trial = Leased(&worker);
  std::vector<v1::LossPoint> points;
  for (int step = 1; step <= 6; ++step) {
    points.push_back(Point(v1::SPLIT_TRAIN, step, 2.0f));
  }
  v1::ReportResponse resp;
  grpc::Status s = Report(worker_token_, worker, trial, points, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("a report carries 6 points; limit "
                                           "--max-points-per-report=5"));
  EXPECT_EQ(GetTrial(trial.id()).points_size(), 0);
}

TEST_F(LimitsTest, NonFinitePointsAreRefusedNotDropped) {
  std::string worker;
  const v1::Trial trial = Leased(&worker);
  for (double bad : {kNaN, kInf, -kInf}) {
    v1::ReportResponse resp;
    grpc::Status s = Report(worker_token_, worker, trial,
                            {Point(v1::SPLIT_TRAIN, 1, 2.0f),
                             Point(v1::SPLIT_VAL, 2, static_cast<float>(bad))},
                            &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_THAT(s.error_message(), HasSubstr("point val step 2: loss is "));
    EXPECT_THAT(s.error_message(), HasSubstr("values must be finite"));
  }
  v1::LossPoint fast = Point(v1::SPLIT_TRAIN, 1, 2.0f);
  fast.set_tokens_per_second(kInf);
  v1::ReportResponse resp;
  grpc::Status s = Report(worker_token_, worker, trial, {fast}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("tokens_per_second is inf"));
  // Nothing of any refused report was stored, not even its finite points.
  EXPECT_EQ(GetTrial(trial.id()).points_size(), 0);
  // A good report is stored and counted as stored, not as a duplicate.
  ASSERT_TRUE(Report(worker_token_, worker, trial,
                     {Point(v1::SPLIT_TRAIN, 1, 2.0f)}, &resp)
                  .ok());
  EXPECT_EQ(resp.stored(), 1);
  EXPECT_EQ(resp.duplicates(), 0);
}

TEST_F(LimitsTest, NonFiniteMetricsAreRefusedUnlessReportedDiverged) {
  std::string worker;
  const v1::Trial trial = Leased(&worker);
  v1::CompleteResponse done;
  grpc::Status s = Complete(worker_token_, worker, trial, kNaN, &done);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // The NaN points of that Complete are named first.
  EXPECT_THAT(s.error_message(), HasSubstr("loss is nan"));

  v1::CompleteRequest req;
  req.set_worker_id(worker);
  req.set_trial_id(trial.id());
  req.set_attempt(trial.attempt());
  req.mutable_metrics()->set_final_val_loss(kNaN);
  req.mutable_metrics()->set_min_val_loss(3.0);
  {
    auto ctx = Ctx(worker_token_);
    s = workers_->Complete(ctx.get(), req, &done);
  }
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("metrics.final_val_loss is nan; values must be "
                        "finite"));
  EXPECT_NE(GetTrial(trial.id()).trial().state(), v1::TRIAL_COMPLETED);

  // Reported as a divergence, it is recorded as one (and never ranked).
  req.mutable_metrics()->set_diverged(true);
  req.mutable_metrics()->set_diverged_step(7);
  {
    auto ctx = Ctx(worker_token_);
    s = workers_->Complete(ctx.get(), req, &done);
  }
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(done.trial().state(), v1::TRIAL_DIVERGED);
  v1::RankRequest rank;
  rank.set_experiment_id(trial.experiment_id());
  v1::RankResponse ranked;
  auto ctx = Ctx(alice_);
  ASSERT_TRUE(results_->Rank(ctx.get(), rank, &ranked).ok());
  ASSERT_EQ(ranked.schedules_size(), 1);
  EXPECT_EQ(ranked.schedules(0).seeds_completed(), 0);
  EXPECT_EQ(ranked.schedules(0).seeds_diverged(), 1);
}

TEST_F(LimitsTest, NonFiniteHeartbeatThroughputIsRefused) {
  std::string worker;
  const v1::Trial trial = Leased(&worker);
  v1::HeartbeatRequest req;
  req.set_worker_id(worker);
  req.set_trial_id(trial.id());
  req.set_attempt(trial.attempt());
  req.set_tokens_per_second(kNaN);
  v1::HeartbeatResponse resp;
  auto ctx = Ctx(worker_token_);
  grpc::Status s = workers_->Heartbeat(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("tokens_per_second is nan"));
}

TEST_F(LimitsTest, RegisterCannotTakeAnotherUsersWorkerId) {
  const std::string id = Register(worker_token_, "shared-id");
  const std::string other = Token("mallory", v1::ROLE_WORKER);
  v1::RegisterRequest req;
  req.set_worker_id(id);
  req.set_host("mallory-host");
  v1::RegisterResponse resp;
  auto ctx = Ctx(other);
  grpc::Status s = workers_->Register(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("belongs to user 'farm'"));
  absl::StatusOr<v1::Worker> stored = coordinator_->store()->GetWorker(id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->user(), "farm");
  EXPECT_EQ(stored->host(), "test-host");
}

TEST_F(LimitsTest, WatchStreamsAreBoundedPerUserAndInTotal) {
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  auto open = [&](const std::string& token) { return OpenWatch(token, id); };
  Watch a1 = open(alice_);
  Watch a2 = open(alice_);
  ASSERT_TRUE(a1.first_read);
  ASSERT_TRUE(a2.first_read);
  Watch a3 = open(alice_);
  EXPECT_FALSE(a3.first_read);
  grpc::Status s = a3.reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(),
              HasSubstr("user 'alice' has 2 open streams; limit "
                        "--max-watch-streams-per-user=2"));
  Watch b1 = open(bob_);
  ASSERT_TRUE(b1.first_read);
  Watch b2 = open(bob_);
  EXPECT_FALSE(b2.first_read);
  s = b2.reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(),
              HasSubstr("open streams are 3; limit --max-watch-streams=3"));

  // A closed stream gives its slot back (once gRPC has finished it).
  a1.ctx->TryCancel();
  v1::WatchResponse event;
  while (a1.reader->Read(&event)) {
  }
  a1.reader->Finish();
  bool reopened = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!reopened && absl::Now() < deadline) {
    Watch again = open(bob_);
    reopened = again.first_read;
    if (reopened) {
      again.ctx->TryCancel();
      while (again.reader->Read(&event)) {
      }
    }
    again.reader->Finish();
  }
  EXPECT_TRUE(reopened);
  for (Watch* w : {&a2, &b1}) {
    w->ctx->TryCancel();
    while (w->reader->Read(&event)) {
    }
    w->reader->Finish();
  }
}

TEST_F(LimitsTest, AWatchOfAMissingExperimentGivesItsSlotBack) {
  // The slot is taken before the experiment is read (a storm of refused
  // calls then reads nothing); a call that fails after it must return it.
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  for (int i = 0; i < 3; ++i) {
    Watch missing = OpenWatch(alice_, id + 1000);
    EXPECT_FALSE(missing.first_read);
    const grpc::Status s = missing.reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  }
  // Alice's limit is 2: both are still hers.
  Watch a1 = OpenWatch(alice_, id);
  Watch a2 = OpenWatch(alice_, id);
  EXPECT_TRUE(a1.first_read);
  EXPECT_TRUE(a2.first_read);
  for (Watch* w : {&a1, &a2}) {
    w->ctx->TryCancel();
    v1::WatchResponse event;
    while (w->reader->Read(&event)) {
    }
    w->reader->Finish();
  }
}

SharedRound RoundOfPoints(int points) {
  v1::WatchResponse round;
  v1::ExperimentEvent* event = round.add_events();
  for (int i = 0; i < points; ++i) {
    v1::LossPoint* p = event->add_points();
    p->set_split(v1::SPLIT_TRAIN);
    p->set_step(i + 1);
    p->set_loss(2.0f);
  }
  return SharedRound::Of(std::move(round));
}

TEST(EventBufferTest, AStreamFallingBehindIsCutOffAtItsByteBound) {
  const SharedRound big = RoundOfPoints(100);  // ~1.4 KB
  EventBuffer buffer(/*max_bytes=*/2 * big.bytes);
  EXPECT_TRUE(buffer.Push(big));
  EXPECT_TRUE(buffer.Push(big));
  EXPECT_EQ(buffer.bytes(), 2 * big.bytes);
  // A third would exceed the bound: refused, and what was held is dropped.
  EXPECT_FALSE(buffer.Push(big));
  EXPECT_TRUE(buffer.empty());
  EXPECT_EQ(buffer.bytes(), 0);
  // Events are shared, never copied: the buffer holds the bus's message.
  EXPECT_TRUE(buffer.Push(big));
  EXPECT_EQ(buffer.Pop().round.get(), big.round.get());
  EXPECT_EQ(buffer.bytes(), 0);
  EXPECT_EQ(buffer.Pop().round, nullptr);
}

TEST(EventBufferTest, AnEventAlwaysFitsAnEmptyBufferAndCountsAreBounded) {
  EventBuffer tiny(/*max_bytes=*/1);
  EXPECT_TRUE(tiny.Push(RoundOfPoints(1000)));
  EXPECT_FALSE(tiny.Push(RoundOfPoints(1)));
  EventBuffer many(/*max_bytes=*/int64_t{1} << 40);
  const SharedRound small = RoundOfPoints(0);
  for (size_t i = 0; i < EventBuffer::kMaxRounds; ++i) {
    ASSERT_TRUE(many.Push(small));
  }
  EXPECT_FALSE(many.Push(small));
}

class PageBytesTest : public LimitsTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    LimitsTest::Customize(o);
    o->limits.max_trials_per_experiment = 100;
    o->limits.max_page_bytes = kPageBytes;
  }
  static constexpr int64_t kPageBytes = 600;
};

TEST_F(PageBytesTest, SchedulePagesAreBoundedInBytes) {
  v1::ListSchedulesRequest req;
  req.mutable_space()->set_d_model(4096);
  req.mutable_space()->set_layers(4096);
  req.mutable_space()->set_base_heads(64);
  req.set_page_size(10000);
  v1::ListSchedulesResponse resp;
  auto ctx = Ctx(alice_);
  ASSERT_TRUE(schedules_->List(ctx.get(), req, &resp).ok());
  // At least one schedule, never more than the byte bound allows.
  EXPECT_EQ(resp.schedules_size(), SchedulePageSizeForBytes(4096, kPageBytes));
  EXPECT_EQ(resp.schedules_size(), 1);
  EXPECT_FALSE(resp.next_page_token().empty());

  req.mutable_space()->set_d_model(768);
  req.mutable_space()->set_layers(12);
  req.mutable_space()->set_base_heads(12);
  auto ctx2 = Ctx(alice_);
  ASSERT_TRUE(schedules_->List(ctx2.get(), req, &resp).ok());
  EXPECT_EQ(resp.schedules_size(), SchedulePageSizeForBytes(12, kPageBytes));
  EXPECT_LE(static_cast<int64_t>(resp.ByteSizeLong()), kPageBytes);
  EXPECT_FALSE(resp.next_page_token().empty());
}

TEST_F(PageBytesTest, TrialPagesAreBoundedInBytesAndPageOnWithoutGaps) {
  std::vector<int64_t> seeds = {1, 2, 3};
  const int64_t id =
      Submit(alice_, Spec({"2x2,4x4", "1x2,4x4", "2x3,4x3", "1x3,4x3"}, seeds));
  ASSERT_GT(id, 0);  // 15 trials
  std::vector<int64_t> seen;
  std::string token;
  int pages = 0;
  do {
    v1::ListTrialsRequest req;
    req.set_experiment_id(id);
    req.set_page_size(1000);
    req.set_page_token(token);
    v1::ListTrialsResponse resp;
    auto ctx = Ctx(alice_);
    ASSERT_TRUE(experiments_->ListTrials(ctx.get(), req, &resp).ok());
    EXPECT_GE(resp.trials_size(), 1);
    // The trials fit; the token and total add a few bytes.
    EXPECT_LE(static_cast<int64_t>(resp.ByteSizeLong()), kPageBytes + 64);
    for (const v1::Trial& t : resp.trials()) seen.push_back(t.id());
    token = resp.next_page_token();
    ++pages;
  } while (!token.empty() && pages < 100);
  EXPECT_GT(pages, 1);
  ASSERT_EQ(seen.size(), 15u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LT(seen[i - 1], seen[i]);
}

TEST_F(PageBytesTest, RankPagesAreBoundedInBytesEvenWhenAllAreAskedFor) {
  const int64_t id =
      Submit(alice_, Spec({"2x2,4x4", "1x2,4x4", "2x3,4x3", "1x3,4x3"}, {1}));
  ASSERT_GT(id, 0);
  const std::string w = Register(worker_token_);
  for (int i = 0; i < 5; ++i) {
    const v1::TrialTask task = Lease(worker_token_, w);
    v1::CompleteResponse done;
    ASSERT_TRUE(
        Complete(worker_token_, w, task.trial(), 3.0 + 0.01 * i, &done).ok());
  }
  std::vector<std::string> seen;
  v1::RankRequest req;
  req.set_experiment_id(id);  // page_size 0: everything, page by page
  int pages = 0;
  do {
    v1::RankResponse resp;
    auto ctx = Ctx(alice_);
    ASSERT_TRUE(results_->Rank(ctx.get(), req, &resp).ok());
    EXPECT_GE(resp.schedules_size(), 1);
    for (const v1::RankedSchedule& r : resp.schedules()) {
      seen.push_back(r.schedule());
    }
    req.set_page_token(resp.next_page_token());
    ++pages;
  } while (!req.page_token().empty() && pages < 100);
  EXPECT_GT(pages, 1);
  EXPECT_EQ(seen.size(), 5u);
}

class MessageSizeTest : public LimitsTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    LimitsTest::Customize(o);
    o->limits.max_message_bytes = 64 << 10;
    o->limits.max_spec_bytes = 1 << 20;
  }
};

TEST_F(MessageSizeTest, BiggerMessagesAreRefusedBeforeTheyAreRead) {
  v1::SubmitRequest req;
  req.set_spec_text(std::string(100 << 10, '#'));
  v1::SubmitResponse resp;
  auto ctx = Ctx(alice_);
  grpc::Status s = experiments_->Submit(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_EQ(CountExperiments(), 0);
}

// The spec fields that multiply what a spec costs are bounded before it is
// planned: the refusal names the count's limit even where planning would
// fail on something else first (an unknown preset in every rung).
class RepeatedFieldsTest : public LimitsTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    LimitsTest::Customize(o);
    o->limits.max_ladder_rungs = 2;
    o->limits.max_loss_targets = 3;
    o->limits.max_listed_schedules = 4;
    o->limits.max_trials_per_experiment = 100;
  }
};

TEST_F(RepeatedFieldsTest, EachIsRefusedBeforePlanningNamingItsFlag) {
  v1::ExperimentSpec ladder = Spec({}, {1});
  ladder.clear_model();
  for (int i = 0; i < 3; ++i) {
    ladder.mutable_ladder()->add_rungs()->mutable_model()->set_preset("nope");
  }
  ExpectRefused(ladder, grpc::StatusCode::INVALID_ARGUMENT,
                "ladder.rungs' count is 3; limit --max-ladder-rungs=2");
  ladder.mutable_ladder()->mutable_rungs()->RemoveLast();
  for (int i = 0; i < 4; ++i) {
    ladder.mutable_ladder()
        ->mutable_rungs(1)
        ->mutable_budget()
        ->add_loss_targets(5.0 - i);
  }
  ExpectRefused(ladder, grpc::StatusCode::INVALID_ARGUMENT,
                "ladder.rungs[1].budget.loss_targets' count is 4; limit "
                "--max-loss-targets=3");
  v1::ExperimentSpec targets = Spec({"2x2,4x4"}, {1});
  for (int i = 0; i < 4; ++i) targets.mutable_budget()->add_loss_targets(5 - i);
  ExpectRefused(targets, grpc::StatusCode::INVALID_ARGUMENT,
                "budget.loss_targets' count is 4; limit --max-loss-targets=3");
  ExpectRefused(Spec({"2x2,4x4", "1x2,4x4", "2x3,4x3", "1x3,4x3", "bad"}, {1}),
                grpc::StatusCode::INVALID_ARGUMENT,
                "schedules' count is 5; limit --max-listed-schedules=4");
  // A submitted spec may not set what the coordinator stores for a ladder.
  v1::ExperimentSpec preset = Spec({}, {1});
  preset.clear_model();
  preset.mutable_ladder()->mutable_budget()->set_steps(10);
  preset.mutable_ladder()->add_rungs()->mutable_model()->set_preset("tiny");
  preset.mutable_ladder()->add_rungs()->mutable_model()->set_preset("small");
  ExpectRefused(preset, grpc::StatusCode::INVALID_ARGUMENT,
                "ladder.budget: is set by the coordinator");
}

// A ladder stores the spec's budget once, however many rungs share it.
TEST_F(RepeatedFieldsTest, ALadderStoresItsBudgetOnce) {
  v1::ExperimentSpec spec = Spec({}, {1});
  spec.clear_model();
  spec.mutable_budget()->set_eval_every(10);
  for (int i = 0; i < 3; ++i) spec.mutable_budget()->add_loss_targets(5 - i);
  spec.mutable_ladder()->add_rungs()->mutable_model()->set_preset("tiny");
  spec.mutable_ladder()->add_rungs()->mutable_model()->set_preset("small");
  spec.mutable_ladder()->mutable_rungs(1)->mutable_budget()->set_steps(200);
  grpc::Status submitted;
  const int64_t id = Submit(kAdminToken, spec, &submitted);
  ASSERT_GT(id, 0) << submitted.error_message();
  v1::GetExperimentRequest req;
  req.set_id(id);
  v1::Experiment e;
  auto ctx = Ctx(alice_);
  ASSERT_TRUE(experiments_->Get(ctx.get(), req, &e).ok());
  const v1::LadderPolicy& stored = e.spec().ladder();
  EXPECT_EQ(stored.budget().loss_targets_size(), 3);
  EXPECT_EQ(stored.budget().steps(), 100);
  EXPECT_EQ(stored.rungs(0).budget().loss_targets_size(), 0);
  EXPECT_EQ(stored.rungs(1).budget().loss_targets_size(), 0);
  EXPECT_EQ(stored.rungs(1).budget().steps(), 200);
  // Rung 1 runs the spec's budget; rung 2's merges its own over it.
  EXPECT_EQ(e.spec().budget().steps(), 100);
  EXPECT_EQ(e.spec().budget().loss_targets_size(), 3);
  const v1::ExperimentSpec second = RungSpec(e.spec(), 1);
  EXPECT_EQ(second.budget().steps(), 200);
  EXPECT_EQ(second.budget().eval_every(), 10);
  EXPECT_EQ(second.budget().loss_targets_size(), 3);
}

class StoredSpecTest : public LimitsTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    LimitsTest::Customize(o);
    o->limits.max_stored_spec_bytes = 64;
  }
};

TEST_F(StoredSpecTest, TheResolvedSpecIsBoundedToo) {
  // Small as submitted, larger once the preset and budget are resolved.
  ExpectRefused(Spec({"2x2,4x4"}, {1}), grpc::StatusCode::INVALID_ARGUMENT,
                "limit --max-stored-spec-bytes=64");
}

// Default quotas hold for users unless an admin sets their own; a dry run
// says where a spec leaves its user and stores nothing.
class DefaultQuotaTest : public LimitsTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    LimitsTest::Customize(o);
    o->limits.max_queued_trials_per_user = 5;
    o->limits.max_active_experiments_per_user = 3;
  }

  v1::SubmitResponse Submitted(const std::string& token,
                               const v1::ExperimentSpec& spec, bool dry_run,
                               grpc::Status* status) {
    v1::SubmitRequest req;
    *req.mutable_spec() = spec;
    req.set_dry_run(dry_run);
    v1::SubmitResponse resp;
    auto ctx = Ctx(token);
    *status = experiments_->Submit(ctx.get(), req, &resp);
    return resp;
  }
};

TEST_F(DefaultQuotaTest, QueuedTrialsAreBoundedPerUserAndAdminsMayRaiseIt) {
  grpc::Status s;
  // 2 schedules and the baseline on 1 seed: 3 trials.
  const v1::ExperimentSpec three = Spec({"2x2,4x4", "1x2,4x4"}, {1});
  v1::SubmitResponse plan = Submitted(alice_, three, /*dry_run=*/true, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(plan.experiment().id(), 0);
  EXPECT_EQ(plan.trials_created(), 3);
  EXPECT_EQ(plan.headroom().queued_trials(), 3);
  EXPECT_EQ(plan.headroom().max_queued_trials(), 5);
  EXPECT_EQ(plan.headroom().active_experiments(), 1);
  EXPECT_EQ(plan.headroom().max_active_experiments(), 3);
  EXPECT_GT(plan.headroom().spec_bytes(), 0);
  EXPECT_EQ(CountExperiments(), 0);  // a dry run stores nothing

  v1::SubmitResponse first = Submitted(alice_, three, false, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(first.headroom().queued_trials(), 3);
  // 3 more would be 6 queued: past the default, for a dry run too.
  for (bool dry_run : {true, false}) {
    Submitted(alice_, three, dry_run, &s);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(s.error_message(),
                HasSubstr("user 'alice' has 3 queued trials and this adds 3; "
                          "quota --max-queued-trials-per-user=5"));
    EXPECT_THAT(s.error_message(),
                HasSubstr("prism user set alice --max-queued N"));
  }
  EXPECT_EQ(CountExperiments(), 1);
  // Admins have no default quota.
  Submitted(kAdminToken, three, false, &s);
  Submitted(kAdminToken, three, false, &s);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // An admin raises alice's: the user's own quota is what holds.
  v1::SetUserPolicyRequest set;
  set.set_user("alice");
  set.set_max_queued(6);
  v1::UserPolicy policy;
  auto ctx = Ctx(kAdminToken);
  ASSERT_TRUE(experiments_->SetUserPolicy(ctx.get(), set, &policy).ok());
  EXPECT_EQ(policy.max_queued(), 6);
  EXPECT_EQ(policy.effective_max_queued(), 6);
  EXPECT_EQ(policy.effective_max_active(), 3);
  EXPECT_EQ(policy.active(), 1);
  v1::SubmitResponse second = Submitted(alice_, three, false, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(second.headroom().queued_trials(), 6);
  EXPECT_EQ(second.headroom().max_queued_trials(), 6);
  // The list shows what holds for each: alice's own quota and the default,
  // none for the admin (who holds admin tokens only).
  v1::ListUsersResponse users;
  auto list = Ctx(kAdminToken);
  ASSERT_TRUE(
      experiments_->ListUsers(list.get(), v1::ListUsersRequest(), &users).ok());
  int seen = 0;
  for (const v1::UserPolicy& u : users.users()) {
    SCOPED_TRACE(u.user());
    if (u.user() == "alice") {
      EXPECT_EQ(u.effective_max_queued(), 6);
      EXPECT_EQ(u.effective_max_active(), 3);
      ++seen;
    } else if (u.user() == "admin") {
      EXPECT_EQ(u.effective_max_queued(), 0);
      EXPECT_EQ(u.effective_max_active(), 0);
      EXPECT_EQ(u.active(), 2);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

TEST_F(DefaultQuotaTest, ActiveExperimentsAreBoundedPerUserUnlessRaised) {
  grpc::Status s;
  const v1::ExperimentSpec one = Spec({"4x6"}, {1});
  v1::SetUserPolicyRequest set;
  set.set_user("alice");
  set.set_max_queued(30);
  v1::UserPolicy policy;
  {
    auto ctx = Ctx(kAdminToken);
    ASSERT_TRUE(experiments_->SetUserPolicy(ctx.get(), set, &policy).ok());
  }
  for (int i = 0; i < 3; ++i) ASSERT_GT(Submit(alice_, one), 0);
  Submitted(alice_, one, false, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(),
              HasSubstr("limit --max-active-experiments-per-user=3"));
  set.clear_max_queued();
  set.set_max_active(4);
  {
    auto ctx = Ctx(kAdminToken);
    ASSERT_TRUE(experiments_->SetUserPolicy(ctx.get(), set, &policy).ok());
  }
  EXPECT_EQ(policy.max_queued(), 30);  // kept
  EXPECT_GT(Submit(alice_, one), 0);
  Submitted(alice_, one, false, &s);
  EXPECT_THAT(s.error_message(), HasSubstr("limit max_active=4"));
  set.set_max_active(-1);
  auto ctx = Ctx(kAdminToken);
  EXPECT_EQ(experiments_->SetUserPolicy(ctx.get(), set, &policy).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// Whatever the store holds, a page of experiments is summaries that fit the
// send limit: here 24 stored specs of 12 KiB each, four times the 64 KiB a
// message may be (the store is filled directly, past what Submit allows).
class StoredSpecsListTest : public LimitsTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    LimitsTest::Customize(o);
    o->limits.max_message_bytes = 64 << 10;
    o->limits.max_spec_bytes = 16 << 10;
  }
};

TEST_F(StoredSpecsListTest, ListReturnsSummariesWhateverTheSpecsHold) {
  Stop();
  {
    absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store =
        storage::SqliteStore::Open(dir_.File("prism.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 0; i < 24; ++i) {
      storage::NewExperiment e;
      e.name = absl::StrCat("big ", i);
      e.owner = "alice";
      e.spec = Spec({"4x6"}, {1});
      e.spec.set_strategy(v1::STRATEGY_ASHA);
      for (int j = 0; j < 1200; ++j) e.spec.add_schedules("1x1,2x1,4x4");
      e.total_steps = 100;
      e.config_fingerprint = "f";
      e.now_ms = 1;
      e.grid_steps = 5.0;
      e.trials.push_back({"4x6", 1, true});
      ASSERT_TRUE((*store)->CreateExperiment(e).ok());
    }
  }
  Start();
  v1::ListExperimentsRequest req;
  req.set_page_size(1000);
  v1::ListExperimentsResponse resp;
  auto ctx = Ctx(kAdminToken);
  grpc::Status s = experiments_->List(ctx.get(), req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.experiments_size(), 24);
  EXPECT_LT(resp.ByteSizeLong(), size_t{16} << 10);
  for (const v1::Experiment& e : resp.experiments()) {
    EXPECT_FALSE(e.has_spec());
    EXPECT_EQ(e.strategy(), v1::STRATEGY_ASHA);
    EXPECT_EQ(e.grid_steps(), 5.0);
    EXPECT_EQ(e.counts().total(), 1);
  }
  // Get still has the whole spec.
  v1::GetExperimentRequest get;
  get.set_id(resp.experiments(0).id());
  v1::Experiment one;
  auto get_ctx = Ctx(kAdminToken);
  ASSERT_TRUE(experiments_->Get(get_ctx.get(), get, &one).ok());
  EXPECT_EQ(one.spec().schedules_size(), 1201);
}

TEST(LimitsOptionsTest, EveryLimitMustBePositive) {
  Limits limits;
  EXPECT_TRUE(ValidateLimits(limits).ok());
  limits.max_seeds = 0;
  absl::Status s = ValidateLimits(limits);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("--max-seeds must be at least 1"));
  limits = Limits();
  limits.max_user_priority = -1;
  EXPECT_THAT(ValidateLimits(limits).message(),
              HasSubstr("--max-user-priority must not be negative"));
  limits = Limits();
  limits.read_nice = 20;
  EXPECT_THAT(ValidateLimits(limits).message(),
              HasSubstr("--read-nice must be from 0 to 19 nice steps "
                        "(got 20)"));
  limits.read_nice = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateLimits(limits)));
  CoordinatorOptions options;
  options.db_path = "x.db";
  options.max_attempts = 50;
  EXPECT_THAT(ValidateOptions(options).message(),
              HasSubstr("--max-attempts (50) must not exceed "
                        "--max-attempts-limit (20)"));
}

}  // namespace
}  // namespace prism::server::testing
