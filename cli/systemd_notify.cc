#include "cli/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace prism::cli {

SystemdNotifier SystemdNotifier::FromEnvironment() {
  const char* path = std::getenv("NOTIFY_SOCKET");
  return SystemdNotifier(path == nullptr ? "" : path);
}

absl::Status SystemdNotifier::Send(const std::string& state) {
  if (!enabled()) return absl::OkStatus();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof(address.sun_path) ||
      (socket_path_[0] != '/' && socket_path_[0] != '@')) {
    return absl::InvalidArgumentError(
        absl::StrCat("NOTIFY_SOCKET '", socket_path_,
                     "' is neither an absolute path nor an abstract name "
                     "shorter than ",
                     sizeof(address.sun_path), " bytes"));
  }
  std::memcpy(address.sun_path, socket_path_.data(), socket_path_.size());
  // '@' names the abstract namespace: a leading NUL, and no terminator.
  if (socket_path_[0] == '@') address.sun_path[0] = '\0';
  const socklen_t length = static_cast<socklen_t>(
      offsetof(sockaddr_un, sun_path) + socket_path_.size() +
      (socket_path_[0] == '@' ? 0 : 1));
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("NOTIFY_SOCKET: socket: ", std::strerror(errno)));
  }
  const ssize_t sent =
      sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
             reinterpret_cast<const sockaddr*>(&address), length);
  const int error = errno;
  close(fd);
  if (sent < 0) {
    return absl::UnavailableError(absl::StrCat("NOTIFY_SOCKET ", socket_path_,
                                               ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::Status SystemdNotifier::Status(const std::string& text) {
  if (!enabled() || text == last_status_) return absl::OkStatus();
  absl::Status sent = Send(absl::StrCat("STATUS=", text));
  if (sent.ok()) last_status_ = text;
  return sent;
}

}  // namespace prism::cli
