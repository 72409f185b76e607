#include "cli/systemd_notify.h"

#include <cstdlib>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/notify_socket.h"
#include "tests/testing/temp_dir.h"

namespace prism::cli {
namespace {

using ::prism::testing::NotifySocket;
using ::prism::testing::TempDir;
using ::testing::HasSubstr;

TEST(SystemdNotifierTest, SendsEachStateAsOneDatagramAndStatusOnlyOnChange) {
  const TempDir dir("prism_notify");
  NotifySocket manager(dir.File("notify.sock"));
  ASSERT_TRUE(manager.ok());
  SystemdNotifier notify(manager.path());
  ASSERT_TRUE(notify.enabled());
  ASSERT_TRUE(notify.Status("not ready: disk_full").ok());
  ASSERT_TRUE(notify.Status("not ready: disk_full").ok());  // unchanged
  ASSERT_TRUE(notify.Status("ready").ok());
  ASSERT_TRUE(notify.Send("READY=1").ok());
  EXPECT_EQ(manager.Receive(absl::Seconds(5)), "STATUS=not ready: disk_full");
  EXPECT_EQ(manager.Receive(absl::Seconds(5)), "STATUS=ready");
  EXPECT_EQ(manager.Receive(absl::Seconds(5)), "READY=1");
  EXPECT_EQ(manager.Receive(absl::Milliseconds(50)), std::nullopt);
}

TEST(SystemdNotifierTest, WithoutNotifySocketEveryCallIsANoOp) {
  unsetenv("NOTIFY_SOCKET");
  SystemdNotifier notify = SystemdNotifier::FromEnvironment();
  EXPECT_FALSE(notify.enabled());
  EXPECT_TRUE(notify.Send("READY=1").ok());
  EXPECT_TRUE(notify.Status("ready").ok());
}

TEST(SystemdNotifierTest, BadOrAbsentSocketsAreErrorsNamingThePath) {
  absl::Status relative = SystemdNotifier("notify.sock").Send("READY=1");
  EXPECT_EQ(relative.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(relative.message(), HasSubstr("'notify.sock'"));
  const TempDir dir("prism_notify");
  absl::Status absent =
      SystemdNotifier(dir.File("nobody.sock")).Send("READY=1");
  EXPECT_EQ(absent.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(absent.message(), HasSubstr("nobody.sock"));
}

}  // namespace
}  // namespace prism::cli
