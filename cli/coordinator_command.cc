// `prism coordinator`: runs the coordinator (gRPC + HTTP) on one SQLite file
// until SIGINT or SIGTERM.
//
// Once both servers listen it prints exactly one line on stdout,
//   prism coordinator: ready grpc=HOST:PORT http=HOST:PORT
// and, with --ready-file F, first writes
// {"grpc":"HOST:PORT","http":"HOST:PORT"} to F (temp file + rename, so readers
// never see half of it). A generated first admin token without
// --admin-token-file is printed once, before that line.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "cli/client.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/slurm_jobs.h"
#include "cli/systemd_notify.h"
#include "server/coordinator.h"
#include "storage/write_observer.h"

namespace prism::cli {
namespace {

namespace fs = std::filesystem;

struct CoordinatorFlags {
  server::CoordinatorOptions options;
  std::string ready_file;
  std::string log_level = "info";
  // Queue-driven worker jobs (--scale slurm).
  std::string scale = "none";
  SlurmJobsOptions slurm;
  int scale_interval_seconds = 10;
  int scale_idle_seconds = 60;
  // Durations as typed ("30d"), parsed by ApplyAuthFlags.
  std::string token_max_lifetime = "0";
  std::string auth_failure_window = "60s";
  std::string fair_share_half_life = "1d";
};

// ApplyAuthFlags parses the auth durations into options.auth.
// InvalidArgument naming the flag.
absl::Status ApplyAuthFlags(CoordinatorFlags& flags) {
  server::AuthOptions& auth = flags.options.auth;
  absl::StatusOr<int64_t> lifetime =
      ParseDurationSeconds(flags.token_max_lifetime);
  if (!lifetime.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--token-max-lifetime: ", lifetime.status().message()));
  }
  auth.max_lifetime_seconds = *lifetime;
  absl::StatusOr<int64_t> window =
      ParseDurationSeconds(flags.auth_failure_window);
  if (!window.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-failure-window: ", window.status().message()));
  }
  auth.throttle.window_ms = *window * 1000;
  absl::StatusOr<int64_t> half_life =
      ParseDurationSeconds(flags.fair_share_half_life);
  if (!half_life.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--fair-share-half-life: ", half_life.status().message()));
  }
  flags.options.fair_share_half_life_ms = *half_life * 1000;
  return absl::OkStatus();
}

// AddJobBackend sets options.job_backend for --scale. InvalidArgument
// naming the flag or what the default batch script needs.
absl::Status AddJobBackend(CoordinatorFlags& flags) {
  if (flags.scale == "none") return absl::OkStatus();
  if (flags.scale != "slurm") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--scale must be none or slurm (got '", flags.scale, "')"));
  }
  server::ScalerOptions& s = flags.options.scaler;
  s.interval = absl::Seconds(flags.scale_interval_seconds);
  s.idle_grace = absl::Seconds(flags.scale_idle_seconds);
  if (flags.slurm.template_path.empty()) {
    flags.slurm.template_path = DefaultSlurmTemplate();
    // The default script refuses to start without these; say so now rather
    // than through a stream of failed jobs.
    const bool token = std::getenv("PRISM_TOKEN_FILE") != nullptr ||
                       std::getenv("PRISM_TOKEN") != nullptr;
    if (!token || std::getenv("PRISM_CHECKPOINTS") == nullptr) {
      return absl::InvalidArgumentError(
          "--scale slurm with the default batch script needs "
          "PRISM_TOKEN_FILE (a worker token) and PRISM_CHECKPOINTS (shared "
          "storage) in the coordinator's environment, which its jobs get");
    }
  }
  absl::StatusOr<std::unique_ptr<server::JobBackend>> backend =
      NewSlurmJobs(flags.slurm);
  if (!backend.ok()) return backend.status();
  flags.options.job_backend = std::move(*backend);
  return absl::OkStatus();
}

// DefaultWebRoot finds the dashboard: `web/` next to the binary's folder
// (the build tree, where prism_web copies it), else the source tree's.
std::string DefaultWebRoot() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "web");
#ifdef PRISM_WEB_SOURCE_DIR
  candidates.push_back(fs::path(PRISM_WEB_SOURCE_DIR) / "dist");
  candidates.push_back(fs::path(PRISM_WEB_SOURCE_DIR));
