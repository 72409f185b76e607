#include "cli/signals.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/time/clock.h"

namespace prism::cli {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
int signal_pipe[2] = {-1, -1};

void OnStopSignal(int signal_number) {
  const int saved_errno = errno;
  const char byte = static_cast<char>(signal_number);
  // Non-blocking: if the pipe is somehow full, the signal is already pending.
  ssize_t written = write(signal_pipe[1], &byte, 1);
  (void)written;
  errno = saved_errno;
}

}  // namespace

StopSignals::StopSignals() {
  if (signal_pipe[0] < 0 && pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    signal_pipe[0] = signal_pipe[1] = -1;
  }
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal_number : kStopSignals) {
    sigaction(signal_number, &action, nullptr);
  }
}

StopSignals::~StopSignals() {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = SIG_DFL;
  for (int signal_number : kStopSignals) {
    sigaction(signal_number, &action, nullptr);
  }
}

int StopSignals::Wait(absl::Duration timeout) {
  if (signal_pipe[0] < 0) {
    absl::SleepFor(timeout);
    return 0;
  }
  pollfd fd = {signal_pipe[0], POLLIN, 0};
  const int64_t ms = absl::ToInt64Milliseconds(timeout);
  const int ready = poll(&fd, 1, ms > 1 << 30 ? -1 : static_cast<int>(ms));
  if (ready <= 0) return 0;
  char byte = 0;
  if (read(signal_pipe[0], &byte, 1) != 1) return 0;
  const int signal_number = static_cast<unsigned char>(byte);
  if (first_ == 0) first_ = signal_number;
  return signal_number;
}

}  // namespace prism::cli
