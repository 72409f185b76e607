// A real coordinator for tests: a SQLite file in a temp dir, gRPC and HTTP on
// 127.0.0.1:0, a fake clock (the expiry loop is parked; tests call
// ExpireLeases after moving the clock), and stubs plus per-role tokens.
#ifndef PRISM_TESTS_SERVER_COORDINATOR_FIXTURE_H_
#define PRISM_TESTS_SERVER_COORDINATOR_FIXTURE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "prism/v1/prism.grpc.pb.h"
#include "server/coordinator.h"
#include "server/core/infra/clock.h"
#include "tests/testing/temp_dir.h"

namespace prism::server::testing {

// FakeClock: Advance moves both readings (time passes); StepWall moves only
// the wall clock (NowMs), as an operator or NTP stepping it would.
class FakeClock final : public Clock {
 public:
  int64_t NowMs() const override { return now_.load() + wall_step_.load(); }
  int64_t LeaseMs() const override { return now_.load(); }
  void Advance(int64_t ms) { now_ += ms; }
  void StepWall(int64_t ms) { wall_step_ += ms; }

 private:
  std::atomic<int64_t> now_{1'700'000'000'000};
  std::atomic<int64_t> wall_step_{0};
};

using ::prism::testing::TempDir;

inline constexpr char kAdminToken[] = "prism_test_admin_token";

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }
  void TearDown() override { Stop(); }

  virtual void Customize(CoordinatorOptions*) {}

  void Start() {
    CoordinatorOptions options;
    options.db_path = dir_.File("prism.db");
    options.admin_token_env = kAdminToken;
    options.lease_seconds = 30;
    options.heartbeat_seconds = 5;
    options.max_attempts = 2;
    options.expiry_interval_ms = 3'600'000;
    Customize(&options);
    absl::StatusOr<std::unique_ptr<Coordinator>> c =
        Coordinator::Create(options, &clock_);
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = std::move(*c);
    ASSERT_TRUE(coordinator_->Start().ok());
    channel_ = grpc::CreateChannel(coordinator_->grpc_address(),
                                   grpc::InsecureChannelCredentials());
    experiments_ = v1::ExperimentService::NewStub(channel_);
    workers_ = v1::WorkerService::NewStub(channel_);
    results_ = v1::ResultsService::NewStub(channel_);
    schedules_ = v1::ScheduleService::NewStub(channel_);
    auth_ = v1::AuthService::NewStub(channel_);
  }

  void Stop() {
    experiments_.reset();
    workers_.reset();
    results_.reset();
    schedules_.reset();
    auth_.reset();
    channel_.reset();
    if (coordinator_ != nullptr) coordinator_->Shutdown();
    coordinator_.reset();
  }

  void Restart() {
    Stop();
    Start();
  }

  // Token issues a token for (user, role) through the admin RPC.
  std::string Token(const std::string& user, v1::Role role) {
    v1::CreateTokenRequest req;
    req.set_user(user);
    req.set_role(role);
    v1::CreateTokenResponse resp;
    auto ctx = Ctx(kAdminToken);
    grpc::Status s = auth_->CreateToken(ctx.get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.token();
  }

  static std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
    return ctx;
  }

  // Spec returns a tiny-preset spec training `schedules` with `seeds`.
  static v1::ExperimentSpec Spec(const std::vector<std::string>& schedules,
                                 const std::vector<int64_t>& seeds,
                                 int priority = 0) {
    v1::ExperimentSpec spec;
    spec.set_name("test");
    spec.mutable_model()->set_preset("tiny");
    spec.mutable_budget()->set_steps(100);
    for (const std::string& s : schedules) spec.add_schedules(s);
    for (int64_t seed : seeds) spec.add_seeds(seed);
    spec.set_priority(priority);
    return spec;
  }

  // Submit submits as `token` and returns the experiment id (0 on failure).
  int64_t Submit(const std::string& token, const v1::ExperimentSpec& spec,
                 grpc::Status* status = nullptr) {
    v1::SubmitRequest req;
    *req.mutable_spec() = spec;
    v1::SubmitResponse resp;
    auto ctx = Ctx(token);
    grpc::Status s = experiments_->Submit(ctx.get(), req, &resp);
    if (status != nullptr) *status = s;
    return s.ok() ? resp.experiment().id() : 0;
  }

  // Register registers a new worker, or re-registers `worker_id`.
  std::string Register(const std::string& token,
                       const std::string& worker_id = "") {
    v1::RegisterRequest req;
    req.set_worker_id(worker_id);
    req.set_host("test-host");
    req.set_device("cpu");
    req.set_threads(1);
    v1::RegisterResponse resp;
    auto ctx = Ctx(token);
    grpc::Status s = workers_->Register(ctx.get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.worker_id();
  }

  // Lease returns the leased task's trial (id 0 when none).
  v1::TrialTask Lease(const std::string& token, const std::string& worker,
                      grpc::Status* status = nullptr) {
    v1::LeaseRequest req;
    req.set_worker_id(worker);
    v1::LeaseResponse resp;
    auto ctx = Ctx(token);
    grpc::Status s = workers_->Lease(ctx.get(), req, &resp);
    if (status != nullptr) *status = s;
    EXPECT_TRUE(status != nullptr || s.ok()) << s.error_message();
    return resp.task();
  }

  grpc::Status Report(const std::string& token, const std::string& worker,
                      const v1::Trial& trial,
                      const std::vector<v1::LossPoint>& points,
                      v1::ReportResponse* resp) {
    v1::ReportRequest req;
    req.set_worker_id(worker);
    req.set_trial_id(trial.id());
    req.set_attempt(trial.attempt());
    for (const v1::LossPoint& p : points) *req.add_points() = p;
    auto ctx = Ctx(token);
    return workers_->Report(ctx.get(), req, resp);
  }

  grpc::Status Complete(const std::string& token, const std::string& worker,
                        const v1::Trial& trial, double final_val_loss,
                        v1::CompleteResponse* resp) {
    v1::CompleteRequest req;
    req.set_worker_id(worker);
    req.set_trial_id(trial.id());
    req.set_attempt(trial.attempt());
    v1::TrialMetrics* m = req.mutable_metrics();
    m->set_final_val_loss(final_val_loss);
    m->set_min_val_loss(final_val_loss);
    m->set_steps(100);
    m->set_tokens_per_second(1000.0);
    for (int step = 50; step <= 100; step += 50) {
      v1::LossPoint* p = req.add_points();
      p->set_split(v1::SPLIT_VAL);
      p->set_step(step);
      p->set_loss(static_cast<float>(final_val_loss + (100 - step) / 100.0));
    }
    auto ctx = Ctx(token);
    return workers_->Complete(ctx.get(), req, resp);
  }

  static v1::LossPoint Point(v1::Split split, int64_t step, float loss) {
    v1::LossPoint p;
    p.set_split(split);
    p.set_step(step);
    p.set_loss(loss);
    return p;
  }

  TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<Coordinator> coordinator_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ExperimentService::Stub> experiments_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
  std::unique_ptr<v1::ResultsService::Stub> results_;
  std::unique_ptr<v1::ScheduleService::Stub> schedules_;
  std::unique_ptr<v1::AuthService::Stub> auth_;
};

}  // namespace prism::server::testing

#endif  // PRISM_TESTS_SERVER_COORDINATOR_FIXTURE_H_
