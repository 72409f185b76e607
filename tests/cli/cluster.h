// LocalCluster: real `prism` processes on 127.0.0.1 in a temp dir, for the
// integration tests: a coordinator (port 0, restartable on the same port and
// database), workers, and one-shot CLI commands with captured output. The
// processes are started the way `prism run` starts its own (cli/launcher.h);
// a launch prefix and another listen address put them in other network
// namespaces (tests/deploy/netns_test.cc).
//
// Also the training recipe the fault matrix and the deploy tests share
// (Recipe, RecipeSpec) and its uninterrupted reference curve (Reference).
#ifndef PRISM_TESTS_CLI_CLUSTER_H_
#define PRISM_TESTS_CLI_CLUSTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/client.h"
#include "cli/launcher.h"
#include "cli/subprocess.h"
#include "prism/v1/prism.pb.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_certs.h"

namespace prism::testing {

// PrismBinary is the built `prism` executable, or the one PRISM_TEST_BINARY
// names (to run the same scenario against another build, e.g. an older one).
std::string PrismBinary();

// DataDirEnv is PRISM_DATA_DIR=<the build tree's shared demo corpus>, as
// every worker (and `prism train` run by a test) gets it.
std::string DataDirEnv();

// WriteFile writes `content` to `path`, creating or truncating it.
void WriteFile(const std::string& path, const std::string& content);
std::string ReadFile(const std::string& path);

using CommandResult = cli::CommandOutput;

// RunPrism runs the built `prism` with `args` (no shell) and `env` (KEY=VALUE
// added to ours), capturing stdout and stderr in files named `files`.out and
// `files`.err; waits up to two minutes. status is -1 when it did not end.
CommandResult RunPrism(const std::vector<std::string>& args,
                       const std::vector<std::string>& env,
                       const std::string& files);

struct CoordinatorFlags {
  int lease_seconds = 30;
  int heartbeat_seconds = 5;
  int max_attempts = 3;
  std::string db_path;  // "": prism.db in the cluster's temp dir
  // The host its gRPC and HTTP servers listen on (port 0 on the first
  // start); `prefix` runs it through e.g. `ip netns exec NS`.
  std::string listen_host = "127.0.0.1";
  std::vector<std::string> prefix;
  std::vector<std::string> args;  // added to the command line
  // TLS: certificates made in the cluster's dir (tests/testing/test_certs.h),
  // the coordinator started with --tls-cert/--tls-key, and the CA given to
  // workers, Run and client(). mutual_tls adds --tls-client-ca, and workers,
  // Run and client() present the client certificate.
  bool tls = false;
  bool mutual_tls = false;
  std::vector<std::string> tls_names;  // beside 127.0.0.1 and localhost
};

// WorkerFlags are a worker's own settings beside the cluster's defaults.
struct WorkerFlags {
  std::vector<std::string> args;    // added to the command line
  std::vector<std::string> env;     // KEY=VALUE, e.g. PRISM_FAILPOINTS=...
  std::string checkpoint_dir;       // "": the cluster's shared one
  std::vector<std::string> prefix;  // e.g. {"ip", "netns", "exec", "ns1"}
  std::string coordinator;          // "": the cluster's; else e.g. a relay
  // Under mutual TLS, whether it presents the client certificate.
  bool client_cert = true;
};

class LocalCluster {
 public:
  explicit LocalCluster(CoordinatorFlags flags = {});
  ~LocalCluster();

  const std::string& dir() const { return temp_.path(); }
  std::string checkpoint_dir() const { return temp_.File("checkpoints"); }
  const std::string& grpc_address() const { return grpc_address_; }
  const std::string& admin_token() const { return admin_token_; }
  const std::string& http_address() const { return http_address_; }
  // certs are the TLS files (ok is false without CoordinatorFlags::tls).
  const TestCerts& certs() const { return certs_; }
  // TlsEnv is PRISM_TLS_CA (and, under mutual TLS with `client_cert`,
  // PRISM_TLS_CERT and PRISM_TLS_KEY) for a client; empty without TLS.
  std::vector<std::string> TlsEnv(bool client_cert = true) const;

  const std::string& db_path() const { return db_path_; }

  // AddCoordinatorArgs adds flags to every later coordinator start (e.g.
  // ones naming files in dir()).
  void AddCoordinatorArgs(const std::vector<std::string>& args) {
    flags_.args.insert(flags_.args.end(), args.begin(), args.end());
  }

