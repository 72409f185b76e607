// Deleting experiments through the services (ExperimentService.Delete): who
// may, which states may, what is removed and what a refusal leaves, a worker
// still holding a deleted trial, and a ladder's rungs. A real coordinator
// (SQLite file, gRPC on loopback, fake clock) driven through the generated
// stubs (service_fixture.h).
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/check.h"
#include "tests/server/service_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::AllOf;
using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::Not;

class DeleteTest : public ServiceTest {
 protected:
  grpc::Status Delete(const std::string& token, int64_t id,
                      v1::DeleteExperimentResponse* resp = nullptr) {
    v1::ExperimentRef ref;
    ref.set_id(id);
    v1::DeleteExperimentResponse ignored;
    auto ctx = Ctx(token);
    return experiments_->Delete(ctx.get(), ref,
                                resp != nullptr ? resp : &ignored);
  }

  grpc::Status Cancel(const std::string& token, int64_t id) {
    v1::ExperimentRef ref;
    ref.set_id(id);
    v1::Experiment e;
    auto ctx = Ctx(token);
    return experiments_->Cancel(ctx.get(), ref, &e);
  }

  grpc::StatusCode GetCode(int64_t id) {
    v1::GetExperimentRequest req;
    req.set_id(id);
    v1::Experiment e;
    auto ctx = Ctx(viewer_);
    return experiments_->Get(ctx.get(), req, &e).error_code();
  }
};

TEST_F(DeleteTest, OnlyTheOwnerOrAnAdminDeletesAndOnlyAFinishedExperiment) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  const std::string w = Register(worker_token_);
  const v1::Trial trial = Lease(worker_token_, w).trial();
  v1::ReportResponse reported;
  ASSERT_TRUE(
      Report(worker_token_, w, trial,
             {Point(v1::SPLIT_VAL, 0, 4.0f), Point(v1::SPLIT_TRAIN, 1, 3.9f)},
             &reported)
          .ok());

  EXPECT_EQ(Delete(bob_, id).error_code(), grpc::PERMISSION_DENIED);
  EXPECT_EQ(Delete(viewer_, id).error_code(), grpc::PERMISSION_DENIED);
  EXPECT_EQ(Delete(worker_token_, id).error_code(), grpc::PERMISSION_DENIED);
  const grpc::Status active = Delete(alice_, id);
  EXPECT_EQ(active.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_THAT(active.error_message(), HasSubstr("cancel it first"));
  EXPECT_EQ(Delete(alice_, id + 100).error_code(), grpc::NOT_FOUND);
  // Every refusal left it as it was, curve included.
  EXPECT_EQ(GetExperiment(id).counts().total(), 2);
  EXPECT_EQ(GetTrial(trial.id()).state(), v1::TRIAL_RUNNING);

  ASSERT_TRUE(Cancel(alice_, id).ok());
  v1::DeleteExperimentResponse deleted;
  const grpc::Status ok = Delete(alice_, id, &deleted);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(deleted.id(), id);
  EXPECT_EQ(deleted.name(), "test");
  EXPECT_EQ(deleted.owner(), "alice");
  EXPECT_EQ(deleted.trials(), 2);
  EXPECT_EQ(deleted.attempts(), 1);
  EXPECT_EQ(deleted.points(), 2);
  EXPECT_EQ(GetCode(id), grpc::NOT_FOUND);
  EXPECT_EQ(Delete(alice_, id).error_code(), grpc::NOT_FOUND);
  // The worker still training the deleted trial is told to stop.
  EXPECT_TRUE(Heartbeat(w, trial, 2).stop());
}

TEST_F(DeleteTest, AnAdminDeletesAnyonesDoneExperimentLeavingNoOrphans) {
  const int64_t kept = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  const int64_t id = Submit(bob_, Spec({"4x6"}, {1}));
  const std::string w = Register(worker_token_);
  // The kept experiment's trial is leased first (lowest ids); bob's next.
  const v1::Trial first = Lease(worker_token_, w).trial();
  v1::CompleteResponse completed;
  ASSERT_TRUE(Complete(worker_token_, w, first, 3.0, &completed).ok());
  v1::Trial trial;
  while (trial.id() == 0 || GetExperiment(id).state() != v1::EXPERIMENT_DONE) {
    trial = Lease(worker_token_, w).trial();
    ASSERT_NE(trial.id(), 0) << "nothing left to lease";
    ASSERT_TRUE(Complete(worker_token_, w, trial, 3.0, &completed).ok());
  }
  const v1::Experiment before = GetExperiment(kept);

  v1::DeleteExperimentResponse deleted;
  ASSERT_TRUE(Delete(kAdminToken, id, &deleted).ok());
  EXPECT_EQ(deleted.owner(), "bob");
  EXPECT_EQ(GetCode(id), grpc::NOT_FOUND);
  EXPECT_EQ(GetExperiment(kept).counts().total(), before.counts().total());
  EXPECT_EQ(GetExperiment(kept).counts().completed(),
            before.counts().completed());
  // This fixture's completions store a short curve, which the check names
  // for the kept experiment; nothing may name the deleted one, nor a row
  // left without its trial or experiment.
  absl::StatusOr<storage::DatabaseCheck> check =
      storage::CheckDatabase(dir_.File("prism.db"));
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->experiments, 1);
  EXPECT_EQ(check->trials, before.counts().total());
  EXPECT_THAT(check->problems,
              Each(AllOf(Not(HasSubstr(absl::StrCat("experiment ", id))),
                         Not(HasSubstr("does not exist")))));
}

// A ladder's rungs go from the first up, and only once none is running: a
// stored done rung whose next rung is missing would submit it again.
TEST_F(DeleteTest, ALadderIsDeletedFromItsFirstRungUpOnceNoRungRuns) {
  storage::Store* store = coordinator_->store();
  auto rung = [&](int index, int64_t ladder_id) {
    storage::NewExperiment e;
    e.name = "ladder";
    e.owner = "alice";
    e.spec = Spec({"4x6"}, {1});
    e.spec.mutable_ladder()->add_rungs();
    e.spec.mutable_ladder()->add_rungs();
    e.max_attempts = 1;
    e.total_steps = 100;
    e.config_fingerprint = "fp";
    e.trials.push_back(storage::NewTrial{"4x6", 1, true});
    e.ladder_id = ladder_id;
    e.ladder_rung = index;
    absl::StatusOr<storage::CreatedExperiment> created =
        store->CreateExperiment(e);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? created->id : 0;
  };
  const int64_t first = rung(0, 0);
  const int64_t second = rung(1, first);
  ASSERT_TRUE(Cancel(alice_, first).ok());

  grpc::Status s = Delete(alice_, first);
  EXPECT_EQ(s.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("is still active"));
  ASSERT_TRUE(Cancel(alice_, second).ok());
  s = Delete(alice_, second);
  EXPECT_EQ(s.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("from its first rung up"));
  EXPECT_EQ(GetCode(second), grpc::OK);

  ASSERT_TRUE(Delete(alice_, first).ok());
  ASSERT_TRUE(Delete(alice_, second).ok());
  EXPECT_EQ(GetCode(second), grpc::NOT_FOUND);
}

}  // namespace
}  // namespace prism::server::testing
