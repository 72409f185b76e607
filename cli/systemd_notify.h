// SystemdNotifier tells a service manager how the process stands, in
// systemd's sd_notify protocol (man 3 sd_notify): newline-separated
// KEY=VALUE assignments in one datagram to the AF_UNIX socket named by
// $NOTIFY_SOCKET (a path, or '@' for the abstract namespace). Without that
// variable (not run by systemd as Type=notify) every call does nothing.
//
// `prism coordinator` sends STATUS= with its readiness (the same text as
// /readyz: "ready", or "not ready: ..." naming the storage fault) whenever it
// changes, READY=1 once it serves, and STOPPING=1 when it stops; so
// `systemctl status prism-coordinator` shows why it is not ready, and a unit
// ordered After= it starts only once it serves.
//
//   SystemdNotifier notify = SystemdNotifier::FromEnvironment();
//   notify.Status("not ready: ...");
//   notify.Send("READY=1\nSTATUS=ready");
//
// Thread-safety: one thread at a time (Status remembers the last text).
#ifndef PRISM_CLI_SYSTEMD_NOTIFY_H_
#define PRISM_CLI_SYSTEMD_NOTIFY_H_

#include <string>

#include "absl/status/status.h"

namespace prism::cli {

class SystemdNotifier {
 public:
  // FromEnvironment reads $NOTIFY_SOCKET; unset or empty: a no-op notifier.
  static SystemdNotifier FromEnvironment();
  explicit SystemdNotifier(std::string socket_path)
      : socket_path_(std::move(socket_path)) {}

  bool enabled() const { return !socket_path_.empty(); }
  // Send delivers `state` as one datagram. OK when disabled; otherwise the
  // socket error (the caller logs it: a service manager that went away must
  // not stop the coordinator).
  absl::Status Send(const std::string& state);
  // Status sends "STATUS=<text>" when `text` differs from the last one sent.
  absl::Status Status(const std::string& text);

 private:
  std::string socket_path_;
  std::string last_status_;
};

}  // namespace prism::cli

#endif  // PRISM_CLI_SYSTEMD_NOTIFY_H_
