// The coordinator_bench scenarios, one file each (ingest.cc, lease.cc,
// rank.cc, soak.cc, hostile.cc), as main.cc dispatches to them: each runs
// its workload against a real coordinator, prints its figures on stdout and
// returns the process's exit code (0 when every check held). The commands,
// their flags and what they print are in main.cc's header; the results in
// bench/RESULTS.md ("Coordinator").
//
// Thread-safety: each entry point runs on the main thread and owns the
// threads it starts.
#ifndef PRISM_BENCH_COORDINATOR_SCENARIOS_H_
#define PRISM_BENCH_COORDINATOR_SCENARIOS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fmt/format.h"

namespace prism::bench {

struct IngestLoad {
  int workers = 64;
  int seconds = 10;
  int points_per_report = 100;
  int interval_ms = 0;  // 0: closed loop

  std::string Describe() const {
    return fmt::format(
        "{} workers x {} s, {} points/report, {}", workers, seconds,
        points_per_report,
        interval_ms > 0
            ? fmt::format("one report per worker every {} ms", interval_ms)
            : std::string("closed loop (next report as soon as acked)"));
  }
};

struct SoakOptions {
  int minutes = 10;
  int workers = 64;
  int readers = 200;
  int interval_ms = 100;
  int points_per_report = 100;
  int rank_trials = 400;
};

struct HostileOptions {
  int seconds = 60;
  int window_seconds = 10;                    // one line of figures per window
  std::vector<std::string> coordinator_args;  // e.g. a limit to try
  int workers = 64;
  int interval_ms = 100;
  int points_per_report = 100;
  int watch_streams = 1000;  // attempted, over watch_users users
  int watch_users = 10;
  int list_threads = 4;       // maximal ScheduleService.List pages
  int oversized_threads = 2;  // oversized specs over gRPC
  int body_threads = 2;       // 32 MiB HTTP bodies
  int slow_connections = 200;
  // -1: the hostile clients run as threads of the bench process; N >= 0:
  // in a process of their own at nice N (their CPU then yields to the
  // coordinator's and the workers', as clients on other hosts would).
  int clients_nice = -1;
  // With clients apart: run their process under SCHED_IDLE (CPU only when
  // no other thread wants it). Nice 19 is not enough for 1,000 threads: at
  // weight 15 each, all of them woken at once outweigh 15 nice-0 threads.
  bool clients_idle = false;
  int64_t rss_bound_mib = 1024;
  std::string prism = std::string(PRISM_BINARY_DIR) + "/cli/prism";
};

// HostileTarget is what the hostile clients aim at.
struct HostileTarget {
  std::string grpc_address;
  std::string http_host;
  int http_port = 0;
  std::string user_token;
  std::vector<std::string> viewer_tokens;
  int64_t experiment_id = 0;
};

// Ingest is `coordinator_bench ingest`: `load` at `durability` ("normal",
// "full", or "both": `rounds` runs of each in turns), then Optuna's
// reference (`optuna_script`; "" skips it).
int Ingest(const IngestLoad& load, const std::string& durability, int rounds,
           const std::string& optuna_script);

// Lease is `coordinator_bench lease`: `leases` leases timed.
int Lease(int leases);

// Rank is `coordinator_bench rank` on `db` (built when missing; a temp file
// when empty).
int Rank(int trials, int points, int val_every, std::string db);

// Soak is `coordinator_bench soak`.
int Soak(const SoakOptions& o);

// Hostile is `coordinator_bench hostile`.
int Hostile(const HostileOptions& o);

// HostileClientsMain is the `hostile-clients` subcommand: the hostile
// clients alone, in a process of their own, for `seconds` once all are set
// up (it then writes `ready_file`). At the end it prints one line on stdout:
// its CPU seconds and its counters, `name=value` each.
int HostileClientsMain(const HostileOptions& o, const HostileTarget& t,
                       int seconds, const std::string& ready_file);

}  // namespace prism::bench

#endif  // PRISM_BENCH_COORDINATOR_SCENARIOS_H_
