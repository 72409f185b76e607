// BackupDatabase: a copy taken while another thread keeps committing reports
// through a SqliteStore is a sound database holding every report committed
// before the copy began; bad paths fail with one-line messages and leave no
// file behind.
#include "storage/backup.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/storage/store_test_util.h"
#include "tests/testing/scoped_umask.h"

namespace prism::storage {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using testing::MakeExperiment;
using ::testing::Not;
using testing::Point;
using testing::TempDir;

constexpr int kPointsPerReport = 50;

// QueryText runs a one-value SQL query on a raw connection to `path`.
std::string QueryText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr),
            SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  std::string value;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    if (text != nullptr) value = reinterpret_cast<const char*>(text);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

// Names lists the file names in `dir`.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

// HasTempFile is true when a backup temp file is left in `dir`.
bool HasTempFile(const std::string& dir) {
  for (const std::string& name : Names(dir)) {
    if (name.find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

class BackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("prism.db");
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    v1::Worker w;
    w.set_id("w1");
    ASSERT_TRUE(store_->UpsertWorker(w, 1, /*take_over=*/false).ok());
    // A budget as long as the reports below: a point past it is refused.
    NewExperiment spec = MakeExperiment("alice", {"4x4"}, {1});
    spec.total_steps = int64_t{1} << 40;
    spec.spec.mutable_budget()->set_steps(spec.total_steps);
    absl::StatusOr<CreatedExperiment> e = store_->CreateExperiment(spec);
    ASSERT_TRUE(e.ok()) << e.status();
    absl::StatusOr<std::optional<v1::Trial>> t =
        store_->LeaseNextTrial(e->id, "w1", 2, int64_t{1} << 50);
    ASSERT_TRUE(t.ok() && t->has_value());
    trial_id_ = (*t)->id();
  }

  // WriteReport commits report `index`: steps index * kPointsPerReport + 1
  // to (index + 1) * kPointsPerReport, in one transaction.
  absl::Status WriteReport(int index) {
    ReportWrite report;
    report.ref = AttemptRef{trial_id_, 1, "w1"};
    report.now_ms = 3;
    report.lease_deadline_ms = int64_t{1} << 50;
    for (int i = 1; i <= kPointsPerReport; ++i) {
      report.points.push_back(
          Point(v1::SPLIT_TRAIN, int64_t{index} * kPointsPerReport + i, 1.0f));
    }
    absl::StatusOr<std::vector<ReportOutcome>> out =
        store_->WriteReports({&report});
    if (!out.ok()) return out.status();
    return (*out)[0].status;
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqliteStore> store_;
  int64_t trial_id_ = 0;
};

TEST_F(BackupTest, CopyWhileWritingHoldsEveryReportCommittedBeforeIt) {
  // About 3 MB of points, so the copy takes several steps.
  constexpr int kInitialReports = 2000;
  for (int r = 0; r < kInitialReports; ++r) ASSERT_TRUE(WriteReport(r).ok());

  std::atomic<int> committed{kInitialReports};
  std::atomic<bool> stop{false};
  std::atomic<bool> writer_failed{false};
  std::thread writer([&] {
    while (!stop.load()) {
      if (!WriteReport(committed.load()).ok()) {
        writer_failed = true;
        return;
      }
      committed.fetch_add(1);
    }
  });
  // The writer is committing before, during and after the copy.
  while (committed.load() < kInitialReports + 20 && !writer_failed.load()) {
    std::this_thread::yield();
  }
  const int before = committed.load();
  const std::string dest = dir_.File("copy.db");
  const absl::Status backup = BackupDatabase(path_, dest);
  const int after = committed.load();
  while (committed.load() < after + 20 && !writer_failed.load()) {
    std::this_thread::yield();
  }
  stop = true;
  writer.join();
  ASSERT_TRUE(backup.ok()) << backup;
  EXPECT_FALSE(writer_failed.load());

  EXPECT_EQ(QueryText(dest, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryText(dest, "SELECT COUNT(*) FROM pragma_foreign_key_check"),
            "0");
  const int64_t points =
      std::stoll(QueryText(dest, "SELECT COUNT(*) FROM points"));
  EXPECT_GE(points, int64_t{before} * kPointsPerReport);
  EXPECT_LE(points, int64_t{after} * kPointsPerReport);
  // Whole reports only, steps 1..points without a gap: one snapshot.
  EXPECT_EQ(points % kPointsPerReport, 0);
  EXPECT_EQ(QueryText(dest, "SELECT MAX(step) FROM points"),
            std::to_string(points));
  EXPECT_FALSE(HasTempFile(dir_.path()));

  // The copy opens as a store, at the same schema, with the trial as it was.
  store_.reset();
  absl::StatusOr<std::unique_ptr<SqliteStore>> copy = SqliteStore::Open(dest);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(*(*copy)->SchemaVersion(), kSchemaVersion);
  absl::StatusOr<v1::Trial> trial = (*copy)->GetTrial(trial_id_);
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->state(), v1::TRIAL_RUNNING);
  EXPECT_EQ(trial->last_step(), points);
}

TEST_F(BackupTest, ACopyOfAClosedDatabaseHoldsAllOfIt) {
  for (int r = 0; r < 10; ++r) ASSERT_TRUE(WriteReport(r).ok());
  store_.reset();
  const std::string dest = dir_.File("copy.db");
  ASSERT_TRUE(BackupDatabase(path_, dest).ok());
  EXPECT_EQ(QueryText(dest, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryText(dest, "SELECT COUNT(*) FROM points"),
            std::to_string(10 * kPointsPerReport));
}

// Issue #40: a copy holds the same secrets as its source: it is the
// owner's alone, whatever the source's mode or the umask.
TEST_F(BackupTest, TheCopyIsPrivateWhateverTheSourceModeAndUmask) {
  ASSERT_TRUE(WriteReport(0).ok());
  store_.reset();
  ASSERT_EQ(chmod(path_.c_str(), 0644), 0);
  ::prism::testing::ScopedUmask open_to_all(0);
  const std::string dest = dir_.File("copy.db");
  ASSERT_TRUE(BackupDatabase(path_, dest).ok());
  EXPECT_EQ(::prism::testing::ModeOf(dest), 0600);
  EXPECT_EQ(QueryText(dest, "PRAGMA integrity_check"), "ok");
}

TEST_F(BackupTest, AnExistingDestinationIsNeverOverwritten) {
  ASSERT_TRUE(WriteReport(0).ok());
  const std::string dest = dir_.File("copy.db");
  std::ofstream(dest) << "precious";
  const absl::Status status = BackupDatabase(path_, dest);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(dest));
  std::string content;
  std::getline(std::ifstream(dest), content);
  EXPECT_EQ(content, "precious");
  // The database itself is never a destination either.
  EXPECT_EQ(BackupDatabase(path_, path_).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(HasTempFile(dir_.path()));
}

TEST_F(BackupTest, BadPathsFailWithOneLineMessagesAndLeaveNothing) {
  const std::string dest = dir_.File("copy.db");
  const std::string not_a_database = dir_.File("notes.txt");
  std::ofstream(not_a_database) << std::string(8192, 'x');
  struct Case {
    std::string source, dest;
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", dest, absl::StatusCode::kInvalidArgument, "source path is empty"},
      {path_, "", absl::StatusCode::kInvalidArgument,
       "destination path is empty"},
      {dir_.File("missing.db"), dest, absl::StatusCode::kNotFound,
       "does not exist"},
      {path_, dir_.File("no/such/dir/copy.db"), absl::StatusCode::kNotFound,
       "directory"},
      {dir_.path(), dest, absl::StatusCode::kInvalidArgument, "is a directory"},
      {path_, dir_.path(), absl::StatusCode::kInvalidArgument,
       "is a directory"},
      {path_, dir_.path() + "/", absl::StatusCode::kInvalidArgument,
       "is a directory"},
      {not_a_database, dest, absl::StatusCode::kInvalidArgument,
       "not a SQLite database"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source + " -> " + c.dest);
    const absl::Status status = BackupDatabase(c.source, c.dest);
    EXPECT_EQ(status.code(), c.code) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
    EXPECT_THAT(std::string(status.message()), Not(HasSubstr("\n")));
  }
  EXPECT_THAT(Names(dir_.path()), Not(Contains("copy.db")));
  EXPECT_FALSE(HasTempFile(dir_.path()));
}

}  // namespace
}  // namespace prism::storage
