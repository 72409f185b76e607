#include "cli/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"

extern char** environ;

namespace prism::cli {
namespace {

absl::Status ErrnoError(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// OpenLog opens `path` for appending; -1 for "" (inherit).
absl::StatusOr<int> OpenLog(const std::string& path) {
  if (path.empty()) return -1;
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(absl::StrCat("open ", path));
  return fd;
}

// Environment returns ours with `overrides` (KEY=VALUE) applied.
std::vector<std::string> Environment(
    const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    vars[entry.substr(0, entry.find('='))] = entry;
  }
  for (const std::string& entry : overrides) {
    vars[entry.substr(0, entry.find('='))] = entry;
  }
  std::vector<std::string> out;
  for (auto& [name, entry] : vars) out.push_back(std::move(entry));
  return out;
}

// ChildSetup runs between fork and exec, so it uses async-signal-safe calls
// only. It reports a failure through `error_fd` and exits.
[[noreturn]] void ExecChild(pid_t parent, int stdout_fd, int stderr_fd,
                            int error_fd, char* const* argv,
                            char* const* envp) {
  // Die with the parent, even when it is SIGKILLed; if it already died
  // between fork and prctl, the signal would never come.
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(1);
  setpgid(0, 0);
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD}) {
    sigaction(signal_number, &default_action, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (stdout_fd >= 0) dup2(stdout_fd, STDOUT_FILENO);
  if (stderr_fd >= 0) dup2(stderr_fd, STDERR_FILENO);
  execve(argv[0], argv, envp);
  const int error = errno;
  ssize_t written = write(error_fd, &error, sizeof(error));
  (void)written;
  _exit(127);
}

}  // namespace

absl::StatusOr<Subprocess> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) {
    return absl::InvalidArgumentError("no program to start");
  }
  std::vector<std::string> env = Environment(options.env);
  std::vector<char*> argv;
  for (const std::string& arg : options.argv) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : env) {
    envp.push_back(const_cast<char*>(entry.c_str()));
  }
  envp.push_back(nullptr);

  absl::StatusOr<int> stdout_fd = OpenLog(options.stdout_path);
  if (!stdout_fd.ok()) return stdout_fd.status();
  absl::StatusOr<int> stderr_fd = OpenLog(options.stderr_path);
  if (!stderr_fd.ok()) {
    if (*stdout_fd >= 0) close(*stdout_fd);
    return stderr_fd.status();
  }
  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) return ErrnoError("pipe2");

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    close(error_pipe[0]);
    ExecChild(parent, *stdout_fd, *stderr_fd, error_pipe[1], argv.data(),
              envp.data());
  }
  const int fork_errno = errno;
  close(error_pipe[1]);
  if (*stdout_fd >= 0) close(*stdout_fd);
  if (*stderr_fd >= 0) close(*stderr_fd);
  if (pid < 0) {
    close(error_pipe[0]);
    errno = fork_errno;
    return ErrnoError("fork");
  }
  // Also set the group from the parent side, so a signal sent to the group
  // right after Spawn returns cannot miss the child.
  setpgid(pid, pid);

  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(error_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(error_pipe[0]);
  Subprocess child(pid);
  if (n == sizeof(exec_errno)) {
    (void)child.Wait(absl::Seconds(5));
    return absl::InternalError(absl::StrCat("cannot execute ", options.argv[0],
                                            ": ", std::strerror(exec_errno)));
  }
  return child;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      exited_(other.exited_),
      exit_status_(other.exit_status_),
      terminated_(other.terminated_) {}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !exited_) Stop(absl::ZeroDuration());
    pid_ = std::exchange(other.pid_, -1);
    exited_ = other.exited_;
    exit_status_ = other.exit_status_;
    terminated_ = other.terminated_;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    int status;
    if (waitpid(pid_, &status, 0) == pid_) Reap(status);
  }
}

void Subprocess::Reap(int wait_status) {
  exited_ = true;
  if (WIFEXITED(wait_status)) {
    exit_status_ = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    exit_status_ = 128 + WTERMSIG(wait_status);
  }
}

bool Subprocess::Running() {
  if (pid_ <= 0 || exited_) return false;
  int status;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) Reap(status);
  if (r < 0 && errno == ECHILD) exited_ = true;
  return !exited_;
}

absl::Status Subprocess::Signal(int signal) {
  if (!Running()) return absl::OkStatus();
  if (kill(pid_, signal) != 0 && errno != ESRCH) return ErrnoError("kill");
  if (signal == SIGTERM) terminated_ = true;
  return absl::OkStatus();
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (Running()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("process ", pid_, " still running"));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return exit_status_;
}

int Subprocess::Stop(absl::Duration grace) {
  // Once only: a second SIGTERM means "now" to a prism process, which would
  // cut short the clean stop the first one asked for.
  if (!terminated_) (void)Signal(SIGTERM);
  absl::StatusOr<int> status = Wait(grace);
  if (status.ok()) return *status;
  (void)Signal(SIGKILL);
  status = Wait(absl::InfiniteDuration());
  return status.ok() ? *status : 128 + SIGKILL;
}

std::string SelfExecutable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "prism";
  std::string self(path, static_cast<size_t>(n));
  // Replaced on disk while running (a rebuild): the kernel appends
  // " (deleted)"; the path itself now holds the new binary.
  constexpr absl::string_view kDeleted = " (deleted)";
  if (absl::EndsWith(self, kDeleted))
    self.resize(self.size() - kDeleted.size());
  return self;
}

namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace

std::string FindProgram(const std::string& name) {
  const char* env = std::getenv("PATH");
  const std::string path = absl::StrCat(env != nullptr ? env : "",
                                        ":/usr/sbin:/sbin:/usr/local/sbin");
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

CommandOutput RunToCompletion(const SpawnOptions& options,
                              absl::Duration timeout) {
  CommandOutput result;
  for (const std::string& path : {options.stdout_path, options.stderr_path}) {
    if (!path.empty()) unlink(path.c_str());
  }
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(options);
  if (!child.ok()) {
    result.err = std::string(child.status().message());
    return result;
  }
  absl::StatusOr<int> status = child->Wait(timeout);
  if (status.ok()) {
    result.status = *status;
  } else {
    child->Stop(absl::ZeroDuration());
  }
  result.out = ReadWhole(options.stdout_path);
  result.err = ReadWhole(options.stderr_path);
  if (!status.ok()) {
    absl::StrAppend(&result.err, "\n", options.argv[0], " did not end within ",
                    absl::FormatDuration(timeout), "; killed");
  }
  return result;
}

}  // namespace prism::cli
