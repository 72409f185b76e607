// Auth through the services: tokens, roles, ownership, worker ids and
// the workers page.
// A real coordinator (SQLite file, gRPC on loopback, fake clock)
// driven through the generated stubs (service_fixture.h).
#include <cstdint>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/service_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace prism::server::testing
