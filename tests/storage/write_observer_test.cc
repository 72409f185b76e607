// The store's WriteObserver: which failures are storage faults (from the
// SQLite result, not the message), which commits are reported, and the
// slow-commit stall point tests use for a slow disk.
#include "storage/write_observer.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "storage/internal/sqlite.h"
#include "storage/sqlite_store.h"
#include "tests/storage/store_test_util.h"

namespace prism::storage {
namespace {

using testing::TempDir;

class Recorder final : public WriteObserver {
 public:
  void WriteFailed(StorageFault fault, const absl::Status&) override {
    absl::MutexLock lock(&mu_);
    failed_.push_back(fault);
  }
  void WriteCommitted(absl::Duration took) override {
    absl::MutexLock lock(&mu_);
    committed_.push_back(took);
  }
  std::vector<StorageFault> failed() {
    absl::MutexLock lock(&mu_);
    return failed_;
  }
  std::vector<absl::Duration> committed() {
    absl::MutexLock lock(&mu_);
    return committed_;
  }

 private:
  absl::Mutex mu_;
  std::vector<StorageFault> failed_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> committed_ ABSL_GUARDED_BY(mu_);
};

TEST(StorageFaultTest, ComesFromTheSqliteResultCode) {
  using internal::SqliteError;
  EXPECT_EQ(StorageFaultOf(SqliteError(nullptr, SQLITE_FULL, "COMMIT")),
            StorageFault::kDiskFull);
  EXPECT_EQ(StorageFaultOf(SqliteError(nullptr, SQLITE_IOERR_WRITE, "x")),
            StorageFault::kIoError);
  EXPECT_EQ(StorageFaultOf(SqliteError(nullptr, SQLITE_READONLY, "x")),
            StorageFault::kReadOnly);
  EXPECT_EQ(StorageFaultOf(SqliteError(nullptr, SQLITE_BUSY, "x")),
            StorageFault::kBusy);
  // Not the disk's doing: a bad path, a duplicate, another module's status.
  EXPECT_EQ(StorageFaultOf(SqliteError(nullptr, SQLITE_CANTOPEN, "x")),
            std::nullopt);
  EXPECT_EQ(StorageFaultOf(SqliteError(nullptr, SQLITE_CONSTRAINT, "x")),
            std::nullopt);
  EXPECT_EQ(StorageFaultOf(absl::UnavailableError("database or disk is full")),
            std::nullopt);
}

TEST(WriteObserverTest, CommitsAreReportedAndAConstraintIsNoFault) {
  const TempDir dir("write_observer");
  absl::StatusOr<std::unique_ptr<SqliteStore>> store =
      SqliteStore::Open(dir.File("prism.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  Recorder recorder;
  (*store)->SetWriteObserver(&recorder);
  ASSERT_TRUE(
      (*store)->CreateToken("hash-1", "ada", v1::ROLE_USER, 1000, 0).ok());
  EXPECT_EQ(recorder.committed().size(), 1u);
  absl::Status again =
      (*store)->CreateToken("hash-1", "ada", v1::ROLE_USER, 1000, 0);
  EXPECT_FALSE(again.ok());
  EXPECT_TRUE(recorder.failed().empty());
  ASSERT_TRUE((*store)->ProbeWrite().ok());
  EXPECT_EQ(recorder.committed().size(), 2u);
  // A write transaction that changed nothing wrote nothing: not reported.
  ASSERT_TRUE((*store)->ExtendLiveLeases(5000).ok());
  EXPECT_EQ(recorder.committed().size(), 2u);
  (*store)->SetWriteObserver(nullptr);
}

TEST(WriteObserverTest, StallPointSlowsCommitsWhileItsFileExists) {
  const TempDir dir("write_observer_stall");
  const std::string stall = dir.File("slow");
  setenv("PRISM_STALLS", ("storage.commit=" + stall).c_str(), 1);
  absl::StatusOr<std::unique_ptr<SqliteStore>> store =
      SqliteStore::Open(dir.File("prism.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  Recorder recorder;
  (*store)->SetWriteObserver(&recorder);
  std::ofstream(stall) << "300";
  ASSERT_TRUE((*store)->ProbeWrite().ok());
  std::remove(stall.c_str());
  ASSERT_TRUE((*store)->ProbeWrite().ok());
  const std::vector<absl::Duration> took = recorder.committed();
  ASSERT_EQ(took.size(), 2u);
  EXPECT_GE(took[0], absl::Milliseconds(300));
  EXPECT_LT(took[1], absl::Milliseconds(300));
  (*store)->SetWriteObserver(nullptr);
}

}  // namespace
}  // namespace prism::storage
