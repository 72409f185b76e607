// StorageHealth: the state an operator sees (ready or not, the cause), the
// one log line per change of state, the counts per fault, the disruptions
// the lease-expiry loop acts on, and free space of the database's
// filesystem.
#include "server/core/infra/storage_health.h"

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace prism::server {
namespace {

using storage::StorageFault;
using ::testing::HasSubstr;

const absl::Status kFull =
    absl::UnavailableError("COMMIT: database or disk is full");
const absl::Status kReadOnly =
    absl::UnavailableError("attempt to write a readonly database");

// LinesWith counts the lines of `log` that contain `needle`.
int LinesWith(const std::string& log, const std::string& needle) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    n += absl::StrContains(line, needle) ? 1 : 0;
  }
  return n;
}

TEST(StorageHealthTest, StartsReadyWithEveryFaultCountedAtZero) {
  StorageHealth health("/tmp/x/prism.db", absl::Seconds(1));
  EXPECT_TRUE(health.Ready().ok());
  EXPECT_EQ(health.Condition(), "");
  EXPECT_EQ(health.disruptions(), 0);
  const std::map<std::string, int64_t> errors = health.ErrorsByFault();
  EXPECT_EQ(errors.size(), 4u);
  for (const auto& [fault, n] : errors) EXPECT_EQ(n, 0) << fault;
  EXPECT_EQ(errors.count("disk_full"), 1u);
  EXPECT_EQ(errors.count("read_only"), 1u);
}

TEST(StorageHealthTest, FailedWriteIsNotReadyWithTheCauseUntilACommit) {
  StorageHealth health("/tmp/x/prism.db", absl::Seconds(1));
  health.WriteFailed(StorageFault::kDiskFull, kFull);
  absl::Status ready = health.Ready();
  EXPECT_EQ(ready.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(ready.message(), HasSubstr("disk_full"));
  EXPECT_THAT(ready.message(), HasSubstr("database or disk is full"));
  EXPECT_THAT(health.Condition(), HasSubstr("free space"));

  health.WriteCommitted(absl::Milliseconds(3));
  EXPECT_TRUE(health.Ready().ok());
  EXPECT_EQ(health.Condition(), "");
}

TEST(StorageHealthTest, FailedOpenNamesTheOpenCountsAndLogsNothing) {
  StorageHealth health("/tmp/x/prism.db", absl::Seconds(1));
  ::testing::internal::CaptureStderr();
  health.OpenFailed(StorageFault::kDiskFull, kFull);
  health.OpenFailed(StorageFault::kDiskFull, kFull);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log, "");  // the caller says it once, with what it does
  absl::Status ready = health.Ready();
  EXPECT_EQ(ready.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(ready.message(),
              HasSubstr("database cannot be opened for writing for "));
  EXPECT_THAT(ready.message(), HasSubstr("disk_full: COMMIT: database or"));
  EXPECT_EQ(health.ErrorsByFault().at("disk_full"), 2);
  EXPECT_EQ(health.disruptions(), 1);

  // A later write failure is about writes again.
  health.WriteFailed(StorageFault::kReadOnly, kReadOnly);
  EXPECT_THAT(health.Ready().message(), HasSubstr("storage writes failing"));
}

TEST(StorageHealthTest, FailedOpenSaysHowMuchRoomTheFilesystemHas) {
  const prism::testing::TempDir dir("prism_health_open");
  StorageHealth health(dir.File("prism.db"), absl::Seconds(1));
  health.OpenFailed(StorageFault::kIoError,
                    absl::UnavailableError("disk I/O error"));
  EXPECT_THAT(health.Ready().message(),
              HasSubstr(absl::StrCat(" bytes free on ", dir.path(), ")")));
}

TEST(StorageHealthTest, LogsOncePerChangeOfStateAtErrorLevel) {
  StorageHealth health("/tmp/x/prism.db", absl::Seconds(1));
  ::testing::internal::CaptureStderr();
  health.WriteFailed(StorageFault::kDiskFull, kFull);
  health.WriteFailed(StorageFault::kDiskFull, kFull);
  health.WriteFailed(StorageFault::kDiskFull, kFull);
  health.WriteFailed(StorageFault::kReadOnly, kReadOnly);  // another fault
  health.WriteCommitted(absl::Milliseconds(1));
  health.WriteCommitted(absl::Milliseconds(1));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(LinesWith(log, "storage writes failing"), 2) << log;
  EXPECT_EQ(LinesWith(log, "level=error"), 2) << log;
  EXPECT_EQ(LinesWith(log, "fault=disk_full"), 1) << log;
  EXPECT_EQ(LinesWith(log, "fault=read_only"), 1) << log;
  EXPECT_EQ(LinesWith(log, "action="), 2) << log;
  EXPECT_EQ(LinesWith(log, "storage writes succeed again"), 1) << log;
  EXPECT_EQ(health.ErrorsByFault().at("disk_full"), 3);
  EXPECT_EQ(health.ErrorsByFault().at("read_only"), 1);
}

TEST(StorageHealthTest, EachFailingOrStalledPeriodIsOneDisruption) {
  StorageHealth health("/tmp/x/prism.db", absl::Seconds(1));
  health.WriteFailed(StorageFault::kIoError, kFull);
  health.WriteFailed(StorageFault::kIoError, kFull);
  EXPECT_EQ(health.disruptions(), 1);
  health.WriteCommitted(absl::Milliseconds(2));
  EXPECT_EQ(health.disruptions(), 1);
  // A stall: ready (writes succeed), but heartbeats waited.
  health.WriteCommitted(absl::Seconds(3));
  health.WriteCommitted(absl::Seconds(4));
  EXPECT_EQ(health.disruptions(), 2);
  EXPECT_TRUE(health.Ready().ok());
  EXPECT_THAT(health.Condition(), HasSubstr("stalled"));
  health.WriteCommitted(absl::Milliseconds(2));
  EXPECT_EQ(health.Condition(), "");
  EXPECT_EQ(health.disruptions(), 2);
}

TEST(StorageHealthTest, AWriteInProgressPastTheThresholdIsNotNormal) {
  StorageHealth health("/tmp/x/prism.db", absl::Milliseconds(20));
  health.WriteBegun();
  EXPECT_TRUE(health.normal());  // just begun
  absl::SleepFor(absl::Milliseconds(40));
  EXPECT_FALSE(health.normal());  // stalled, before its commit returns
  EXPECT_TRUE(health.Ready().ok());
  health.WriteEnded();
  EXPECT_TRUE(health.normal());
}

TEST(StorageHealthTest, FreeBytesAreThoseOfTheDatabasesFilesystem) {
  const prism::testing::TempDir dir("storage_health");
  StorageHealth health(dir.File("prism.db"), absl::Seconds(1));
  absl::StatusOr<int64_t> free = health.FreeBytes();
  ASSERT_TRUE(free.ok()) << free.status();
  const auto space = std::filesystem::space(dir.path());
  // Other processes write meanwhile: equal within 256 MiB.
  EXPECT_NEAR(static_cast<double>(*free), static_cast<double>(space.available),
              256.0 * (1 << 20));

  StorageHealth missing("/no/such/dir/prism.db", absl::Seconds(1));
  EXPECT_EQ(missing.FreeBytes().status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace prism::server
