// NotifySocket stands in for systemd's end of the sd_notify protocol in
// tests: a bound AF_UNIX datagram socket whose path a process under test
// gets as NOTIFY_SOCKET, and that receives its notifications in order.
#ifndef PRISM_TESTS_TESTING_NOTIFY_SOCKET_H_
#define PRISM_TESTS_TESTING_NOTIFY_SOCKET_H_

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace prism::testing {

class NotifySocket {
 public:
  // Binds `path` (an absolute path shorter than sun_path); ok() says whether
  // that worked.
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (fd_ < 0 || path.size() >= sizeof(address.sun_path)) return;
    std::memcpy(address.sun_path, path.data(), path.size());
    bound_ = bind(fd_, reinterpret_cast<const sockaddr*>(&address),
                  sizeof(address)) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) close(fd_);
    if (bound_) unlink(path_.c_str());
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  bool ok() const { return bound_; }
  const std::string& path() const { return path_; }

  // Receive returns the next datagram, or nullopt when none came within
  // `timeout`.
  std::optional<std::string> Receive(absl::Duration timeout) {
    pollfd p = {fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) <=
        0) {
      return std::nullopt;
    }
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    if (n < 0) return std::nullopt;
    return std::string(buffer, static_cast<size_t>(n));
  }

  // ReceiveUntil collects datagrams until one contains `needle` (it is the
  // last one returned) or `timeout` passes.
  std::vector<std::string> ReceiveUntil(const std::string& needle,
                                        absl::Duration timeout) {
    std::vector<std::string> got;
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      std::optional<std::string> next = Receive(deadline - absl::Now());
      if (!next.has_value()) break;
      got.push_back(*next);
      if (absl::StrContains(*next, needle)) break;
    }
    return got;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

}  // namespace prism::testing

#endif  // PRISM_TESTS_TESTING_NOTIFY_SOCKET_H_
