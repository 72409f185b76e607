#include "cli/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace prism::cli {
namespace {

// ChildLines is a FIFO a shell child writes a line to whenever the test must
// wait for it (`echo ready > $FIFO`); Next blocks until that line arrives.
// The test holds a write end itself, so the FIFO never reads as closed
// between the child's writes and Next waits for data only.
class ChildLines {
 public:
  ChildLines() : path_(dir_.File("lines")) {
    EXPECT_EQ(mkfifo(path_.c_str(), 0600), 0) << path_;
    read_fd_ = open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    write_fd_ = open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    EXPECT_GE(read_fd_, 0);
    EXPECT_GE(write_fd_, 0);
  }
  ~ChildLines() {
    if (read_fd_ >= 0) close(read_fd_);
    if (write_fd_ >= 0) close(write_fd_);
  }
  ChildLines(const ChildLines&) = delete;
  ChildLines& operator=(const ChildLines&) = delete;

  const std::string& path() const { return path_; }

  // Next returns the child's next line, or "" when none came in `timeout`.
  std::string Next(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      const size_t end = pending_.find('\n');
      if (end != std::string::npos) {
        const std::string line = pending_.substr(0, end);
        pending_.erase(0, end + 1);
        return line;
      }
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return "";
      pollfd p = {read_fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) >
          0) {
        char buffer[256];
        const ssize_t n = read(read_fd_, buffer, sizeof buffer);
        if (n > 0) pending_.append(buffer, static_cast<size_t>(n));
      }
    }
  }

 private:
  ::prism::testing::TempDir dir_{"prism_subprocess_test"};
  std::string path_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::string pending_;
};

// SpawnTermCounter starts a shell child that exits with the number of
// SIGTERMs it received: it says "ready" once its trap is set and "term" each
// time the trap ran, waits for the first, then gives a second half a second
// to arrive. Returns once the child is ready.
Subprocess SpawnTermCounter(ChildLines* lines) {
  const std::string fifo = "'" + lines->path() + "'";
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c",
            "n=0; trap 'n=$((n+1)); echo term > " + fifo + "' TERM; " +
                "echo ready > " + fifo +
                "; while [ $n -eq 0 ]; do sleep 0.05; done; sleep 0.5; "
                "exit $n"};
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(o);
  EXPECT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(lines->Next(absl::Seconds(10)), "ready");
  return *std::move(child);
}

TEST(SubprocessTest, StopAfterAnExplicitSigtermDoesNotSendASecond) {
  ChildLines lines;
  Subprocess child = SpawnTermCounter(&lines);
  ASSERT_TRUE(child.Signal(SIGTERM).ok());
  // The child handled it, so a second SIGTERM from Stop would count apart.
  ASSERT_EQ(lines.Next(absl::Seconds(10)), "term");
  EXPECT_EQ(child.Stop(absl::Seconds(10)), 1);
}

TEST(SubprocessTest, StopSendsSigtermThenWaits) {
  ChildLines lines;
  Subprocess child = SpawnTermCounter(&lines);
  EXPECT_EQ(child.Stop(absl::Seconds(10)), 1);
  EXPECT_EQ(lines.Next(absl::Seconds(10)), "term");
}

TEST(SubprocessTest, StopKillsAChildThatOutlivesTheGrace) {
  ChildLines lines;
  SpawnOptions o;
  // exec: sleep inherits the ignored SIGTERM, and SIGKILL leaves no orphan
  // holding the test's output open for 30 s.
  o.argv = {"/bin/sh", "-c",
            "trap '' TERM; echo ready > '" + lines.path() + "'; exec sleep 30"};
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(o);
  ASSERT_TRUE(child.ok()) << child.status();
  // Once the child ignores SIGTERM: before, SIGTERM itself would end it.
  ASSERT_EQ(lines.Next(absl::Seconds(10)), "ready");
  EXPECT_EQ(child->Stop(absl::Milliseconds(200)), 128 + SIGKILL);
}

}  // namespace
}  // namespace prism::cli
