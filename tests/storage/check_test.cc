#include "storage/check.h"

#include <sqlite3.h>

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/storage/store_test_util.h"

namespace prism::storage {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeExperiment;
using testing::Point;
using testing::TempDir;

constexpr int64_t kFar = 1'000'000'000'000;

// CheckTest builds databases through the real store, one experiment of one
// baseline trial with the cadence steps 30, log_every 5, eval_every 10.
class CheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteStore::Open(Path());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    NewExperiment e = MakeExperiment("alice", {"4x6"}, {1});
    e.spec.mutable_budget()->set_steps(30);
    e.spec.mutable_budget()->set_log_every(5);
    e.spec.mutable_budget()->set_eval_every(10);
    e.total_steps = 30;
    ASSERT_TRUE(store_->CreateExperiment(e).ok());
    v1::Worker w;
    w.set_id("w1");
    ASSERT_TRUE(store_->UpsertWorker(w, 1, /*take_over=*/false).ok());
    auto leased = store_->LeaseNextTrial(1, "w1", 2, kFar);
    ASSERT_TRUE(leased.ok() && leased->has_value());
  }

  std::string Path() const { return dir_.File("prism.db"); }

  // Report stores points of trial 1, attempt 1: train at `train` steps,
  // val at `val` steps.
  void Report(const std::vector<int64_t>& train,
              const std::vector<int64_t>& val) {
    ReportWrite r;
    r.ref = AttemptRef{1, 1, "w1"};
    r.lease_deadline_ms = kFar;
    for (int64_t s : train) r.points.push_back(Point(v1::SPLIT_TRAIN, s, 1));
    for (int64_t s : val) r.points.push_back(Point(v1::SPLIT_VAL, s, 1));
    auto outcomes = store_->WriteReports({&r});
    ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  }

  void Complete() {
    v1::TrialMetrics m;
    m.set_steps(30);
    m.set_final_val_loss(1.0);
    ASSERT_TRUE(store_->CompleteTrial({1, 1, "w1"}, m, {}, 3).ok());
  }

  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Path().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }

  std::vector<std::string> Problems() {
    absl::StatusOr<DatabaseCheck> check = CheckDatabase(Path());
    EXPECT_TRUE(check.ok()) << check.status();
    return check.ok() ? check->problems : std::vector<std::string>{"error"};
  }

  TempDir dir_{"prism_check"};
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(CheckTest, ARunningTrialsPrefixAndACompletedCurveHold) {
  EXPECT_THAT(Problems(), ElementsAre());
  Report({5, 10}, {0, 10});
  EXPECT_THAT(Problems(), ElementsAre());
  // The train point of a step lands before its val point.
  Report({15, 20}, {});
  EXPECT_THAT(Problems(), ElementsAre());
  Report({25, 30}, {20, 30});
  Complete();
  absl::StatusOr<DatabaseCheck> check = CheckDatabase(Path());
  ASSERT_TRUE(check.ok());
  EXPECT_THAT(check->problems, ElementsAre());
  EXPECT_EQ(check->experiments, 1);
  EXPECT_EQ(check->trials, 1);
  EXPECT_EQ(check->points, 10);
}

TEST_F(CheckTest, DeletingDoneAndCancelledExperimentsLeavesItClean) {
  Report({5, 10, 15, 20, 25, 30}, {0, 10, 20, 30});
  Complete();
  ASSERT_EQ(store_->GetExperiment(1)->state(), v1::EXPERIMENT_DONE);
  // A second experiment, cancelled while its trial ran with a curve stored.
  NewExperiment e = MakeExperiment("bob", {"4x6", "2x3,4x3"}, {1});
  e.total_steps = 30;
  e.spec.mutable_budget()->set_steps(30);
  absl::StatusOr<CreatedExperiment> second = store_->CreateExperiment(e);
  ASSERT_TRUE(second.ok()) << second.status();
  auto leased = store_->LeaseNextTrial(second->id, "w1", 4, kFar);
  ASSERT_TRUE(leased.ok() && leased->has_value());
  ReportWrite r;
  r.ref = AttemptRef{(*leased)->id(), 1, "w1"};
  r.lease_deadline_ms = kFar;
  r.points.push_back(Point(v1::SPLIT_VAL, 0, 1));
  ASSERT_TRUE(store_->WriteReports({&r}).ok());
  ASSERT_TRUE(store_->CancelExperiment(second->id, 5).ok());
  ASSERT_THAT(Problems(), ElementsAre());

  ASSERT_TRUE(store_->DeleteExperiment(1).ok());
  absl::StatusOr<DatabaseCheck> check = CheckDatabase(Path());
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_THAT(check->problems, ElementsAre());
  EXPECT_EQ(check->experiments, 1);
  EXPECT_EQ(check->trials, 2);
  EXPECT_EQ(check->points, 1);

  ASSERT_TRUE(store_->DeleteExperiment(second->id).ok());
  check = CheckDatabase(Path());
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_THAT(check->problems, ElementsAre());
  EXPECT_EQ(check->experiments, 0);
  EXPECT_EQ(check->trials, 0);
  EXPECT_EQ(check->points, 0);
}

