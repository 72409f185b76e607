// ServiceTest: the coordinator fixture (coordinator_fixture.h) with a token
// per role (users alice and bob, a worker, a viewer) and the reads the
// coordinator_*_test.cc files share.
//
// Thread-safety: a GoogleTest fixture, used from the test's thread.
#ifndef PRISM_TESTS_SERVER_SERVICE_FIXTURE_H_
#define PRISM_TESTS_SERVER_SERVICE_FIXTURE_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "prism/v1/prism.grpc.pb.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server::testing {

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

  // RankExperiment: the experiment's ranking as a viewer reads it.
  v1::RankResponse RankExperiment(int64_t id) {
    v1::RankRequest req;
    req.set_experiment_id(id);
    v1::RankResponse resp;
    auto ctx = Ctx(viewer_);
    EXPECT_TRUE(results_->Rank(ctx.get(), req, &resp).ok());
    return resp;
  }

  // SeedsBySchedule returns every trial's seed, by schedule, in trial order.
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

}  // namespace prism::server::testing

#endif  // PRISM_TESTS_SERVER_SERVICE_FIXTURE_H_
