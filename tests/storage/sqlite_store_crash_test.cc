// Crash safety: a child process writes through the store, acknowledges each
// committed write to the parent over a pipe, and then kills itself with
// SIGKILL (no destructors, no close, no checkpoint). The parent reopens the
// file and must find every acknowledged write.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/storage/store_test_util.h"

namespace prism::storage {
namespace {

using testing::MakeExperiment;
using testing::Point;
using testing::TempDir;

constexpr int kReports = 200;
constexpr int kPointsPerReport = 25;

// RunChild does the writes and never returns.
[[noreturn]] void RunChild(const std::string& path, int ack_fd) {
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
  if (!store.ok()) _exit(10);
  v1::Worker w;
  w.set_id("w1");
  if (!(*store)->UpsertWorker(w, 1, /*take_over=*/false).ok()) _exit(11);
  // A budget as long as the reports below: a point past it is refused.
  NewExperiment spec = MakeExperiment("alice", {"4x4"}, {1});
  spec.total_steps = kReports * kPointsPerReport;
  spec.spec.mutable_budget()->set_steps(spec.total_steps);
  absl::StatusOr<CreatedExperiment> e = (*store)->CreateExperiment(spec);
  if (!e.ok()) _exit(12);
  absl::StatusOr<std::optional<v1::Trial>> t =
      (*store)->LeaseNextTrial(e->id, "w1", 2, 1'000'000);
  if (!t.ok() || !t->has_value()) _exit(13);
  int64_t step = 0;
  for (int r = 0; r < kReports; ++r) {
    ReportWrite report;
    report.ref = AttemptRef{(*t)->id(), 1, "w1"};
    for (int i = 0; i < kPointsPerReport; ++i) {
      report.points.push_back(Point(v1::SPLIT_TRAIN, ++step, 1.0f));
    }
    absl::StatusOr<std::vector<ReportOutcome>> out =
        (*store)->WriteReports({&report});
    if (!out.ok() || !(*out)[0].status.ok()) _exit(14);
    // The acknowledgement: the parent counts these bytes.
    const char ack = 'a';
    if (write(ack_fd, &ack, 1) != 1) _exit(15);
  }
  raise(SIGKILL);
  _exit(16);
}

TEST(SqliteStoreCrashTest, AcknowledgedWritesSurviveSigkill) {
  TempDir dir;
  const std::string path = dir.File("prism.db");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    RunChild(path, fds[1]);
  }
  close(fds[1]);
  int acks = 0;
  char buf[256];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) acks += static_cast<int>(n);
  close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exit " << WEXITSTATUS(wstatus);
  EXPECT_EQ(WTERMSIG(wstatus), SIGKILL);
  ASSERT_EQ(acks, kReports);

  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<TrialPage> trials =
      (*store)->ListTrials(1, v1::TRIAL_STATE_UNSPECIFIED, 10, 0);
  ASSERT_EQ(trials->trials.size(), 1u);
  const v1::Trial& t = trials->trials[0];
  EXPECT_EQ(t.state(), v1::TRIAL_RUNNING);
  EXPECT_EQ(t.last_step(), kReports * kPointsPerReport);
  absl::StatusOr<std::vector<v1::LossPoint>> points =
      (*store)->GetPoints(t.id());
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), static_cast<size_t>(acks * kPointsPerReport));
  for (size_t i = 0; i < points->size(); ++i) {
    EXPECT_EQ((*points)[i].step(), static_cast<int64_t>(i + 1));
  }
}

}  // namespace
}  // namespace prism::storage
