// The scaler against a fake batch scheduler and a real SQLite store: the
// cap, spare jobs, cancelling what nothing waits for, adopting an earlier
// run's jobs after a restart, and backing off a failing sbatch.
#include "server/core/queue/scaler.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server {
namespace {

using ::testing::ElementsAre;
using testing::FakeClock;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing::TempDir;

// FakeJobs: a scheduler in memory. Jobs start pending; the test moves them.
class FakeJobs final : public JobBackend {
 public:
  struct Job {
    std::string name;
    JobState state = JobState::kPending;
  };

  std::string name() const override { return "slurm"; }

  absl::StatusOr<std::string> Submit(const std::string& job_name,
                                     const std::string& coordinator) override {
    ++submit_calls;
    if (failing_submits > 0) {
      --failing_submits;
      return absl::UnavailableError(
          "sbatch exited 1: sbatch: error: invalid partition specified: gpu");
    }
    dialed = coordinator;
    const std::string id = absl::StrCat(next_id++);
    jobs[id] = Job{job_name, JobState::kPending};
    return id;
  }

  absl::StatusOr<std::vector<BatchJob>> List(
      const std::string& job_name) override {
    if (failing_lists > 0) {
      --failing_lists;
      return absl::UnavailableError("squeue exited 1: slurm_load_jobs error");
    }
    std::vector<BatchJob> out;
    for (const auto& [id, job] : jobs) {
      if (job.name == job_name) out.push_back(BatchJob{id, job.state});
    }
    return out;
  }

  absl::Status Cancel(const std::string& id) override {
    jobs.erase(id);
    cancelled.push_back(id);
    return absl::OkStatus();
  }

