// Subprocess: a child process that is never left behind. `prism run` uses it
// for its coordinator and workers, the integration tests for every process
// they start.
//
// A child gets its own process group (a terminal's Ctrl-C reaches only the
// parent, which then stops its children in order), an empty signal mask, and
// PR_SET_PDEATHSIG(SIGTERM), so it is told to stop even when the parent dies
// by SIGKILL. The destructor kills and reaps a child that is still running.
//
//   SpawnOptions o;
//   o.argv = {"/proc/self/exe", "worker", "--coordinator", addr};
//   o.stderr_path = "worker-1.log";
//   absl::StatusOr<Subprocess> w = Subprocess::Spawn(o);
//   ...
//   int status = w->Stop(absl::Seconds(30));   // SIGTERM, then SIGKILL
//
// Thread-safety: a Subprocess is used by one thread. Spawn must be called from
// a thread that outlives the child (PR_SET_PDEATHSIG follows the thread).
#ifndef PRISM_CLI_SUBPROCESS_H_
#define PRISM_CLI_SUBPROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace prism::cli {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is the program's path
  std::vector<std::string> env;   // KEY=VALUE added to (or replacing in) ours
  std::string stdout_path;        // "" inherits ours; files are appended to
  std::string stderr_path;
};

class Subprocess {
 public:
  // Spawn starts the child. Returns the running child, or Internal naming the
  // system call that failed; a program that cannot be executed exits 127.
  static absl::StatusOr<Subprocess> Spawn(const SpawnOptions& options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }

  // Running is true until the child has exited (it is reaped then).
  bool Running();

  // Signal sends `signal` to the child; OK when it already exited.
  absl::Status Signal(int signal);

  // Wait waits up to `timeout` for the child to exit. Returns its exit status,
  // 128 + signal when a signal ended it, or DeadlineExceeded.
  absl::StatusOr<int> Wait(absl::Duration timeout);

  // Stop sends SIGTERM (unless Signal already sent one: prism processes take
  // a second signal as "exit now"), waits up to `grace`, then SIGKILLs.
  // Returns the exit status as Wait does.
  int Stop(absl::Duration grace);

 private:
  explicit Subprocess(pid_t pid) : pid_(pid) {}
  void Reap(int wait_status);

  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_status_ = 0;
  bool terminated_ = false;  // SIGTERM was sent
};

// SelfExecutable returns the path of the running binary (/proc/self/exe).
std::string SelfExecutable();

// FindProgram returns the absolute path of `name` on PATH or in the sbin
// directories (which a non-root PATH may lack), or "" when there is none.
std::string FindProgram(const std::string& name);

// CommandOutput is what a command run to completion left behind.
struct CommandOutput {
  int status = -1;  // exit status as Subprocess::Wait gives it; -1: see err
  std::string out;
  std::string err;
};

// RunToCompletion runs `options` (whose stdout_path and stderr_path must be
// set: they are emptied first, then read back) and waits up to `timeout`.
// status is -1 when it could not start (err says why) or did not end in time
// (it is killed, and err says so after what it wrote).
CommandOutput RunToCompletion(const SpawnOptions& options,
                              absl::Duration timeout);

}  // namespace prism::cli

#endif  // PRISM_CLI_SUBPROCESS_H_
