// `prism worker`: lease trials from a coordinator and train them until told
// to stop. The logic lives in worker/; this file wires flags, signals and the
// real gRPC client and trainer into it.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/data_roots.h"
#include "base/log.h"
#include "cli/client.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/signals.h"
#include "model/device.h"
#include "model/trainer.h"
#include "worker/coordinator_client.h"
#include "worker/replay_launcher.h"
#include "worker/trainer_launcher.h"
#include "worker/worker.h"

namespace prism::cli {
namespace {

struct WorkerCommandOptions {
  ClientOptions client;
  std::string device = "auto";
  int threads = 0;
  std::string attention = "auto";
  std::string checkpoint_dir = "./prism-data/checkpoints";
  bool keep_checkpoints = false;
  int max_trials = 0;
  double idle_exit_seconds = 0;
  std::string worker_id;
  // Fixtures: serve recorded curves instead of training (one per size).
  std::vector<std::string> replay;
  double replay_speed = 0;  // steps per second of wall time; 0: at once
  std::vector<std::string> data_roots;  // empty: the demo corpus root
};

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// CheckReplayFlags refuses a --replay-speed that is negative or not
// finite, or given without --replay (InvalidArgument naming the flag).
absl::Status CheckReplayFlags(const WorkerCommandOptions& o) {
  if (!(std::isfinite(o.replay_speed) && o.replay_speed >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replay-speed must be 0 or positive "
                     "steps per second (got ",
                     o.replay_speed, ")"));
  }
  if (o.replay_speed > 0 && o.replay.empty()) {
    return absl::InvalidArgumentError("--replay-speed needs --replay FIXTURE");
  }
  return absl::OkStatus();
}

// NewLauncher is the trainer the worker runs: the model's, or with --replay
// one serving the fixtures' recorded curves (a fixture's load error).
absl::StatusOr<std::unique_ptr<worker::TrainerLauncher>> NewLauncher(
    const WorkerCommandOptions& o) {
  if (o.replay.empty()) return worker::NewModelTrainerLauncher();
  std::vector<worker::ReplayFixture> fixtures;
  for (const std::string& path : o.replay) {
    absl::StatusOr<worker::ReplayFixture> fixture =
        worker::LoadReplayFixture(path);
    if (!fixture.ok()) return fixture.status();
    fixtures.push_back(*std::move(fixture));
  }
  return worker::NewReplayTrainerLauncher(std::move(fixtures), o.replay_speed);
}

// RunUntilSignalled runs the worker while a thread watches for signals: the
// first shuts it down cleanly, another exits at once. Returns Run's status.
absl::Status RunUntilSignalled(worker::Worker& worker, StopSignals& signals) {
  std::atomic<bool> done{false};
  std::thread signal_thread([&] {
    int received = 0;
    while (!done.load()) {
      const int signal_number = signals.Wait(absl::Milliseconds(200));
      if (signal_number == 0) continue;
      if (++received == 1) {
        // First signal: finish cleanly (checkpoint, flush, hand back).
        Log(LogLevel::kInfo, "shutdown_requested")
            .Kv("signal", strsignal(signal_number));
        worker.Shutdown();
      } else {
        // Another signal: the user insists.
        _exit(128 + signal_number);
      }
    }
  });
  const absl::Status status = worker.Run();
  done.store(true);
  signal_thread.join();
  return status;
}

int RunWorker(const WorkerCommandOptions& o) {
  // Every line says it came from a worker, so fleet logs mixed with the
  // coordinator's stay greppable.
  SetLogComponent("worker");
  RouteGrpcLogs(LogLevel::kWarning);
  absl::StatusOr<std::string> token = ResolveToken(o.client);
  if (!token.ok()) return ReportError("worker", token.status());
  absl::StatusOr<TlsPem> tls = ResolveTls(o.client);
  if (!tls.ok()) return ReportError("worker", tls.status());
  absl::StatusOr<std::string> device = model::ResolveDevice(o.device);
  if (!device.ok()) return ReportError("worker", device.status());
  absl::StatusOr<model::AttentionMode> attention =
      model::ParseAttentionMode(o.attention);
  if (!attention.ok()) return ReportError("worker", attention.status());
  absl::StatusOr<std::vector<std::string>> data_roots = ResolveDataRoots(
      o.data_roots.empty() ? std::vector<std::string>{DefaultDataRoot()}
                           : o.data_roots);
  if (!data_roots.ok()) return ReportError("worker", data_roots.status());
  if (absl::Status s = CheckReplayFlags(o); !s.ok()) {
    return ReportError("worker", s);
  }
  absl::StatusOr<std::unique_ptr<worker::TrainerLauncher>> launcher =
      NewLauncher(o);
  if (!launcher.ok()) return ReportError("worker", launcher.status());

  worker::WorkerOptions options;
  options.host = HostName();
  options.resources.device = *device;
  options.resources.threads =
      o.threads > 0
          ? o.threads
          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  options.resources.checkpoint_root = o.checkpoint_dir;
  options.resources.attention = *attention;
  options.resources.data_roots = *data_roots;
  options.keep_checkpoints = o.keep_checkpoints;
  options.max_trials = o.max_trials;
  options.idle_exit = absl::Seconds(o.idle_exit_seconds);
  options.worker_id = o.worker_id;
  if (!o.replay.empty()) {
    // A replayed trial emits its whole curve at once: report it at once
    // rather than once a second, so a search runs at the coordinator's pace.
    options.report_interval = absl::Milliseconds(5);
  }

  StopSignals signals;
  const std::string address = ResolveCoordinator(o.client);
  std::unique_ptr<worker::CoordinatorClient> client =
      worker::NewGrpcCoordinatorClient(address, *token, *tls);
  worker::Worker worker(options, client.get(), launcher->get());
  Log(LogLevel::kInfo, "start")
      .Kv("coordinator", address)
      .Kv("tls", tls->empty() ? "off" : "on")
      .Kv("device", options.resources.device)
      .Kv("threads", options.resources.threads)
      .Kv("attention", model::AttentionModeName(options.resources.attention))
      .Kv("checkpoint_dir", options.resources.checkpoint_root)
      .Kv("data_roots", absl::StrJoin(options.resources.data_roots, ","))
      .Kv("replay", o.replay.empty() ? "off" : absl::StrJoin(o.replay, ","))
      .Kv("pid", static_cast<int64_t>(getpid()));

  const absl::Status status = RunUntilSignalled(worker, signals);
  const worker::WorkerStats stats = worker.stats();
  Log(status.ok() ? LogLevel::kInfo : LogLevel::kError, "exit")
      .Kv("trials_completed", stats.trials_completed)
      .Kv("trials_failed", stats.trials_failed)
      .Kv("trials_superseded", stats.trials_superseded)
      .Kv("trials_interrupted", stats.trials_interrupted)
      .Kv("points_acknowledged", stats.points_acknowledged)
      .Kv("report_retries", stats.report_retries);
  if (!status.ok()) return ReportError("worker", status);
  return kExitOk;
}

}  // namespace