  std::map<std::string, Job> jobs;
  std::vector<std::string> cancelled;
  std::string dialed;
  int next_id = 100;
  int submit_calls = 0;
  int failing_submits = 0;
  int failing_lists = 0;
};

class ScalerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store =
        storage::SqliteStore::Open(dir_.File("prism.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    options_.max_workers = 2;
    options_.idle_grace = absl::Seconds(30);
    options_.initial_backoff = absl::Seconds(10);
    options_.max_backoff = absl::Seconds(40);
  }

  // NewScaler is a coordinator start: a scaler on the same store.
  std::unique_ptr<Scaler> NewScaler() {
    auto scaler = std::make_unique<Scaler>(
        options_, &jobs_, store_.get(),
        [this]() -> absl::StatusOr<QueueSnapshot> { return queue_; }, &clock_);
    EXPECT_TRUE(scaler->Init().ok());
    return scaler;
  }

  std::vector<std::string> Open() {
    absl::StatusOr<std::vector<std::string>> open =
        store_->ListOpenScalerJobs("slurm");
    EXPECT_TRUE(open.ok()) << open.status();
    return open.ok() ? *open : std::vector<std::string>{};
  }

  TempDir dir_{"prism_scaler"};
  std::unique_ptr<storage::SqliteStore> store_;
  FakeJobs jobs_;
  FakeClock clock_;
  QueueSnapshot queue_;
  ScalerOptions options_;
};

TEST_F(ScalerTest, SubmitsOneJobPerWaitingTrialButNeverAboveTheCap) {
  std::unique_ptr<Scaler> scaler = NewScaler();
  queue_.waiting = 4;
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_THAT(jobs_.jobs, SizeIs(2));
  // Still four waiting, both jobs pending: the cap holds.
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_THAT(jobs_.jobs, SizeIs(2));
  // Running and busy, two trials still waiting: the cap still holds.
  for (auto& [id, job] : jobs_.jobs) {
    job.state = JobState::kRunning;
    queue_.workers["slurm-" + id] = v1::WORKER_BUSY;
  }
  queue_.waiting = 2;
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_EQ(jobs_.submit_calls, 2);
  EXPECT_THAT(Open(), ElementsAre("100", "101"));
  for (const auto& [id, job] : jobs_.jobs) {
    EXPECT_THAT(job.name, HasSubstr("prism-worker-")) << id;
  }
}

TEST_F(ScalerTest, PendingStartingAndIdleJobsCountAsSpare) {
  options_.max_workers = 10;
  std::unique_ptr<Scaler> scaler = NewScaler();
  queue_.waiting = 1;
  ASSERT_TRUE(scaler->Tick().ok());  // 100, pending
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_EQ(jobs_.submit_calls, 1);
  jobs_.jobs.at("100").state = JobState::kRunning;  // no worker yet
  queue_.waiting = 2;
  ASSERT_TRUE(scaler->Tick().ok());  // + 101
  EXPECT_EQ(jobs_.submit_calls, 2);
  queue_.workers["slurm-100"] = v1::WORKER_IDLE;
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_EQ(jobs_.submit_calls, 2);
  // A busy worker is no spare: a third waiting trial gets a job of its own.
  queue_.workers["slurm-100"] = v1::WORKER_BUSY;
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_EQ(jobs_.submit_calls, 3);
}

TEST_F(ScalerTest, CancelsPendingJobsAtOnceAndIdleWorkersAfterTheGrace) {
  std::unique_ptr<Scaler> scaler = NewScaler();
  queue_.waiting = 2;
  ASSERT_TRUE(scaler->Tick().ok());
  ASSERT_THAT(jobs_.jobs, SizeIs(2));
  jobs_.jobs.at("100").state = JobState::kRunning;
  queue_.workers["slurm-100"] = v1::WORKER_BUSY;
  // One trial leased by 100, the other cancelled: 101 is pending for
  // nothing.
  queue_.waiting = 0;
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_THAT(jobs_.cancelled, ElementsAre("101"));
  // A busy worker is never cancelled, however long.
  clock_.Advance(absl::ToInt64Milliseconds(options_.idle_grace) * 2);
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_THAT(jobs_.cancelled, ElementsAre("101"));
  // Idle with nothing waiting: cancelled once idle for the grace.
  queue_.workers["slurm-100"] = v1::WORKER_IDLE;
  ASSERT_TRUE(scaler->Tick().ok());
  clock_.Advance(absl::ToInt64Milliseconds(options_.idle_grace) - 1);
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_THAT(jobs_.cancelled, ElementsAre("101"));
  clock_.Advance(1);
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_THAT(jobs_.cancelled, ElementsAre("101", "100"));
  EXPECT_THAT(jobs_.jobs, IsEmpty());
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_THAT(Open(), IsEmpty());
}

TEST_F(ScalerTest, AnIdleWorkerBetweenTrialsIsNotCancelledWhileTrialsWait) {
  std::unique_ptr<Scaler> scaler = NewScaler();
  queue_.waiting = 1;
  ASSERT_TRUE(scaler->Tick().ok());
  jobs_.jobs.at("100").state = JobState::kRunning;
  queue_.workers["slurm-100"] = v1::WORKER_IDLE;
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(absl::ToInt64Milliseconds(options_.idle_grace));
    ASSERT_TRUE(scaler->Tick().ok());
  }
  EXPECT_THAT(jobs_.cancelled, IsEmpty());
  EXPECT_EQ(jobs_.submit_calls, 1);
}

TEST_F(ScalerTest, ARestartedCoordinatorAdoptsItsJobsAndSubmitsNoMore) {
  std::string name;
  {
    std::unique_ptr<Scaler> first = NewScaler();
    name = first->job_name();
    queue_.waiting = 2;
    ASSERT_TRUE(first->Tick().ok());
    ASSERT_THAT(jobs_.jobs, SizeIs(2));
  }
  // The first run died between an sbatch and its write: the scheduler has a
  // job of ours the store never heard of. Another database's job is not
  // ours.
  jobs_.jobs["102"] = FakeJobs::Job{name, JobState::kPending};
  jobs_.next_id = 103;
  jobs_.jobs["900"] = FakeJobs::Job{"prism-worker-other", JobState::kPending};
  queue_.waiting = 4;

  std::unique_ptr<Scaler> second = NewScaler();
  EXPECT_EQ(second->job_name(), name);
  ASSERT_TRUE(second->Tick().ok());
  // Three of its own are at the cap's 2 already or above: nothing new, and
  // nothing of the other database's touched.
  EXPECT_EQ(jobs_.submit_calls, 2);
  EXPECT_THAT(Open(), ElementsAre("100", "101", "102"));
  EXPECT_TRUE(jobs_.jobs.count("900") > 0);
  EXPECT_THAT(jobs_.cancelled, IsEmpty());

  // Jobs that ended while it was down are closed, and the room they leave
  // is filled.
  jobs_.jobs.erase("100");
  jobs_.jobs.erase("101");
  jobs_.jobs.erase("102");
  ASSERT_TRUE(second->Tick().ok());
  EXPECT_EQ(jobs_.submit_calls, 4);
  EXPECT_THAT(Open(), ElementsAre("103", "104"));
}

