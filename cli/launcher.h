// Launcher: the one way local `prism` processes are started, watched and
// stopped, shared by `prism run`, the integration tests' LocalCluster and the
// deploy tests (Slurm, network namespaces): a coordinator started and waited
// for through its ready file, and a WorkerPool of `prism worker` processes
// built from one description each.
//
//   CoordinatorLaunch c;
//   c.binary = SelfExecutable();
//   c.args = {"--db", "prism.db", "--listen", "127.0.0.1:0"};
//   c.ready_file = "run/coordinator.ready.json";
//   c.log_path = "logs/coordinator.log";
//   absl::StatusOr<LocalCoordinator> coordinator = StartCoordinator(c);
//
//   WorkerLaunch w;
//   w.binary = SelfExecutable();
//   w.coordinator = coordinator->endpoints.grpc;
//   w.token = worker_token;              // PRISM_TOKEN, never on argv
//   w.log_path = "logs/worker-1.log";
//   WorkerPool pool;
//   absl::StatusOr<int> index = pool.Start(w);
//   ...
//   pool.Stop(absl::Seconds(60));        // SIGTERM: each hands back, then
//   exits coordinator->process.Stop(absl::Seconds(20));
//
// Every process is a Subprocess (cli/subprocess.h): its own process group,
// PR_SET_PDEATHSIG, killed by its destructor if still running. A `prefix`
// runs the command through another program that execs it, e.g.
// {"ip", "netns", "exec", "ns1"}: the pid is then the prism process's own.
// Workers are not restarted: one that exits stays exited, which Running()
// shows and the caller decides about.
//
// Thread-safety: a WorkerPool is used by one thread.
#ifndef PRISM_CLI_LAUNCHER_H_
#define PRISM_CLI_LAUNCHER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/subprocess.h"

namespace prism::cli {

// Endpoints are what a coordinator's --ready-file says it serves.
struct Endpoints {
  std::string grpc;
  std::string http;
};

// ReadReadyFile parses a coordinator's ready file. Internal naming the file
// when it does not hold a gRPC address.
absl::StatusOr<Endpoints> ReadReadyFile(const std::string& path);

// LogTail returns the last `lines` lines of a log file joined by " | ", for
// one-line error messages ("" when it cannot be read).
std::string LogTail(const std::string& path, int lines);

struct CoordinatorLaunch {
  std::vector<std::string> prefix;  // e.g. {"ip", "netns", "exec", "ns1"}
  std::string binary;               // the prism executable
  std::vector<std::string> args;    // after "coordinator"; not --ready-file
  std::vector<std::string> env;     // KEY=VALUE added to ours
  std::string log_path;             // stdout and stderr, appended
  std::string ready_file;           // removed first, then waited for
  absl::Duration timeout = absl::Seconds(60);
  // Polled while waiting: true gives up with Cancelled (e.g. on Ctrl-C).
  std::function<bool()> cancelled;
  // How long a coordinator that failed to start gets to stop after SIGTERM.
  absl::Duration stop_grace = absl::Seconds(20);
};

struct LocalCoordinator {
  Subprocess process;
  Endpoints endpoints;
};

// StartCoordinator starts `prism coordinator` and waits until its ready file
// exists. Returns the running process and its endpoints; Internal with the
// tail of its log when it exited during start-up, DeadlineExceeded naming
// the log after `timeout`, Cancelled when `cancelled` said so. On failure
// the process is stopped before returning.
absl::StatusOr<LocalCoordinator> StartCoordinator(
    const CoordinatorLaunch& launch);

// WorkerLaunch describes one `prism worker` process.
struct WorkerLaunch {
  std::vector<std::string> prefix;  // as CoordinatorLaunch's
  std::string binary;               // the prism executable
  std::string coordinator;          // HOST:PORT
  std::string token;                // given as PRISM_TOKEN, not on argv
  int threads = 1;
  std::string attention = "auto";
  std::string checkpoint_dir;
  std::vector<std::string> args;  // appended to the command line
  std::vector<std::string> env;   // KEY=VALUE added to ours
  std::string log_path;           // stdout and stderr, appended
};

// WorkerArgv returns the command line of `launch`, prefix first.
std::vector<std::string> WorkerArgv(const WorkerLaunch& launch);

class WorkerPool {
 public:
  WorkerPool() = default;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  // Workers still running are killed (Subprocess's destructor).
  ~WorkerPool() = default;

  // Start spawns one worker. Returns its index (0, 1, ...), or the spawn
  // error.
  absl::StatusOr<int> Start(const WorkerLaunch& launch);

  int size() const { return static_cast<int>(workers_.size()); }
  Subprocess& worker(int index) { return workers_[index]; }
  const std::string& log_path(int index) const { return logs_[index]; }

  // Running returns how many workers have not exited.
  int Running();

  // Stop sends SIGTERM to every running worker at once, so they checkpoint
  // and hand their trials back in parallel, waits until all exited or
  // `grace` passed, then SIGKILLs the rest. Returns each worker's exit
  // status (Subprocess::Wait's), by index.
  std::vector<int> Stop(absl::Duration grace);

 private:
  std::vector<Subprocess> workers_;
  std::vector<std::string> logs_;
};

}  // namespace prism::cli

#endif  // PRISM_CLI_LAUNCHER_H_
