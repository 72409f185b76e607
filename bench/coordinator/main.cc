// coordinator_bench: the coordinator's performance targets, measured on a
// real coordinator (SQLite file in a temp dir, gRPC on loopback).
//
//   coordinator_bench ingest [--workers 64] [--seconds 10] [--points 100]
//                            [--interval-ms 0] [--durability normal]
//       64 simulated workers, one channel each, report loss points in a
//       closed loop (or each every --interval-ms); points/s, report latency
//       percentiles, and a check that every acknowledged point is in the
//       database. Then, in the same run, Optuna's RDB storage on SQLite
//       recording intermediate values from 8 processes
//       (bench/reference/optuna_ingest_reference.py) as reference.
//       --durability both [--rounds 2] runs the workload on a fresh
//       coordinator per round and durability, normal and full in turns, and
//       prints both and their ratio (no Optuna reference then).
//   coordinator_bench lease [--leases 2000]
//       Lease -> task latency at the coordinator (QueueManager::Lease) and
//       over loopback gRPC, with 2,520 queued trials of 6 experiments of 3
//       users (fair share in play).
//   coordinator_bench rank [--trials 10000] [--points 1000] [--db FILE]
//       Rank of an experiment with 10,000 completed trials x 1,000 points:
//       cold (fresh ranking cache) and warm, in-process and over gRPC.
//   coordinator_bench soak [--minutes 10] [--workers 64] [--readers 200]
//                          [--interval-ms 100] [--rank-trials 400]
//       64 reporting workers plus 200 threads calling ResultsService.Rank
//       over gRPC in a loop (on a second, finished experiment) for the given
//       minutes; every minute points/s, report and Rank latency and the
//       process RSS; at the end the totals, the acknowledged points missing
//       from the database, and storage::CheckDatabase on the file.
//   coordinator_bench hostile [--seconds 60] [--workers 64]
//                             [--watch-streams 1000] [--slow-connections 200]
//       64 paced reporting workers (100 points every 100 ms) while hostile
//       clients all push at the limits at once: 1,000 Watch streams on the
//       reporting experiment (10 viewers), maximal ScheduleService.List
//       pages, oversized specs (300,000 seeds, 200,000 schedules, a 5 MiB
//       spec text, a 1 MiB name) and 32 MiB HTTP bodies, 200 slow HTTP
//       connections that drip a header byte a second, and one dashboard API
//       call a second. Every 10 s: points/s, report p50/p99, open watches,
//       events/s, RSS; exits 0 when RSS stayed under --rss-bound-mib, the
//       report p99 under 50 ms, no oversized spec was accepted and no
//       acknowledged point is missing. --clients-nice 19 runs the hostile
//       clients in a second process at nice 19: on one machine, the closest
//       to clients on other hosts (their CPU yields to the coordinator's and
//       the reporting workers'; what they achieved is printed beside).
//       --clients-idle runs that process under SCHED_IDLE instead, which
//       yields for real: nice 19 weighs 15, and 1,000 Watch threads woken at
//       once outweigh the coordinator's nice-0 threads.
//
// Simulated workers emit what a trainer with log_every 1 would (val at step
// 0, then train steps 1, 2, ...) into an experiment whose budget never ends,
// so `prism db check` holds on a bench database.
//
// Results go in bench/RESULTS.md ("Coordinator").
#include <csignal>
#include <string>

#include "CLI/CLI.hpp"
#include "base/log.h"
#include "base/mutex_mode.h"
#include "bench/coordinator/scenarios.h"