TEST_F(ScalerTest, EachDatabaseTagsItsJobsWithItsOwnName) {
  TempDir other_dir("prism_scaler_other");
  absl::StatusOr<std::unique_ptr<storage::SqliteStore>> other =
      storage::SqliteStore::Open(other_dir.File("prism.db"));
  ASSERT_TRUE(other.ok()) << other.status();
  Scaler theirs(
      options_, &jobs_, other->get(),
      []() -> absl::StatusOr<QueueSnapshot> { return QueueSnapshot{}; },
      &clock_);
  ASSERT_TRUE(theirs.Init().ok());
  EXPECT_NE(NewScaler()->job_name(), theirs.job_name());
}

TEST_F(ScalerTest, NothingIsSubmittedOrCancelledWithoutAListing) {
  std::unique_ptr<Scaler> scaler = NewScaler();
  queue_.waiting = 2;
  jobs_.failing_lists = 1;
  absl::Status tick = scaler->Tick();
  EXPECT_THAT(tick.message(), HasSubstr("squeue"));
  EXPECT_EQ(jobs_.submit_calls, 0);
}

TEST_F(ScalerTest, AFailingSbatchBacksOffDoublingAndSaysWhyInOneLine) {
  std::unique_ptr<Scaler> scaler = NewScaler();
  queue_.waiting = 2;
  jobs_.failing_submits = 2;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(scaler->Tick().ok());
  const std::string log = ::testing::internal::GetCapturedStderr();
  // One attempt, not one per waiting trial, and one line saying why.
  EXPECT_EQ(jobs_.submit_calls, 1);
  EXPECT_THAT(log, HasSubstr("level=error"));
  EXPECT_THAT(log, HasSubstr("worker job submission failed; backing off"));
  EXPECT_THAT(log, HasSubstr("invalid partition specified: gpu"));
  EXPECT_THAT(log, HasSubstr("retry_in=10s"));

  ASSERT_TRUE(scaler->Tick().ok());  // within the backoff
  EXPECT_EQ(jobs_.submit_calls, 1);
  clock_.Advance(10'000);
  ASSERT_TRUE(scaler->Tick().ok());  // fails again: 20 s now
  EXPECT_EQ(jobs_.submit_calls, 2);
  clock_.Advance(10'000);
  ASSERT_TRUE(scaler->Tick().ok());
  EXPECT_EQ(jobs_.submit_calls, 2);
  clock_.Advance(10'000);
  ASSERT_TRUE(scaler->Tick().ok());  // succeeds: both jobs
  EXPECT_EQ(jobs_.submit_calls, 4);
  EXPECT_THAT(jobs_.jobs, SizeIs(2));
}

TEST_F(ScalerTest, JobsDialTheAddressStartGives) {
  std::unique_ptr<Scaler> scaler = NewScaler();
  queue_.waiting = 1;
  scaler->Start("node7:50051");
  scaler->Stop();
  EXPECT_EQ(jobs_.dialed, "node7:50051");
}

TEST(ScalerOptionsTest, BadOptionsNameTheirFlag) {
  ScalerOptions o;
  o.max_workers = 0;
  EXPECT_THAT(ValidateScalerOptions(o).message(), HasSubstr("--max-workers"));
  o = ScalerOptions{};
  o.interval = absl::ZeroDuration();
  EXPECT_THAT(ValidateScalerOptions(o).message(),
              HasSubstr("--scale-interval-seconds"));
  o = ScalerOptions{};
  o.idle_grace = absl::Seconds(-1);
  EXPECT_THAT(ValidateScalerOptions(o).message(),
              HasSubstr("--scale-idle-seconds"));
  EXPECT_TRUE(ValidateScalerOptions(ScalerOptions{}).ok());
}

}  // namespace
}  // namespace prism::server