TEST_F(CheckTest, PointsLeftBehindByADeleteWouldBeNamed) {
  // What a delete that missed the points table would leave: the check must
  // be able to see it, or the clean checks above prove nothing.
  Report({5}, {0});
  Sql("PRAGMA foreign_keys = OFF; DELETE FROM trial_attempts; DELETE FROM "
      "trials;");
  EXPECT_THAT(
      Problems(),
      Contains(HasSubstr("2 points stored for a trial that does not exist")));
}

TEST_F(CheckTest, AGapInACurveIsNamed) {
  Report({5, 10, 20}, {0, 10});
  EXPECT_THAT(
      Problems(),
      ElementsAre(HasSubstr("train curve misses step 15 (stored up to 20)")));
}

TEST_F(CheckTest, AValPointLeftBehindTheTrainCurveIsAGap) {
  Report({5, 10, 15, 20, 25}, {0});
  EXPECT_THAT(Problems(),
              ElementsAre(HasSubstr("val curve misses step 10 (train stored "
                                    "up to 25)")));
}

TEST_F(CheckTest, AStepOffTheCadenceIsNamed) {
  Report({5, 7}, {0});
  EXPECT_THAT(Problems(),
              ElementsAre(HasSubstr("train step 7 is off the "
                                    "cadence (every 5, 30 steps)")));
}

TEST_F(CheckTest, ACompletedTrialMustHaveItsWholeCurve) {
  Report({5, 10, 15, 20}, {0, 10, 20});
  Complete();
  EXPECT_THAT(Problems(),
              ElementsAre(HasSubstr("completed with 4 of 6 train points"),
                          HasSubstr("completed with 3 of 4 val points")));
}

TEST_F(CheckTest, TrialStatesMustAgreeWithTheirAttempts) {
  Report({5}, {0});
  Sql("UPDATE trials SET attempt = 2");
  EXPECT_THAT(Problems(),
              ElementsAre(HasSubstr("at attempt 2 but 1 attempt rows")));
  Sql("UPDATE trials SET attempt = 1, state = 1");  // queued, attempt open
  EXPECT_THAT(Problems(),
              ElementsAre(HasSubstr("queued but attempt 1 is still open")));
}

TEST_F(CheckTest, ExperimentsMustAddUp) {
  Report({5, 10, 15, 20, 25, 30}, {0, 10, 20, 30});
  Complete();
  Sql("UPDATE experiments SET state = 1");  // active, every trial finished
  EXPECT_THAT(
      Problems(),
      ElementsAre(HasSubstr("every trial finished but it is not done")));
  Sql("UPDATE experiments SET state = 4; UPDATE trials SET is_baseline = 0");
  EXPECT_THAT(Problems(),
              ElementsAre(HasSubstr("seed 1 has no baseline trial")));
}

TEST_F(CheckTest, TokensKeepTheirIdsAndAUsableAdminToken) {
  EXPECT_THAT(Problems(), ElementsAre());  // no tokens yet: nothing to keep
  ASSERT_TRUE(store_
                  ->CreateToken(std::string(64, 'a'), "admin", v1::ROLE_ADMIN,
                                1, /*expires_ms=*/0)
                  .ok());
  ASSERT_TRUE(store_
                  ->CreateToken(std::string(64, 'b'), "bob", v1::ROLE_USER, 1,
                                /*expires_ms=*/0)
                  .ok());
  EXPECT_THAT(Problems(), ElementsAre());
  Sql("UPDATE tokens SET revoked_ms = 5 WHERE user = 'admin'");
  EXPECT_THAT(Problems(), ElementsAre(HasSubstr("no usable admin token")));
  Sql("UPDATE tokens SET revoked_ms = 0, expires_ms = 2 WHERE user = "
      "'admin'");
  EXPECT_THAT(Problems(), ElementsAre(HasSubstr("no usable admin token")));
  Sql("UPDATE tokens SET expires_ms = 0;"
      "UPDATE tokens SET id = 'bbbbbbbbbbbc' WHERE user = 'bob'");
  EXPECT_THAT(Problems(), ElementsAre(HasSubstr(
                              "token 'bbbbbbbbbbbc': its id is not the first "
                              "12 digits of its hash")));
}

TEST_F(CheckTest, ItReadsBesideALiveWriterWithoutChangingTheFile) {
  Report({5, 10}, {0, 10});
  // The store keeps the file open for writing; the check only reads.
  EXPECT_THAT(Problems(), ElementsAre());
  Report({15}, {});
  EXPECT_THAT(Problems(), ElementsAre());
}

TEST(CheckDatabaseTest, BadPathsAreClearErrors) {
  TempDir dir("prism_check");
  EXPECT_EQ(CheckDatabase(dir.File("missing.db")).status().code(),
            absl::StatusCode::kNotFound);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.File("other.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  absl::StatusOr<DatabaseCheck> other = CheckDatabase(dir.File("other.db"));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.status().message(), HasSubstr("not a Prism database"));
}

}  // namespace
}  // namespace prism::storage
