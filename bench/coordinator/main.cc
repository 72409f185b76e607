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

namespace {

// BenchArgs are every subcommand's settings.
struct BenchArgs {
  int leases = 2000, trials = 10000, rank_points = 1000, val_every = 5;
  std::string optuna = std::string(PRISM_SOURCE_DIR) +
                       "/bench/reference/optuna_ingest_reference.py";
  std::string db;
  prism::bench::IngestLoad load;
  std::string durability = "normal";
  int rounds = 2;
  prism::bench::SoakOptions soak;
  prism::bench::HostileOptions hostile;
  // hostile-clients: the clients process `hostile --clients-nice` starts.
  prism::bench::HostileOptions clients;
  prism::bench::HostileTarget clients_target;
  int clients_seconds = 0;
  std::string clients_ready;
};

CLI::App* AddIngest(CLI::App& app, BenchArgs* a) {
  CLI::App* ingest =
      app.add_subcommand("ingest", "Report ingest throughput and latency");
  ingest->add_option("--workers", a->load.workers)->capture_default_str();
  ingest->add_option("--seconds", a->load.seconds)->capture_default_str();
  ingest->add_option("--points", a->load.points_per_report, "points per report")
      ->capture_default_str();
  ingest
      ->add_option("--interval-ms", a->load.interval_ms,
                   "each worker reports every N ms (0: closed loop)")
      ->capture_default_str();
  ingest
      ->add_option("--durability", a->durability,
                   "normal, full, or both (the two side by side)")
      ->check(CLI::IsMember({"normal", "full", "both"}))
      ->capture_default_str();
  ingest
      ->add_option("--rounds", a->rounds,
                   "with --durability both: runs of each durability")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  ingest->add_option("--optuna", a->optuna, "reference script; '' skips it")
      ->capture_default_str();
  return ingest;
}

CLI::App* AddLease(CLI::App& app, BenchArgs* a) {
  CLI::App* lease = app.add_subcommand("lease", "Lease latency");
  lease->add_option("--leases", a->leases)->capture_default_str();
  return lease;
}

CLI::App* AddRank(CLI::App& app, BenchArgs* a) {
  CLI::App* rank =
      app.add_subcommand("rank", "Rank latency on a large experiment");
  rank->add_option("--trials", a->trials)->capture_default_str();
  rank->add_option("--points", a->rank_points)->capture_default_str();
  rank->add_option("--val-every", a->val_every,
                   "every Nth point is a val point")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  rank->add_option("--db", a->db, "reuse (or build once) this database file");
  return rank;
}

CLI::App* AddSoak(CLI::App& app, prism::bench::SoakOptions* o) {
  CLI::App* soak = app.add_subcommand(
      "soak", "Reporting workers and Rank readers together for minutes");
  soak->add_option("--minutes", o->minutes)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  soak->add_option("--workers", o->workers)->capture_default_str();
  soak->add_option("--readers", o->readers)->capture_default_str();
  soak->add_option("--interval-ms", o->interval_ms,
                   "each worker reports every N ms (0: closed loop)")
      ->capture_default_str();
  soak->add_option("--points", o->points_per_report, "points per report")
      ->capture_default_str();
  soak->add_option("--rank-trials", o->rank_trials,
                   "completed trials of the experiment the readers rank")
      ->capture_default_str();
  return soak;
}

CLI::App* AddHostile(CLI::App& app, prism::bench::HostileOptions* o) {
  CLI::App* hostile = app.add_subcommand(
      "hostile",
      "Reporting workers while hostile clients try every limit at once");
  hostile->add_option("--seconds", o->seconds)
      ->check(CLI::Range(10, 3600))
      ->capture_default_str();
  hostile->add_option("--workers", o->workers)->capture_default_str();
  hostile
      ->add_option("--coordinator-arg", o->coordinator_args,
                   "an extra `prism coordinator` argument (repeatable), e.g. "
                   "--coordinator-arg=--watch-interval-ms=500")
      ->allow_extra_args(false);
  hostile
      ->add_option("--window-seconds", o->window_seconds,
                   "seconds per line of figures")
      ->check(CLI::Range(1, 60))
      ->capture_default_str();
  hostile->add_option("--watch-streams", o->watch_streams)
      ->capture_default_str();
  hostile->add_option("--slow-connections", o->slow_connections)
      ->capture_default_str();
  hostile
      ->add_option("--list-threads", o->list_threads,
                   "threads asking for maximal ScheduleService.List pages")
      ->capture_default_str();
  hostile
      ->add_option("--oversized-threads", o->oversized_threads,
                   "threads sending oversized specs over gRPC")
      ->capture_default_str();
  hostile
      ->add_option("--body-threads", o->body_threads,
                   "threads POSTing 32 MiB HTTP bodies")
      ->capture_default_str();
  hostile->add_option("--prism", o->prism, "the prism binary")
      ->capture_default_str();
  hostile
      ->add_option("--rss-bound-mib", o->rss_bound_mib,
                   "the whole process's RSS must stay under this")
      ->capture_default_str();
  hostile
      ->add_option("--clients-nice", o->clients_nice,
                   "run the hostile clients in a process of their own at "
                   "this nice value, as clients on other hosts whose CPU is "
                   "not the coordinator's (-1: threads of this process)")
      ->check(CLI::Range(-1, 19))
      ->capture_default_str();
  hostile->add_flag(
      "--clients-idle", o->clients_idle,
      "run the hostile clients' process under SCHED_IDLE (implies "
      "--clients-nice 19 if none is given): it gets a core only when the "
      "coordinator and the workers leave one idle, closer to clients on "
      "other hosts than nice 19, whose 1,000 Watch threads woken at once "
      "outweigh the coordinator's");
  return hostile;
}

// AddHostileClients adds the clients process `hostile --clients-nice`
// starts (hidden: not for direct use).
CLI::App* AddHostileClients(CLI::App& app, BenchArgs* a) {
  CLI::App* clients = app.add_subcommand(
      "hostile-clients", "the hostile clients alone (started by hostile)");
  clients->group("");
  prism::bench::HostileTarget& target = a->clients_target;
  clients->add_option("--grpc", target.grpc_address)->required();
  clients->add_option("--http-host", target.http_host)->required();
  clients->add_option("--http-port", target.http_port)->required();
  clients->add_option("--user-token", target.user_token)->required();
  clients->add_option("--viewer-token", target.viewer_tokens)->required();
  clients->add_option("--experiment", target.experiment_id)->required();
  clients->add_option("--seconds", a->clients_seconds)->required();
  clients->add_option("--watch-streams", a->clients.watch_streams);
  clients->add_option("--list-threads", a->clients.list_threads);
  clients->add_option("--oversized-threads", a->clients.oversized_threads);
  clients->add_option("--body-threads", a->clients.body_threads);
  clients->add_option("--slow-connections", a->clients.slow_connections);
  clients->add_option("--ready-file", a->clients_ready)->required();
  clients->add_flag("--sched-idle", a->clients.clients_idle);
  return clients;
}

}  // namespace

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
  BenchArgs a;
  CLI::App* ingest = AddIngest(app, &a);
  CLI::App* lease = AddLease(app, &a);
  AddRank(app, &a);
  CLI::App* soak = AddSoak(app, &a.soak);
  CLI::App* hostile = AddHostile(app, &a.hostile);
  CLI::App* clients = AddHostileClients(app, &a);
  CLI11_PARSE(app, argc, argv);
  prism::SetLogLevel(prism::LogLevel::kWarning);
  if (hostile->parsed()) {
    if (a.hostile.clients_idle && a.hostile.clients_nice < 0) {
      a.hostile.clients_nice = 19;
    }
    return prism::bench::Hostile(a.hostile);
  }
  if (clients->parsed()) {
    return prism::bench::HostileClientsMain(a.clients, a.clients_target,
                                            a.clients_seconds, a.clients_ready);
  }
  if (ingest->parsed()) {
    return prism::bench::Ingest(a.load, a.durability, a.rounds, a.optuna);
  }
  if (lease->parsed()) return prism::bench::Lease(a.leases);
  if (soak->parsed()) return prism::bench::Soak(a.soak);
  return prism::bench::Rank(a.trials, a.rank_points, a.val_every, a.db);
}