  // StartCoordinator starts (or restarts, on the same port and database)
  // the coordinator with `env` added to its environment (e.g. failpoints)
  // and waits until it is ready.
  absl::Status StartCoordinator(const std::vector<std::string>& env = {});
  cli::Subprocess& coordinator() { return coordinator_->process; }
  // KillCoordinator SIGKILLs it and reaps it.
  void KillCoordinator();

  // StartWorker starts `prism worker` with one thread; returns its index.
  absl::StatusOr<int> StartWorker(const std::vector<std::string>& extra = {});
  absl::StatusOr<int> StartWorker(const WorkerFlags& flags);
  cli::Subprocess& worker(int index) { return workers_.worker(index); }

  // Run runs `prism args...` to completion with the admin token in the
  // environment and the coordinator address unless `with_defaults` is false.
  CommandResult Run(const std::vector<std::string>& args,
                    bool with_defaults = true) const;

  // CheckDb runs the build's `prism db check` on the cluster's database.
  CommandResult CheckDb() const;

  // Client returns an admin RPC client.
  cli::RpcClient& client();

  // SubmitSpec submits a textproto spec via `prism submit`; returns the id.
  absl::StatusOr<int64_t> SubmitSpec(const std::string& spec_text);

  // WaitForExperiment polls until the experiment is done or cancelled.
  absl::StatusOr<v1::Experiment> WaitForExperiment(int64_t id,
                                                   absl::Duration timeout);
  absl::StatusOr<std::vector<v1::Trial>> ListTrials(int64_t experiment_id);
  absl::StatusOr<v1::GetTrialResponse> GetTrial(int64_t trial_id);

  // Logs returns the tail of every process log, for failure messages.
  std::string Logs() const;

 private:
  CoordinatorFlags flags_;
  TempDir temp_{"prism_it"};  // removed after the processes below stopped
  TestCerts certs_;
  std::string db_path_;
  std::string grpc_address_;  // fixed after the first start
  std::string http_address_;
  std::string admin_token_;
  std::optional<cli::LocalCoordinator> coordinator_;
  cli::WorkerPool workers_;
  std::unique_ptr<cli::RpcClient> client_;
  int coordinator_starts_ = 0;
};

// Recipe: the tiny preset, short enough to run a dozen cases in a few
// minutes, with checkpoints every 20 steps; seed 1, batch 4, one eval batch.
struct Recipe {
  int64_t steps = 60;
  int64_t log_every = 5;
  int64_t eval_every = 10;
  int64_t checkpoint_every = 20;
};

// RecipeSpec returns the spec textproto training `schedules` with `r`
// (max_attempts 0: the coordinator's default).
std::string RecipeSpec(const std::string& name,
                       const std::vector<std::string>& schedules,
                       const Recipe& r = {}, int max_attempts = 0);

// Reference trains `schedule` with `r` without interruption through
// `prism train` (one thread, the fused kernel, as the cluster's workers)
// and returns its val curve, step -> loss; a failed run is a test failure.
std::map<int64_t, float> Reference(const LocalCluster& cluster,
                                   const std::string& schedule,
                                   const Recipe& r = {});

// Lines counts the newline-terminated lines of `text` (a one-line error is 1).
int Lines(const std::string& text);

// StepsOf returns the steps of a trial's points of one split, in the order
// the coordinator returned them.
std::vector<int64_t> StepsOf(const v1::GetTrialResponse& trial,
                             v1::Split split);

// Range returns from, from+every, ..., up to `to`.
std::vector<int64_t> Range(int64_t from, int64_t to, int64_t every = 1);

// WaitForStep polls until some trial of experiment `id` is running at or
// beyond `step`; returns that trial, or DeadlineExceeded with the logs.
absl::StatusOr<v1::Trial> WaitForStep(LocalCluster& cluster, int64_t id,
                                      int64_t step, absl::Duration timeout);

// WaitForAttempt polls until the trial runs attempt `attempt` at or beyond
// `step` (or completed it); DeadlineExceeded with the logs otherwise.
absl::Status WaitForAttempt(LocalCluster& cluster, int64_t trial_id,
                            int attempt, int64_t step, absl::Duration timeout);

// WaitForLog polls the file at `path` until it holds `needle` (what a
// process logs once it reached a state); whether it did within `timeout`.
bool WaitForLog(const std::string& path, const std::string& needle,
                absl::Duration timeout = absl::Minutes(1));

}  // namespace prism::testing

#endif  // PRISM_TESTS_CLI_CLUSTER_H_