#endif
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "index.html", ec)) return dir.string();
  }
  return "";
}

// The stop signals are turned into a byte on a pipe by an async-signal-safe
// handler, so it does not matter which thread the kernel picks to receive
// them (libraries such as OpenBLAS start threads before main runs, so a
// blocked-mask + sigwait scheme could lose the signal to one of those).
int g_stop_pipe[2] = {-1, -1};

extern "C" void OnStopSignal(int signal_number) {
  const char byte = static_cast<char>(signal_number);
  const ssize_t ignored = write(g_stop_pipe[1], &byte, 1);
  (void)ignored;
}

absl::Status InstallStopHandlers() {
  if (pipe2(g_stop_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError("cannot create the signal pipe");
  }
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return absl::OkStatus();
}

// WaitForStopSignal blocks until SIGINT or SIGTERM and returns which.
int WaitForStopSignal() {
  char byte = 0;
  while (read(g_stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
  return byte;
}

// ReadinessText is what /readyz answers, as one line for systemd's STATUS=.
std::string ReadinessText(const absl::Status& ready) {
  return ready.ok() ? "ready" : absl::StrCat("not ready: ", ready.message());
}

// Notify logs (and does not fail on) a notification the service manager
// could not be sent.
void Notify(const absl::Status& sent) {
  if (!sent.ok()) {
    Log(LogLevel::kWarning, "cannot notify the service manager")
        .Kv("error", sent.message());
  }
}

// WaitForStopSignalFor waits up to `timeout` for SIGINT or SIGTERM and
// returns which, or 0 when none came.
int WaitForStopSignalFor(absl::Duration timeout) {
  struct pollfd fd = {g_stop_pipe[0], POLLIN, 0};
  if (poll(&fd, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) <= 0) {
    return 0;
  }
  return WaitForStopSignal();
}

absl::Status WriteReadyFile(const std::string& path, const std::string& grpc,
                            const std::string& http) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"grpc\":\"" << grpc << "\",\"http\":\"" << http << "\"}\n";
    out.flush();
    if (!out) {
      return absl::UnavailableError(
          absl::StrCat("cannot write ready file ", tmp));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ready file ", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

// ApplyFlags sets the log level and completes the options from the flags
// and the environment (admin token, web root, job backend, auth
// durations). InvalidArgument naming the flag.
absl::Status ApplyFlags(CoordinatorFlags& flags) {
  LogLevel level;
  if (!ParseLogLevel(flags.log_level, &level)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --log-level '", flags.log_level,
                     "' (use debug, info, warning or error)"));
  }
  SetLogLevel(level);
  RouteGrpcLogs(LogLevel::kWarning);
  server::CoordinatorOptions& o = flags.options;
  if (const char* env = std::getenv("PRISM_ADMIN_TOKEN"); env != nullptr) {
    o.admin_token_env = env;
  }
  if (o.web_root.empty()) o.web_root = DefaultWebRoot();
  PRISM_RETURN_IF_ERROR(AddJobBackend(flags));
  return ApplyAuthFlags(flags);
}

// OpenWaitingForDisk creates the coordinator, waiting (and serving the
// probes) while the disk is full or failing; null when a stop signal came
// first, any other failure returned.
absl::StatusOr<std::unique_ptr<server::Coordinator>> OpenWaitingForDisk(
    server::CoordinatorOptions& o, SystemdNotifier& notify) {
  // A database on a full (or failing) disk cannot even open: SQLite needs
  // room for its shared-memory index. Wait for the disk, saying so once,
  // rather than exit and be restarted in a loop, and meanwhile answer the
  // HTTP probes on the coordinator's own address (/readyz 503 with the
  // cause), so a readiness probe learns why instead of "connection
  // refused". Any other failure (a bad path, a file that is not a
  // database) is one clear line and exit 1.
  absl::StatusOr<std::unique_ptr<server::Coordinator>> coordinator =
      server::Coordinator::Create(o);
  std::unique_ptr<server::OpeningProbes> probes;
  while (!coordinator.ok()) {
    const std::optional<storage::StorageFault> fault =
        storage::StorageFaultOf(coordinator.status());
    if (fault != storage::StorageFault::kDiskFull &&
        fault != storage::StorageFault::kIoError) {
      return coordinator.status();
    }
    if (probes == nullptr) {
      absl::StatusOr<std::unique_ptr<server::OpeningProbes>> started =
          server::OpeningProbes::Start(o);
      if (!started.ok()) return started.status();
      probes = *std::move(started);
      // The coordinator takes over this very port once the database opens.
      o.http_address = probes->http_address();
      probes->OpenFailed(*fault, coordinator.status());
      Log(LogLevel::kError, "cannot open the database; retrying every second")
          .Kv("fault", storage::StorageFaultName(*fault))
          .Kv("cause", coordinator.status().message())
          .Kv("db", o.db_path)
          .Kv("http", probes->http_address())
          .Kv("action",
              "serving only /healthz, /readyz (503) and /metrics until it "
              "opens, gRPC not listening; free space on the database's "
              "filesystem or check the disk");
    } else {
      probes->OpenFailed(*fault, coordinator.status());
    }
    Notify(notify.Status(ReadinessText(probes->Ready())));
    if (const int signal_number = WaitForStopSignalFor(absl::Seconds(1));
        signal_number != 0) {
      Log(LogLevel::kInfo, "stopping before the database opened")
          .Kv("signal", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
      return nullptr;
    }
    coordinator = server::Coordinator::Create(o);
    if (coordinator.ok()) {
      probes->Stop();
      Log(LogLevel::kInfo, "database opened after waiting for the disk");
    }
  }
  return coordinator;
}

// AnnounceReady writes the ready file (shutting the coordinator down when
// it cannot), then prints a generated admin token and the ready line.
absl::Status AnnounceReady(server::Coordinator& coordinator,
                           const std::string& ready_file) {
  const std::string grpc = coordinator.grpc_address();
  const std::string http = coordinator.http_address();
  // The ready file exists before the readiness line is printed, so a reader
  // of either may rely on both.
  if (!ready_file.empty()) {
    if (absl::Status s = WriteReadyFile(ready_file, grpc, http); !s.ok()) {
      coordinator.Shutdown();
      return s;
    }
  }
  if (coordinator.admin_token().has_value()) {
    std::cout << "prism coordinator: admin token (shown once): "
              << *coordinator.admin_token() << "\n";
  }
  std::cout << "prism coordinator: ready grpc=" << grpc << " http=" << http
            << std::endl;
  return absl::OkStatus();
}

// ServeUntilStopped tells systemd the coordinator is ready and waits for a
// stop signal, returning its number.
int ServeUntilStopped(SystemdNotifier& notify,
                      const server::StorageHealth& health) {
  Notify(notify.Status(ReadinessText(health.Ready())));
  Notify(notify.Send("READY=1"));

  // Without systemd this is a plain wait; with it, STATUS= follows the
  // storage readiness (checked every 2 s) until a stop signal.
  int signal_number = 0;
  while (signal_number == 0) {
    if (!notify.enabled()) {
      signal_number = WaitForStopSignal();
      break;
    }
    signal_number = WaitForStopSignalFor(absl::Seconds(2));
    Notify(notify.Status(ReadinessText(health.Ready())));
  }
  return signal_number;
}

int RunCoordinator(CoordinatorFlags flags) {
  if (absl::Status s = ApplyFlags(flags); !s.ok()) {
    return ReportError("coordinator", s);
  }

  // Installed before anything starts, so a signal during start-up is kept
  // and ends the run right after it.
  if (absl::Status s = InstallStopHandlers(); !s.ok()) {
    return ReportError("coordinator", s);
  }

  // Under systemd (Type=notify) STATUS= follows the readiness and READY=1
  // comes once gRPC and HTTP serve (deploy/systemd/prism-coordinator.service).
  SystemdNotifier notify = SystemdNotifier::FromEnvironment();
  absl::StatusOr<std::unique_ptr<server::Coordinator>> coordinator =
      OpenWaitingForDisk(flags.options, notify);
  if (!coordinator.ok())
    return ReportError("coordinator", coordinator.status());
  if (*coordinator == nullptr) return kExitOk;
  if (absl::Status started = (*coordinator)->Start(); !started.ok()) {
    return ReportError("coordinator", started);
  }
  if (absl::Status s = AnnounceReady(**coordinator, flags.ready_file);
      !s.ok()) {
    return ReportError("coordinator", s);
  }
  const int signal_number =
      ServeUntilStopped(notify, (*coordinator)->storage_health());
  Log(LogLevel::kInfo, "stopping")
      .Kv("signal", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  Notify(notify.Send("STOPPING=1"));
  (*coordinator)->Shutdown();
  coordinator->reset();
  return kExitOk;
}

// AddServingFlags adds the database, the addresses, the lease and the
// fair share flags.
void AddServingFlags(CLI::App* cmd, CoordinatorFlags* flags) {
  server::CoordinatorOptions& o = flags->options;
  cmd->add_option("--db", o.db_path, "SQLite database file (created if new)")
      ->required();
  cmd->add_option("--listen", o.grpc_address,
                  "gRPC address HOST:PORT (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--http", o.http_address,
                  "HTTP address HOST:PORT for the dashboard, /api/v1 and "
                  "/metrics (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--lease-seconds", o.lease_seconds,
                  "Lease length; a trial without heartbeat for this long is "
                  "requeued")
      ->capture_default_str();
  cmd->add_option("--heartbeat-seconds", o.heartbeat_seconds,
                  "Heartbeat interval workers are told to use")
      ->capture_default_str();
  cmd->add_option("--max-attempts", o.max_attempts,
                  "Leases a trial gets before it is failed (a spec's "
                  "max_attempts overrides)")
      ->capture_default_str();
  cmd->add_option("--max-running-per-user", o.max_running_per_user,
                  "Most leased+running trials per user (0: no limit; "
                  "`prism user set` sets lower quotas per user)")
      ->capture_default_str();
  cmd->add_option("--fair-share-half-life", flags->fair_share_half_life,
                  "Fair share: a user's past worker time counts half after "
                  "this long, e.g. 12h, 7d (positive)")
      ->capture_default_str();
}

// AddLimitFlags adds the Limits group: one flag per bound on client input
// (server/core/experiments/limits.h; README, "Limits"). Past a limit a request
// is refused naming the flag.
void AddLimitFlags(CLI::App* cmd, server::Limits* bounds) {
  server::Limits& l = *bounds;
  const std::string limits = "Limits";
  auto limit = [cmd, &limits](const std::string& name, auto& value,
                              const std::string& help) {
    cmd->add_option(name, value, help)->capture_default_str()->group(limits);
  };
  limit("--max-message-bytes", l.max_message_bytes,
        "Largest gRPC message sent (requests: at most the largest spec or "
        "report, see --max-spec-bytes and --max-points-per-report)");
  limit("--max-trials-per-experiment", l.max_trials_per_experiment,
        "Trials one experiment may plan, for every strategy (grid, random "
        "samples, explicit schedule lists) x seeds");
  limit("--max-seeds", l.max_seeds,
        "Seeds per spec and per ladder rung (also bounds its data paths)");
  limit("--max-loss-targets", l.max_loss_targets,
        "Convergence milestones (budget.loss_targets) per spec and per ladder "
        "rung");
  limit("--max-ladder-rungs", l.max_ladder_rungs, "Sizes of a scale ladder");
  limit("--max-listed-schedules", l.max_listed_schedules,
        "Schedules an explicit list (the spec's `schedules`) may name");
  limit("--max-stored-spec-bytes", l.max_stored_spec_bytes,
        "A spec as stored once resolved (what Get returns)");
  limit("--max-points-per-report", l.max_points_per_report,
        "Loss points in one Report or Complete");
  limit("--max-string-bytes", l.max_string_bytes,
        "Any one string a client sends: names, schedules, paths, hosts, "
        "devices");
  limit("--max-spec-bytes", l.max_spec_bytes, "A submitted spec's textproto");
  limit("--max-page-bytes", l.max_page_bytes,
        "One page of schedules or trials, in bytes (a page holds fewer "
        "items than asked when they would exceed it)");
  limit("--max-watch-streams", l.max_watch_streams,
        "Open Watch streams (gRPC), in total");
  limit("--max-watch-streams-per-user", l.max_watch_streams_per_user,
        "Open Watch streams (gRPC) per user");
  limit("--max-event-streams", l.max_event_streams,
        "Open dashboard event streams (SSE), in total; each holds an HTTP "
        "thread");
  limit("--max-event-streams-per-user", l.max_event_streams_per_user,
        "Open dashboard event streams (SSE) per user");
  limit("--max-stream-buffer-bytes", l.max_stream_buffer_bytes,
        "Unsent events one stream may hold; a watcher further behind is "
        "cut off");
  limit("--watch-interval-ms", l.watch_interval_ms,
        "Live streams (Watch, dashboard events) get one round of updates per "
        "interval: a trial's updates within it arrive merged as one event");
  limit("--max-concurrent-reads", l.max_concurrent_reads,
        "Expensive reads (schedule and trial pages, Rank, GetTrial, "
        "Compare, Suggest, the dashboard's API) run at once; more wait in "
        "line. 0: half the cores, at least 1");
  limit("--max-waiting-reads", l.max_waiting_reads,
        "Expensive reads waiting in line; more are refused "
        "(RESOURCE_EXHAUSTED, HTTP 429)");
  limit("--read-nice", l.read_nice,
        "Expensive reads run on threads of their own, this many nice steps "
        "(0-19) below the rest of the coordinator: when the cores are busy, "
        "storing reported points, leases and heartbeats go first. 0: equal");
  limit("--grpc-max-streams-per-connection", l.grpc_max_streams_per_connection,
        "gRPC calls one connection may run at once");
  limit("--grpc-max-buffered-bytes", l.grpc_max_buffered_bytes,
        "Received gRPC data held at once, all connections (gRPC's memory "
        "quota: past it calls are cancelled); at least the largest request");
  limit("--http-max-connections", l.http_max_connections,
        "Dashboard HTTP connections open at once (then 503)");
  limit("--http-max-connections-per-peer", l.http_max_connections_per_peer,
        "Dashboard HTTP connections one peer address may hold (then 503)");
  limit("--http-max-head-bytes", l.http_max_head_bytes,
        "An HTTP request's line and headers (then 431, connection closed)");
  limit("--http-header-timeout-ms", l.http_header_timeout_ms,
        "Time an HTTP request's head and body may take to arrive (then 408)");
  limit("--max-live-points", l.max_live_points,
        "Points per split one merged live event carries (a busy trial's are "
        "thinned; every point is stored)");
  limit("--max-active-experiments-per-user", l.max_active_experiments_per_user,
        "Active or paused experiments per user unless an admin sets the "
        "user's own (prism user set --max-active; admins: no default limit)");
  limit("--max-queued-trials-per-user", l.max_queued_trials_per_user,
        "Queued trials per user at submit unless an admin sets the user's "
        "own (prism user set --max-queued; admins: no default limit)");
  limit("--max-user-priority", l.max_user_priority,
        "Users' priorities lie in -N..N (admins: any)");
  limit("--max-attempts-limit", l.max_attempts_limit,
        "The largest max_attempts a spec may ask for");
  limit("--max-layers", l.max_layers, "Model layers");
  limit("--max-d-model", l.max_d_model, "Model width (d_model)");
  limit("--max-heads", l.max_heads, "Model base heads");
  limit("--max-context", l.max_context, "Model context (sequence length)");
  limit("--max-parameters", l.max_parameters, "Model parameters");
}

// AddStorageAndAuthFlags adds durability, the admin token, the token and
// authentication-failure limits, /metrics access, the data roots and the
// web root.
void AddStorageAndAuthFlags(CLI::App* cmd, CoordinatorFlags* flags) {
  server::CoordinatorOptions& o = flags->options;
  cmd->add_option("--durability", o.durability,
                  "normal: an acknowledged write survives a crash of the "
                  "coordinator, and power loss may take the last moments' "
                  "writes; full: it survives power loss too (an fsync per "
                  "commit; see bench/RESULTS.md for the cost)")
      ->capture_default_str();
  cmd->add_option("--admin-token-file", o.admin_token_file,
                  "First admin token of a new database: read from this file "
                  "if it exists, else generated and written here (mode 0600)");
  cmd->add_option("--token-max-lifetime", flags->token_max_lifetime,
                  "Longest lifetime a token may get, and the lifetime of one "
                  "created without --expires-in, e.g. 90d (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--auth-max-failures", o.auth.throttle.max_failures,
                  "Failed authentications a client address may make per "
                  "--auth-failure-window before it is refused (gRPC "
                  "RESOURCE_EXHAUSTED, HTTP 429) until the window ends "
                  "(0: no limit)")
      ->capture_default_str();
  cmd->add_option("--auth-failure-window", flags->auth_failure_window,
                  "The window of --auth-max-failures, e.g. 60s or 15m")
      ->capture_default_str();
  cmd->add_option("--auth-max-peers", o.auth.throttle.max_peers,
                  "Client addresses whose failures are remembered at once "
                  "(the oldest is forgotten first)")
      ->capture_default_str();
  cmd->add_flag("--metrics-open", o.metrics_open,
                "Serve /metrics without a token (default: any role's token, "
                "as a Bearer header or the dashboard's cookie)");
  cmd->add_option("--data-root", o.data_roots,
                  "Directory a spec's data paths must lie in, after resolving "
                  "'..' and symlinks (repeatable; default: the demo corpus, "
                  "$PRISM_DATA_DIR/corpus or ./prism-data/corpus)");
  cmd->add_option("--web-root", o.web_root,
                  "Dashboard assets directory (default: web/ beside the "
                  "build, else the source tree's)");
}

// AddTlsFlags adds the TLS group (proto/tls.h; deploy/README.md, "TLS").
// Files are checked before anything starts; a bad one is one line naming
// it, exit 2.
void AddTlsFlags(CLI::App* cmd, TlsFiles* files) {
  const std::string tls = "TLS";
  cmd->add_option("--tls-cert", files->cert,
                  "Certificate (PEM, chain) for gRPC and the dashboard: both "
                  "serve TLS only (HTTPS); needs --tls-key")
      ->group(tls);
  cmd->add_option("--tls-key", files->key,
                  "The certificate's private key (PEM, unencrypted)")
      ->group(tls);
  cmd->add_option("--tls-client-ca", files->ca,
                  "Mutual TLS: every gRPC client (workers, the CLI) must "
                  "present a certificate this CA (PEM) signed; the "
                  "dashboard asks for none. Needs --tls-cert")
      ->group(tls);
}

// AddScalingFlags adds the Scaling group: worker jobs on Slurm while trials
// wait (server/core/queue/scaler.h; deploy/README.md, "Queue-driven workers on
// Slurm").
void AddScalingFlags(CLI::App* cmd, CoordinatorFlags* flags) {
  server::CoordinatorOptions& o = flags->options;
  const std::string scaling = "Scaling";
  CLI::Option* scale =
      cmd->add_option("--scale", flags->scale,
                      "none, or slurm: submit a worker job (sbatch) per "
                      "waiting trial up to --max-workers and cancel idle "
                      "ones; the jobs get this process's environment "
                      "(PRISM_TOKEN_FILE, PRISM_CHECKPOINTS, ...) and "
                      "PRISM_COORDINATOR")
          ->capture_default_str()
          ->group(scaling);
  auto scaling_option = [cmd, scale, &scaling](const std::string& name,
                                               auto& value,
                                               const std::string& help) {
    return cmd->add_option(name, value, help)->needs(scale)->group(scaling);
  };
  scaling_option("--max-workers", o.scaler.max_workers,
                 "Most worker jobs at once, pending and running")
      ->capture_default_str();
  scaling_option("--slurm-partition", flags->slurm.partition,
                 "sbatch --partition (default: the cluster's)");
  scaling_option("--slurm-account", flags->slurm.account,
                 "sbatch --account (default: the user's)");
  scaling_option("--slurm-template", flags->slurm.template_path,
                 "Batch script each job runs (default: "
                 "deploy/slurm/prism-workers.sbatch, from share/prism/slurm "
                 "beside the binary or the source tree)");
  scaling_option("--slurm-sbatch-arg", flags->slurm.sbatch_args,
                 "An sbatch option for every job, e.g. --gres=none or "
                 "--mem=8G (repeatable; options beat the script's #SBATCH "
                 "lines)");
  scaling_option("--scale-interval-seconds", flags->scale_interval_seconds,
                 "How often the queue and the jobs are compared")
      ->capture_default_str();
  scaling_option("--scale-idle-seconds", flags->scale_idle_seconds,
                 "A job whose worker was idle this long with nothing "
                 "waiting is cancelled")
      ->capture_default_str();
  scaling_option("--scale-coordinator-address", o.scaler_coordinator_address,
                 "HOST:PORT the jobs' workers dial (default: --listen, a "
                 "wildcard host replaced by this host's name)");
}

}  // namespace

void RegisterCoordinatorCommands(CLI::App& app, Action* action) {
  auto flags = std::make_shared<CoordinatorFlags>();
  server::CoordinatorOptions& o = flags->options;
  o.grpc_address = "127.0.0.1:50051";
  o.http_address = "127.0.0.1:8080";
  CLI::App* cmd = app.add_subcommand(
      "coordinator",
      "Run the coordinator: gRPC for workers and clients, HTTP for the "
      "dashboard, JSON API and /metrics, all state in one SQLite file");
  // The order of these calls is the order of --help.
  AddServingFlags(cmd, flags.get());
  AddLimitFlags(cmd, &o.limits);
  AddStorageAndAuthFlags(cmd, flags.get());
  AddTlsFlags(cmd, &o.tls);
  cmd->add_option("--ready-file", flags->ready_file,
                  "Write {\"grpc\":..., \"http\":...} here once serving");
  cmd->add_option("--log-level", flags->log_level,
                  "debug (logs every request), info, warning or error")
      ->capture_default_str();
  AddScalingFlags(cmd, flags.get());
  cmd->footer(
      "The first admin token comes from --admin-token-file, else env "
      "PRISM_ADMIN_TOKEN, else is generated and printed once. Without "
      "--tls-cert it serves plaintext (a warning when not on loopback). "
      "Logs are "
      "logfmt lines on stderr. SIGINT/SIGTERM stop it gracefully.");
  cmd->callback([flags, action] {
    *action = [flags] { return RunCoordinator(*flags); };
  });
}

}  // namespace prism::cli