int main(int argc, char** argv) {
  // As `prism` runs (base/mutex_mode.h): PRISM_MUTEX_DEADLOCK_DETECTION=1
  // measures with Abseil's debug deadlock detector on.
  prism::ApplyMutexDeadlockDetectionSetting();
  // The coordinator closes a connection whose body it refuses (413) without
  // reading it: the client's next write fails, which must not kill us.
  signal(SIGPIPE, SIG_IGN);
  CLI::App app{"Coordinator benchmarks (see the file header)",
               "coordinator_bench"};
  app.require_subcommand(1);
  int leases = 2000, trials = 10000, rank_points = 1000, val_every = 5;
  std::string optuna = std::string(PRISM_SOURCE_DIR) +
                       "/bench/reference/optuna_ingest_reference.py";
  std::string db;
  prism::bench::IngestLoad load;
  std::string durability = "normal";
  int rounds = 2;
  CLI::App* ingest =
      app.add_subcommand("ingest", "Report ingest throughput and latency");
  ingest->add_option("--workers", load.workers)->capture_default_str();
  ingest->add_option("--seconds", load.seconds)->capture_default_str();
  ingest->add_option("--points", load.points_per_report, "points per report")
      ->capture_default_str();
  ingest
      ->add_option("--interval-ms", load.interval_ms,
                   "each worker reports every N ms (0: closed loop)")
      ->capture_default_str();
  ingest
      ->add_option("--durability", durability,
                   "normal, full, or both (the two side by side)")
      ->check(CLI::IsMember({"normal", "full", "both"}))
      ->capture_default_str();
  ingest
      ->add_option("--rounds", rounds,
                   "with --durability both: runs of each durability")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  ingest->add_option("--optuna", optuna, "reference script; '' skips it")
      ->capture_default_str();
  CLI::App* lease = app.add_subcommand("lease", "Lease latency");
  lease->add_option("--leases", leases)->capture_default_str();
  CLI::App* rank =
      app.add_subcommand("rank", "Rank latency on a large experiment");
  rank->add_option("--trials", trials)->capture_default_str();
  rank->add_option("--points", rank_points)->capture_default_str();
  rank->add_option("--val-every", val_every, "every Nth point is a val point")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  rank->add_option("--db", db, "reuse (or build once) this database file");
  prism::bench::SoakOptions soak_options;
  CLI::App* soak = app.add_subcommand(
      "soak", "Reporting workers and Rank readers together for minutes");
  soak->add_option("--minutes", soak_options.minutes)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  soak->add_option("--workers", soak_options.workers)->capture_default_str();
  soak->add_option("--readers", soak_options.readers)->capture_default_str();
  soak->add_option("--interval-ms", soak_options.interval_ms,
                   "each worker reports every N ms (0: closed loop)")
      ->capture_default_str();
  soak->add_option("--points", soak_options.points_per_report,
                   "points per report")
      ->capture_default_str();
  soak->add_option("--rank-trials", soak_options.rank_trials,
                   "completed trials of the experiment the readers rank")
      ->capture_default_str();
  prism::bench::HostileOptions hostile_options;
  CLI::App* hostile = app.add_subcommand(
      "hostile",
      "Reporting workers while hostile clients try every limit at once");
  hostile->add_option("--seconds", hostile_options.seconds)
      ->check(CLI::Range(10, 3600))
      ->capture_default_str();
  hostile->add_option("--workers", hostile_options.workers)
      ->capture_default_str();
  hostile
      ->add_option("--coordinator-arg", hostile_options.coordinator_args,
                   "an extra `prism coordinator` argument (repeatable), e.g. "
                   "--coordinator-arg=--watch-interval-ms=500")
      ->allow_extra_args(false);
  hostile
      ->add_option("--window-seconds", hostile_options.window_seconds,
                   "seconds per line of figures")
      ->check(CLI::Range(1, 60))
      ->capture_default_str();
  hostile->add_option("--watch-streams", hostile_options.watch_streams)
      ->capture_default_str();
  hostile->add_option("--slow-connections", hostile_options.slow_connections)
      ->capture_default_str();
  hostile
      ->add_option("--list-threads", hostile_options.list_threads,
                   "threads asking for maximal ScheduleService.List pages")
      ->capture_default_str();
  hostile
      ->add_option("--oversized-threads", hostile_options.oversized_threads,
                   "threads sending oversized specs over gRPC")
      ->capture_default_str();
  hostile
      ->add_option("--body-threads", hostile_options.body_threads,
                   "threads POSTing 32 MiB HTTP bodies")
      ->capture_default_str();
  hostile->add_option("--prism", hostile_options.prism, "the prism binary")
      ->capture_default_str();
  hostile
      ->add_option("--rss-bound-mib", hostile_options.rss_bound_mib,
                   "the whole process's RSS must stay under this")
      ->capture_default_str();
  hostile
      ->add_option("--clients-nice", hostile_options.clients_nice,
                   "run the hostile clients in a process of their own at "
                   "this nice value, as clients on other hosts whose CPU is "
                   "not the coordinator's (-1: threads of this process)")
      ->check(CLI::Range(-1, 19))
      ->capture_default_str();
  hostile->add_flag(
      "--clients-idle", hostile_options.clients_idle,
      "run the hostile clients' process under SCHED_IDLE (implies "
      "--clients-nice 19 if none is given): it gets a core only when the "
      "coordinator and the workers leave one idle, closer to clients on "
      "other hosts than nice 19, whose 1,000 Watch threads woken at once "
      "outweigh the coordinator's");
  // hostile-clients: the clients process `hostile --clients-nice` starts
  // (hidden: not for direct use).
  prism::bench::HostileOptions clients_options;
  prism::bench::HostileTarget clients_target;
  int clients_seconds = 0;
  std::string clients_ready;
  CLI::App* clients = app.add_subcommand(
      "hostile-clients", "the hostile clients alone (started by hostile)");
  clients->group("");
  clients->add_option("--grpc", clients_target.grpc_address)->required();
  clients->add_option("--http-host", clients_target.http_host)->required();
  clients->add_option("--http-port", clients_target.http_port)->required();
  clients->add_option("--user-token", clients_target.user_token)->required();
  clients->add_option("--viewer-token", clients_target.viewer_tokens)
      ->required();
  clients->add_option("--experiment", clients_target.experiment_id)->required();
  clients->add_option("--seconds", clients_seconds)->required();
  clients->add_option("--watch-streams", clients_options.watch_streams);
  clients->add_option("--list-threads", clients_options.list_threads);
  clients->add_option("--oversized-threads", clients_options.oversized_threads);
  clients->add_option("--body-threads", clients_options.body_threads);
  clients->add_option("--slow-connections", clients_options.slow_connections);
  clients->add_option("--ready-file", clients_ready)->required();
  clients->add_flag("--sched-idle", clients_options.clients_idle);
  CLI11_PARSE(app, argc, argv);
  prism::SetLogLevel(prism::LogLevel::kWarning);
  if (hostile->parsed()) {
    if (hostile_options.clients_idle && hostile_options.clients_nice < 0) {
      hostile_options.clients_nice = 19;
    }
    return prism::bench::Hostile(hostile_options);
  }
  if (clients->parsed()) {
    return prism::bench::HostileClientsMain(clients_options, clients_target,
                                            clients_seconds, clients_ready);
  }
  if (ingest->parsed())
    return prism::bench::Ingest(load, durability, rounds, optuna);
  if (lease->parsed()) return prism::bench::Lease(leases);
  if (soak->parsed()) return prism::bench::Soak(soak_options);
  return prism::bench::Rank(trials, rank_points, val_every, db);
}