void RegisterWorkerCommands(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand(
      "worker",
      "Lease trials from a coordinator, train them and stream their curves");
  auto o = std::make_shared<WorkerCommandOptions>();
  AddClientOptions(cmd, &o->client);
  cmd->add_option("--device", o->device, "auto, cpu, cuda or cuda:N")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "CPU threads for training (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--attention", o->attention,
                  "Attention kernel: auto (on the CPU, time the candidates at "
                  "each trial's start and use the fastest), fused, masked or "
                  "sdpa; the choice is in each trial's metrics. A resumed "
                  "trial keeps its checkpoint's kernel. Pin one (fused) "
                  "where curves must match bit for bit across runs")
      ->envname("PRISM_ATTENTION")
      ->capture_default_str();
  cmd->add_option("--checkpoint-dir", o->checkpoint_dir,
                  "Checkpoint root; a trial uses <dir>/<checkpoint key>. Put "
                  "it on shared storage to resume across machines")
      ->capture_default_str();
  cmd->add_flag("--keep-checkpoints", o->keep_checkpoints,
                "Keep a trial's checkpoints after it completed");
  cmd->add_option("--max-trials", o->max_trials,
                  "Exit after this many trials (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--idle-exit-seconds", o->idle_exit_seconds,
                  "Exit after the queue was empty this long (0: never)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--worker-id", o->worker_id,
                  "Register under this id (default: the coordinator picks "
                  "one). The Slurm script passes slurm-$SLURM_JOB_ID, which "
                  "`prism coordinator --scale slurm` looks for");
  cmd->add_option(
      "--data-root", o->data_roots,
      "Directory a task's data paths must lie in, checked again "
      "here before anything is opened (repeatable; default: the "
      "demo corpus, $PRISM_DATA_DIR/corpus or ./prism-data/corpus)");
  cmd->add_option("--replay", o->replay,
                  "Serve the recorded curves of this replay fixture instead "
                  "of training (bench/replay/, README \"Replay benchmark\"): "
                  "the coordinator and its strategies see what training "
                  "gave when it was recorded, in milliseconds per trial. A "
                  "trial the fixture lacks fails. Repeatable (e.g. one "
                  "fixture per size of a ladder): the first recorded with a "
                  "task's recipe serves it");
  cmd->add_option("--replay-speed", o->replay_speed,
                  "With --replay: take wall time in proportion to the "
                  "recorded steps, this many steps per second (0: at once), "
                  "to test the queue's behaviour over time");
  cmd->footer(
      "A spec without shard paths trains on the demo corpus, prepared under "
      "env PRISM_DATA_DIR (default ./prism-data). SIGINT/SIGTERM: checkpoint "
      "at the "
      "next step, flush, hand the trial back and exit 0 (a second signal: "
      "exit now).");
  cmd->callback([o, action] { *action = [o] { return RunWorker(*o); }; });
}

}  // namespace prism::cli
