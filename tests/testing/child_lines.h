// ChildLines: a FIFO through which a test's child processes say when the test
// may go on (`echo ready > $FIFO`), so tests wait on signals, not sleeps.
#ifndef PRISM_TESTS_TESTING_CHILD_LINES_H_
#define PRISM_TESTS_TESTING_CHILD_LINES_H_

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace prism::testing {

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
  TempDir dir_{"prism_subprocess_test"};
  std::string path_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::string pending_;
};

}  // namespace prism::testing

#endif  // PRISM_TESTS_TESTING_CHILD_LINES_H_
