// coordinator_bench ingest: report ingest throughput and latency, and the
// Optuna reference (scenarios.h).
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/coordinator/harness.h"
#include "bench/coordinator/scenarios.h"
#include "fmt/format.h"
#include "prism/v1/prism.grpc.pb.h"
#include "server/coordinator.h"

namespace prism::bench {

namespace {

struct IngestRun {
  double elapsed_s = 0;
  int64_t acked = 0;
  int64_t stored = 0;
  int64_t errors = 0;
  std::vector<double> latency_ms;

  double PointsPerSecond() const { return acked / elapsed_s; }
  void Add(const IngestRun& other) {
    elapsed_s += other.elapsed_s;
    acked += other.acked;
    stored += other.stored;
    errors += other.errors;
    latency_ms.insert(latency_ms.end(), other.latency_ms.begin(),
                      other.latency_ms.end());
  }
  // Print prints the run's throughput, latency and loss, two spaces in.
  void Print() const {
    std::cout << fmt::format(
        "  acknowledged {} points in {:.2f} s = {:.0f} points/s ({:.0f} "
        "reports/s)\n",
        acked, elapsed_s, PointsPerSecond(), latency_ms.size() / elapsed_s);
    std::cout << "  report latency " << Summary(latency_ms) << "\n";
    std::cout << fmt::format(
        "  in the database {} points; lost {}; failed reports {}\n", stored,
        acked - stored, errors);
  }
};

std::string RunOptunaReference(const std::string& script, int processes,
                               int seconds, const std::string& dir) {
  const std::string command = fmt::format(
      "/usr/bin/python3 {} --processes {} --seconds {} --dir {} 2>&1", script,
      processes, seconds, dir);
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "could not run " + command;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  const int status = pclose(pipe);
  if (status != 0) output += fmt::format("\n(exit status {})", status);
  return output;
}

// RunIngest runs `load` against a fresh coordinator in `dir` at `durability`
// and counts what the database holds of the acknowledged points.
IngestRun RunIngest(const IngestLoad& load, const std::string& durability,
                    const TempDir& dir) {
  const std::string db = dir.File(absl::StrCat("prism-", durability, ".db"));
  std::unique_ptr<server::Coordinator> c = StartCoordinator(db, durability);
  const std::string worker_token = Token(c.get(), "farm", v1::ROLE_WORKER);
  SubmitIngestExperiment(c.get(), load.workers);

  struct WorkerResult {
    int64_t trial_id = 0;
    int64_t acked_points = 0;
    int64_t errors = 0;
    std::vector<double> latency_ms;
  };
  std::vector<WorkerResult> results(load.workers);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point deadline;
  std::vector<std::thread> threads;
  for (int w = 0; w < load.workers; ++w) {
    threads.emplace_back([&, w] {
      ReportingWorker worker(c->grpc_address(), w, worker_token,
                             load.points_per_report);
      WorkerResult& r = results[w];
      if (!worker.Start()) ++r.errors;
      r.trial_id = worker.trial_id();
      ++ready;
      while (!go) std::this_thread::yield();
      if (r.errors > 0) return;
      // Paced workers start spread over one interval, like real ones would.
      Clock::time_point next =
          Clock::now() +
          std::chrono::milliseconds(load.interval_ms * w / load.workers);
      while (Clock::now() < deadline && worker.HasSteps()) {
        if (load.interval_ms > 0) {
          std::this_thread::sleep_until(next);
          next += std::chrono::milliseconds(load.interval_ms);
        }
        int64_t stored = 0;
        const Clock::time_point t0 = Clock::now();
        grpc::Status s = worker.Report(&stored);
        r.latency_ms.push_back(Ms(Clock::now() - t0));
        r.acked_points += stored;
        if (!s.ok()) ++r.errors;
      }
    });
  }
  while (ready < load.workers)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const Clock::time_point start = Clock::now();
  deadline = start + std::chrono::seconds(load.seconds);
  go = true;
  for (std::thread& t : threads) t.join();

  IngestRun run;
  run.elapsed_s = Seconds(Clock::now() - start);
  for (const WorkerResult& r : results) {
    run.acked += r.acked_points;
    run.errors += r.errors;
    run.latency_ms.insert(run.latency_ms.end(), r.latency_ms.begin(),
                          r.latency_ms.end());
    if (r.trial_id > 0) run.stored += StoredPoints(c.get(), r.trial_id);
  }
  c->Shutdown();
  return run;
}

// IngestBoth runs `load` `rounds` times at each durability, each run on a
// fresh coordinator, normal and full in turns with the order swapped every
// round (normal, full, full, normal, ...) so drifting load on a shared
// machine falls on both alike; then both totals and full / normal.
int IngestBoth(const IngestLoad& load, int rounds) {
  std::cout << fmt::format(
      "prism ingest: {}; durability normal vs full, {} rounds of each, "
      "alternating (normal first in odd rounds)\n",
      load.Describe(), rounds);
  IngestRun normal, full;
  for (int round = 1; round <= rounds; ++round) {
    const bool normal_first = round % 2 == 1;
    for (const char* durability :
         {normal_first ? "normal" : "full", normal_first ? "full" : "normal"}) {
      TempDir dir;
      const IngestRun run = RunIngest(load, durability, dir);
      std::cout << fmt::format(
          "  round {} {:<6}  {:.0f} points/s  report p50 {:.3f} ms  p99 "
          "{:.3f} ms  max {:.3f} ms  lost {}  failed {}\n",
          round, durability, run.PointsPerSecond(),
          Percentile(run.latency_ms, 50), Percentile(run.latency_ms, 99),
          Percentile(run.latency_ms, 100), run.acked - run.stored, run.errors);
      (std::string(durability) == "full" ? full : normal).Add(run);
    }
  }
  std::cout << "normal (synchronous=NORMAL), all rounds:\n";
  normal.Print();
  std::cout << "full (synchronous=FULL, an fsync per commit), all rounds:\n";
  full.Print();
  std::cout << fmt::format(
      "full / normal: points/s {:.3f}x, report p50 {:.2f}x, p90 {:.2f}x, p99 "
      "{:.2f}x\n",
      full.PointsPerSecond() / normal.PointsPerSecond(),
      Percentile(full.latency_ms, 50) / Percentile(normal.latency_ms, 50),
      Percentile(full.latency_ms, 90) / Percentile(normal.latency_ms, 90),
      Percentile(full.latency_ms, 99) / Percentile(normal.latency_ms, 99));
  const bool clean = normal.acked == normal.stored && normal.errors == 0 &&
                     full.acked == full.stored && full.errors == 0;
  return clean ? 0 : 1;
}

}  // namespace

int Ingest(const IngestLoad& load, const std::string& durability, int rounds,
           const std::string& optuna_script) {
  if (durability == "both") return IngestBoth(load, rounds);
  TempDir dir;
  const IngestRun run = RunIngest(load, durability, dir);
  std::cout << fmt::format("prism ingest: {}, durability {}\n", load.Describe(),
                           durability);
  run.Print();
  if (!optuna_script.empty()) {
    std::cout << "optuna reference (RDB storage on SQLite, 8 processes, "
                 "trial.report):\n"
              << RunOptunaReference(optuna_script, 8, load.seconds,
                                    dir.File(""))
              << "\n";
  }
  return run.acked == run.stored && run.errors == 0 ? 0 : 1;
}

}  // namespace prism::bench
