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
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "base/log.h"
#include "base/mutex_mode.h"
#include "cli/launcher.h"
#include "cli/subprocess.h"
#include "fmt/format.h"
#include "prism/v1/prism.grpc.pb.h"
#include "scheduler/ranking.h"
#include "scheduler/schedule.h"
#include "scheduler/space.h"
#include "server/coordinator.h"
#include "server/core/convert.h"
#include "server/rpc/schedule_service.h"
#include "storage/check.h"
#include "storage/sqlite_store.h"

namespace prism::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kAdminToken[] = "prism_bench_admin";
// kIngestSteps is the budget of the experiment simulated workers report
// into: far more steps than any run here reaches (a paced worker logs 1,000
// steps a second), so its trials never end, while storage::CheckDatabase
// (which lists a trial's expected steps) stays cheap.
constexpr int64_t kIngestSteps = 10'000'000;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(
      v.size() - 1, static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5));
  return v[i];
}

std::string Summary(const std::vector<double>& ms) {
  return fmt::format(
      "p50 {:.3f} ms  p90 {:.3f} ms  p99 {:.3f} ms  max {:.3f} ms  (n={})",
      Percentile(ms, 50), Percentile(ms, 90), Percentile(ms, 99),
      Percentile(ms, 100), ms.size());
}

// LatencyCounts is a latency histogram with buckets 1% wide (bucket i >= 1
// holds [1.01^(i-1), 1.01^i) us, up to about 20 minutes), so a soak's
// percentiles cost the same memory however long it runs.
struct LatencyCounts {
  static constexpr int kBuckets = 2100;
  static constexpr double kGrowth = 1.01;

  static int BucketOf(double ms) {
    const double us = ms * 1000.0;
    if (!(us >= 1.0)) return 0;
    return std::min(kBuckets - 1,
                    1 + static_cast<int>(std::log(us) / std::log(kGrowth)));
  }

  void Add(const LatencyCounts& other) {
    for (int i = 0; i < kBuckets; ++i) buckets[i] += other.buckets[i];
    n += other.n;
    max_ms = std::max(max_ms, other.max_ms);
  }

  // Percentile returns the middle of the bucket holding the p-th percentile
  // (within 0.5%); 100 gives the exact maximum.
  double Percentile(double p) const {
    if (n == 0) return 0.0;
    if (p >= 100) return max_ms;
    const int64_t rank = static_cast<int64_t>(p / 100.0 * (n - 1) + 0.5);
    int64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += buckets[i];
      if (seen > rank) {
        return i == 0 ? 0.0 : std::pow(kGrowth, i - 0.5) / 1000.0;
      }
    }
    return max_ms;
  }

  std::vector<int64_t> buckets = std::vector<int64_t>(kBuckets);
  int64_t n = 0;
  double max_ms = 0;
};

// LatencyRecorder collects latencies from many threads into one histogram.
class LatencyRecorder {
 public:
  LatencyRecorder() {
    for (std::atomic<int64_t>& b : buckets_) b.store(0);
  }

  void Record(double ms) {
    buckets_[LatencyCounts::BucketOf(ms)].fetch_add(1,
                                                    std::memory_order_relaxed);
    const int64_t ns = static_cast<int64_t>(ms * 1e6);
    int64_t max = max_ns_.load(std::memory_order_relaxed);
    while (ns > max && !max_ns_.compare_exchange_weak(max, ns)) {
    }
  }

  // Take returns what was recorded since the last Take and starts afresh.
  LatencyCounts Take() {
    LatencyCounts counts;
    for (int i = 0; i < LatencyCounts::kBuckets; ++i) {
      counts.buckets[i] = buckets_[i].exchange(0);
      counts.n += counts.buckets[i];
    }
    counts.max_ms = static_cast<double>(max_ns_.exchange(0)) / 1e6;
    return counts;
  }

 private:
  std::array<std::atomic<int64_t>, LatencyCounts::kBuckets> buckets_;
  std::atomic<int64_t> max_ns_{0};
};

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (fs::temp_directory_path() / "prism-bench-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string File(const std::string& name) const {
    return (fs::path(path_) / name).string();
  }

 private:
  std::string path_;
};

std::unique_ptr<server::Coordinator> StartCoordinator(
    const std::string& db, const std::string& durability = "normal") {
  server::CoordinatorOptions options;
  options.db_path = db;
  options.admin_token_env = kAdminToken;
  options.lease_seconds = 600;
  options.heartbeat_seconds = 60;
  options.limits.max_trials_per_experiment = 1'000'000;
  options.durability = durability;
  absl::StatusOr<std::unique_ptr<server::Coordinator>> c =
      server::Coordinator::Create(options);
  if (!c.ok()) {
    std::cerr << "coordinator_bench: " << c.status() << "\n";
    std::exit(1);
  }
  absl::Status started = (*c)->Start();
  if (!started.ok()) {
    std::cerr << "coordinator_bench: " << started << "\n";
    std::exit(1);
  }
  return std::move(*c);
}

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("authorization", "Bearer " + token);
  return ctx;
}

// SetupCtx is Ctx for a client's first calls, made before the clock starts:
// they wait for the channel to connect (a minute at most) rather than fail
// while hundreds of clients connect at once.
std::unique_ptr<grpc::ClientContext> SetupCtx(const std::string& token) {
  std::unique_ptr<grpc::ClientContext> ctx = Ctx(token);
  ctx->set_wait_for_ready(true);
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(1));
  return ctx;
}

// NewChannel opens a channel of its own (no subchannel sharing), like a
// separate worker process would.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address, int id) {
  grpc::ChannelArguments args;
  args.SetInt("prism.bench.channel", id);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

std::string Token(server::Coordinator* c, const std::string& user,
                  v1::Role role) {
  v1::CreateTokenRequest req;
  req.set_user(user);
  req.set_role(role);
  return c->auth()
      ->CreateToken(server::Caller{"admin", v1::ROLE_ADMIN}, req)
      ->token();
}

int64_t SubmitTiny(server::Coordinator* c, const std::string& user, int seeds,
                   const v1::Budget& budget = v1::Budget()) {
  v1::SubmitRequest req;
  req.mutable_spec()->mutable_model()->set_preset("tiny");
  *req.mutable_spec()->mutable_budget() = budget;
  for (int s = 1; s <= seeds; ++s) req.mutable_spec()->add_seeds(s);
  absl::StatusOr<v1::SubmitResponse> r =
      c->experiments()->Submit(server::Caller{user, v1::ROLE_USER}, req);
  if (!r.ok()) {
    std::cerr << "coordinator_bench: " << r.status() << "\n";
    std::exit(1);
  }
  return r->experiment().id();
}

// SubmitIngestExperiment submits an experiment with at least `workers` trials
// (21 schedules of the tiny preset per seed) whose cadence fits the
// simulated workers' curves: train every step, val at 0 and at the last
// step, kIngestSteps steps.
int64_t SubmitIngestExperiment(server::Coordinator* c, int workers) {
  v1::Budget budget;
  budget.set_steps(kIngestSteps);
  budget.set_log_every(1);
  budget.set_eval_every(static_cast<int32_t>(kIngestSteps));
  return SubmitTiny(c, "alice", (workers + 20) / 21, budget);
}

// ReportingWorker is one simulated worker on a channel of its own: it
// registers, leases a trial and reports that trial's curve as a trainer with
// log_every 1 emits it (the val point at step 0 in the first report, then
// `points` train steps per report).
class ReportingWorker {
 public:
  ReportingWorker(const std::string& address, int id, std::string token,
                  int points)
      : stub_(v1::WorkerService::NewStub(NewChannel(address, id))),
        token_(std::move(token)) {
    v1::LossPoint* val = req_.add_points();
    val->set_split(v1::SPLIT_VAL);
    val->set_step(0);
    val->set_loss(5.0f);
    for (int i = 0; i < points; ++i) {
      v1::LossPoint* p = req_.add_points();
      p->set_split(v1::SPLIT_TRAIN);
      p->set_learning_rate(1e-3f);
      p->set_tokens_per_second(12345.0);
    }
  }

  // Start registers and leases a trial; false (said on stderr) if either
  // fails or there was no trial to lease.
  bool Start() {
    v1::RegisterResponse reg;
    grpc::Status s =
        stub_->Register(SetupCtx(token_).get(), v1::RegisterRequest(), &reg);
    v1::LeaseResponse lease;
    if (s.ok()) {
      v1::LeaseRequest lease_req;
      lease_req.set_worker_id(reg.worker_id());
      s = stub_->Lease(SetupCtx(token_).get(), lease_req, &lease);
    }
    if (!s.ok() || !lease.has_task()) {
      std::cerr << "coordinator_bench: a worker got no trial: "
                << s.error_message() << "\n";
      return false;
    }
    req_.set_worker_id(reg.worker_id());
    req_.set_trial_id(lease.task().trial().id());
    req_.set_attempt(lease.task().trial().attempt());
    return true;
  }

  // HasSteps says whether the next report stays inside kIngestSteps.
  bool HasSteps() const { return step_ + req_.points_size() < kIngestSteps; }

  // Report sends the next points and waits for the acknowledgement; on
  // success `stored` is the number of points the coordinator stored.
  grpc::Status Report(int64_t* stored) {
    for (v1::LossPoint& p : *req_.mutable_points()) {
      if (p.split() != v1::SPLIT_TRAIN) continue;
      p.set_step(++step_);
      p.set_loss(4.0f / static_cast<float>(step_));
      p.set_elapsed_seconds(static_cast<double>(step_));
    }
    v1::ReportResponse resp;
    grpc::Status s = stub_->Report(Ctx(token_).get(), req_, &resp);
    if (req_.points(0).split() == v1::SPLIT_VAL) {
      req_.mutable_points()->DeleteSubrange(0, 1);
    }
    *stored = s.ok() ? resp.stored() : 0;
    return s;
  }

  int64_t trial_id() const { return req_.trial_id(); }

 private:
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  const std::string token_;
  v1::ReportRequest req_;
  int64_t step_ = 0;
};

// StoredPoints counts the points the database holds for `trial_id`.
int64_t StoredPoints(server::Coordinator* c, int64_t trial_id) {
  absl::StatusOr<std::vector<v1::LossPoint>> points =
      c->store()->GetPoints(trial_id);
  return points.ok() ? static_cast<int64_t>(points->size()) : 0;
}

// --- ingest
// --------------------------------------------------------------------

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

// --- lease
// ---------------------------------------------------------------------

int Lease(int leases) {
  TempDir dir;
  std::unique_ptr<server::Coordinator> c =
      StartCoordinator(dir.File("prism.db"));
  for (const char* user : {"alice", "bob", "carol"}) {
    SubmitTiny(c.get(), user, 20);  // 420 trials
    SubmitTiny(c.get(), user, 20);
  }
  const std::string worker_token = Token(c.get(), "farm", v1::ROLE_WORKER);
  const server::Caller worker{"farm", v1::ROLE_WORKER};
  v1::RegisterRequest reg_req;
  absl::StatusOr<v1::RegisterResponse> reg =
      c->queue()->Register(worker, reg_req);
  v1::LeaseRequest req;
  req.set_worker_id(reg->worker_id());

  // StartOf is the Start a worker sends once its trainer runs: untimed, it
  // moves the trial to running, so the next Lease is a new one rather than
  // the same lease delivered again.
  auto start_of = [&](const v1::TrialTask& task) {
    v1::StartRequest start;
    start.set_worker_id(req.worker_id());
    start.set_trial_id(task.trial().id());
    start.set_attempt(task.trial().attempt());
    return start;
  };
  std::vector<double> in_process;
  for (int i = 0; i < leases; ++i) {
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<v1::LeaseResponse> r = c->queue()->Lease(worker, req);
    in_process.push_back(Ms(Clock::now() - t0));
    if (!r.ok() || !r->has_task() ||
        !c->queue()->Start(worker, start_of(r->task())).ok()) {
      std::cerr << "lease " << i << " got no task\n";
      return 1;
    }
  }
  auto stub = v1::WorkerService::NewStub(NewChannel(c->grpc_address(), 0));
  std::vector<double> rpc;
  for (int i = 0; i < 400; ++i) {
    v1::LeaseResponse resp;
    const Clock::time_point t0 = Clock::now();
    grpc::Status s = stub->Lease(Ctx(worker_token).get(), req, &resp);
    rpc.push_back(Ms(Clock::now() - t0));
    v1::StartResponse started;
    if (s.ok() && resp.has_task()) {
      s = stub->Start(Ctx(worker_token).get(), start_of(resp.task()), &started);
    }
    if (!s.ok() || !resp.has_task()) {
      std::cerr << "rpc lease " << i << " failed: " << s.error_message()
                << "\n";
      return 1;
    }
  }
  std::cout << "lease -> task at the coordinator (QueueManager::Lease), 2,520 "
               "queued trials, "
               "6 experiments, 3 users:\n  "
            << Summary(in_process) << "\n";
  std::cout << "lease -> task over loopback gRPC (client round trip):\n  "
            << Summary(rpc) << "\n";
  return 0;
}

// --- rank
// ----------------------------------------------------------------------

// BuildRankDb fills `db` with one finished experiment of `trials` trials of
// about `points` points each, one in `val_every` of them a val point,
// written through the store as the coordinator would. The curves follow the
// trainer's cadence (train at every step 1..S with S = points - points /
// val_every; val at 0, every val_every - 1 steps and at S), so the database
// passes storage::CheckDatabase.
int64_t BuildRankDb(const std::string& db, int trials, int points,
                    int val_every) {
  constexpr int64_t kFarFuture = 1'000'000'000'000'000;
  absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store =
      storage::SqliteStore::Open(db);
  const int seeds = 2;
  const int64_t steps = points - points / val_every;
  const int eval_every = std::max(1, val_every - 1);
  storage::NewExperiment e;
  e.name = "rank bench";
  e.owner = "alice";
  e.spec.set_name("rank bench");
  e.spec.mutable_model()->set_preset("124m");
  e.spec.mutable_model()->set_d_model(768);
  e.spec.mutable_model()->set_layers(12);
  e.spec.mutable_model()->set_base_heads(12);
  e.spec.set_min_run(2);
  e.spec.set_max_run(4);
  e.spec.mutable_budget()->set_steps(steps);
  e.spec.mutable_budget()->set_log_every(1);
  e.spec.mutable_budget()->set_eval_every(eval_every);
  e.spec.add_seeds(1);
  e.spec.add_seeds(2);
  e.max_attempts = 3;
  e.total_steps = steps;
  e.config_fingerprint = "bench";
  SpaceSpec space{768, 12, 12, PrincipleSet::None(), 2, 4};
  absl::StatusOr<ScheduleEnumerator> en = ScheduleEnumerator::Create(space);
  const std::string baseline = Schedule::Uniform(12, 12).ToString();
  std::vector<std::string> schedules = {baseline};
  while (static_cast<int>(schedules.size()) < trials / seeds && en->Next()) {
    const std::string s = Schedule(en->heads()).ToString();
    if (s != baseline) schedules.push_back(s);
  }
  for (int seed = 1; seed <= seeds; ++seed) {
    for (const std::string& s : schedules)
      e.trials.push_back({s, seed, s == baseline});
  }
  const int64_t id = (*store)->CreateExperiment(e)->id;
  v1::Worker w;
  w.set_id("bench");
  (void)(*store)->UpsertWorker(w, 0, /*take_over=*/false);
  const Clock::time_point t0 = Clock::now();
  for (int t = 0; t < static_cast<int>(e.trials.size()); ++t) {
    absl::StatusOr<std::optional<v1::Trial>> trial =
        (*store)->LeaseNextTrial(id, "bench", 1, kFarFuture);
    const double quality = 0.01 * ((*trial)->id() % 97);
    storage::ReportWrite report;
    report.ref = storage::AttemptRef{(*trial)->id(), 1, "bench"};
    report.lease_deadline_ms = kFarFuture;
    double val = 0;
    for (int64_t s = 0; s <= steps; ++s) {
      const double loss = 3.0 + quality + 5.0 / static_cast<double>(s + 1);
      v1::LossPoint p;
      p.set_step(s);
      p.set_loss(static_cast<float>(loss));
      if (s > 0) {
        p.set_split(v1::SPLIT_TRAIN);
        report.points.push_back(p);
      }
      if (s % eval_every == 0 || s == steps) {
        p.set_split(v1::SPLIT_VAL);
        report.points.push_back(p);
        val = loss;
      }
    }
    (void)(*store)->WriteReports({&report});
    v1::TrialMetrics m;
    m.set_final_val_loss(val);
    m.set_min_val_loss(val);
    m.set_tokens_per_second(10000 + (*trial)->id() % 13);
    m.set_steps(steps);
    for (int l = 0; l < 12; ++l) m.add_attention_distance(10.0 + l + quality);
    (void)(*store)->CompleteTrial(report.ref, m, {}, 2);
    if ((t + 1) % 1000 == 0) {
      std::cerr << fmt::format("  built {} trials ({:.0f} s)\n", t + 1,
                               Seconds(Clock::now() - t0));
    }
  }
  return id;
}

int Rank(int trials, int points, int val_every, std::string db) {
  std::unique_ptr<TempDir> dir;
  if (db.empty()) {
    dir = std::make_unique<TempDir>();
    db = dir->File("rank.db");
  }
  int64_t id = 1;
  if (!fs::exists(db)) {
    std::cerr << "building " << db << " ...\n";
    id = BuildRankDb(db, trials, points, val_every);
  }
  v1::RankRequest req;
  req.set_experiment_id(id);
  req.set_page_size(50);
  // The coordinator warms recent experiments' rankings as it starts: a Rank
  // at once waits for that build; one after it is warm.
  Clock::time_point started = Clock::now();
  std::unique_ptr<server::Coordinator> c = StartCoordinator(db);
  const double start_ms = Ms(Clock::now() - started);
  Clock::time_point t_first = Clock::now();
  (void)c->results()->Rank(req);
  const double first_after_start = Ms(Clock::now() - t_first);
  c->results()->WaitIdle();
  Clock::time_point t_warmed = Clock::now();
  (void)c->results()->Rank(req);
  const double first_after_warm_up = Ms(Clock::now() - t_warmed);
  const std::string viewer =
      Token(c.get(), absl::StrCat("viewer", getpid()), v1::ROLE_VIEWER);

  std::vector<double> cold, warm, warm_all, rpc;
  for (int i = 0; i < 5; ++i) {
    server::ResultsManager fresh(c->store());  // an empty cache
    Clock::time_point t0 = Clock::now();
    absl::StatusOr<v1::RankResponse> r = fresh.Rank(req);
    cold.push_back(Ms(Clock::now() - t0));
    if (!r.ok()) {
      std::cerr << r.status() << "\n";
      return 1;
    }
    if (i == 0) {
      std::cout << fmt::format(
          "experiment {}: {} ranked schedules, best {} ({:.4f})\n", id,
          r->total(), r->schedules(0).schedule(),
          r->schedules(0).final_val_loss().mean());
    }
  }
  // The cold path's two parts, timed apart.
  std::vector<double> read, rank_only;
  {
    const v1::Experiment e = *c->store()->GetExperiment(id);
    const SpaceSpec space = server::SpaceForSpec(e.spec());
    const std::string baseline =
        Schedule::Uniform(space.base_heads, space.layers).ToString();
    for (int i = 0; i < 5; ++i) {
      Clock::time_point t0 = Clock::now();
      std::vector<TrialOutcome> outcomes =
          *c->store()->ListFinishedOutcomes(id);
      Clock::time_point t1 = Clock::now();
      Ranking ranking = RankSchedules(space, baseline, outcomes);
      rank_only.push_back(Ms(Clock::now() - t1));
      read.push_back(Ms(t1 - t0));
    }
  }
  (void)c->results()->Rank(req);
  for (int i = 0; i < 50; ++i) {
    Clock::time_point t0 = Clock::now();
    (void)c->results()->Rank(req);
    warm.push_back(Ms(Clock::now() - t0));
  }
  v1::RankRequest all = req;
  all.set_page_size(0);
  for (int i = 0; i < 20; ++i) {
    Clock::time_point t0 = Clock::now();
    (void)c->results()->Rank(all);
    warm_all.push_back(Ms(Clock::now() - t0));
  }
  auto stub = v1::ResultsService::NewStub(NewChannel(c->grpc_address(), 0));
  for (int i = 0; i < 50; ++i) {
    v1::RankResponse resp;
    Clock::time_point t0 = Clock::now();
    grpc::Status s = stub->Rank(Ctx(viewer).get(), req, &resp);
    rpc.push_back(Ms(Clock::now() - t0));
    if (!s.ok()) {
      std::cerr << s.error_message() << "\n";
      return 1;
    }
  }
  std::cout << fmt::format(
      "rank, {} trials x {} points (1 in {} val), page of 50:\n", trials,
      points, val_every);
  std::cout << fmt::format(
      "  first Rank right after the coordinator started ({:.0f} ms), its "
      "warm-up build in flight  {:.3f} ms\n",
      start_ms, first_after_start);
  std::cout << fmt::format(
      "  first Rank once the warm-up finished                   {:.3f} ms\n",
      first_after_warm_up);
  std::cout << fmt::format(
      "  cold, first fresh cache in this process                {:.3f} ms\n",
      cold[0]);
  std::cout << "  cold (fresh cache: read completed trials + RankSchedules) "
            << Summary(cold) << "\n";
  std::cout << "    of which: read the completed trials                     "
            << Summary(read) << "\n";
  std::cout << "    of which: RankSchedules                                 "
            << Summary(rank_only) << "\n";
  std::cout << "  warm (cached, filter+sort+page)                           "
            << Summary(warm) << "\n";
  std::cout << "  warm, every row (page_size 0)                             "
            << Summary(warm_all) << "\n";
  std::cout << "  warm over loopback gRPC                                   "
            << Summary(rpc) << "\n";
  return 0;
}

// --- soak
// ----------------------------------------------------------------------

// ReportLoop is the fleet of simulated workers the soak and the hostile run
// share: worker w registers and leases, says it is ready, waits for `go`,
// then reports every interval_ms (staggered across the fleet; closed loop at
// 0) until `stop`, recording each report's latency and what was stored.
struct ReportLoop {
  std::string address;
  std::string token;
  int workers = 0;
  int points_per_report = 0;
  int interval_ms = 0;
  std::atomic<int>* ready = nullptr;
  const std::atomic<bool>* go = nullptr;
  const std::atomic<bool>* stop = nullptr;
  std::atomic<bool>* failed_setup = nullptr;
  LatencyRecorder* latency = nullptr;
  std::atomic<int64_t>* points = nullptr;
  std::atomic<int64_t>* errors = nullptr;
  std::vector<int64_t>* acked = nullptr;
  std::vector<int64_t>* trial_ids = nullptr;

  void Run(int w) const {
    ReportingWorker worker(address, w, token, points_per_report);
    if (!worker.Start()) *failed_setup = true;
    (*trial_ids)[w] = worker.trial_id();
    ++*ready;
    while (!*go) std::this_thread::yield();
    Clock::time_point next =
        Clock::now() + std::chrono::milliseconds(interval_ms * w / workers);
    while (!*stop && !*failed_setup && worker.HasSteps()) {
      if (interval_ms > 0) {
        std::this_thread::sleep_until(next);
        next += std::chrono::milliseconds(interval_ms);
      }
      int64_t stored = 0;
      const Clock::time_point t0 = Clock::now();
      grpc::Status s = worker.Report(&stored);
      latency->Record(Ms(Clock::now() - t0));
      (*acked)[w] += stored;
      *points += stored;
      if (!s.ok()) ++*errors;
    }
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

// Rss is this process's resident set in MiB (-1 where unknown): all of it
// (VmRSS), and its anonymous (heap, stacks) and file-backed parts (mapped
// files: the binary, its libraries, SQLite's memory-mapped database).
struct Rss {
  double total = -1;
  double anon = -1;
  double file = -1;

  static Rss Read(const std::string& process = "self") {
    Rss rss;
    std::ifstream status("/proc/" + process + "/status");
    std::string line;
    while (std::getline(status, line)) {
      for (auto [key, field] :
           {std::pair{"VmRSS:", &rss.total}, std::pair{"RssAnon:", &rss.anon},
            std::pair{"RssFile:", &rss.file}}) {
        if (line.rfind(key, 0) == 0) {
          *field = std::stod(line.substr(std::strlen(key))) / 1024;
        }
      }
    }
    return rss;
  }

  std::string ToString() const {
    return fmt::format("{:.1f} ({:.1f} + {:.1f})", total, anon, file);
  }
};

// SoakWindow is what the soak's clients got done in one stretch of time.
struct SoakWindow {
  double seconds = 0;
  int64_t points = 0;
  int64_t report_errors = 0;
  int64_t rank_errors = 0;
  LatencyCounts report_ms;
  LatencyCounts rank_ms;

  void Add(const SoakWindow& other) {
    seconds += other.seconds;
    points += other.points;
    report_errors += other.report_errors;
    rank_errors += other.rank_errors;
    report_ms.Add(other.report_ms);
    rank_ms.Add(other.rank_ms);
  }

  std::string Row(const std::string& label, const std::string& rss) const {
    return fmt::format(
        "{:>6} {:>9.0f} {:>8.3f} / {:<8.3f} {:>8.0f} {:>8.2f} / {:<8.2f} "
        "{:>22} {:>7} / {}",
        label, points / seconds, report_ms.Percentile(50),
        report_ms.Percentile(99), rank_ms.n / seconds, rank_ms.Percentile(50),
        rank_ms.Percentile(99), rss, report_errors, rank_errors);
  }
};

// SoakCounters are shared by every client thread.
struct SoakCounters {
  std::atomic<int64_t> points{0};
  std::atomic<int64_t> report_errors{0};
  std::atomic<int64_t> rank_errors{0};
  LatencyRecorder report_ms;
  LatencyRecorder rank_ms;

  // Take returns the counts since the last Take (`seconds` ago).
  SoakWindow Take(double seconds) {
    SoakWindow w;
    w.seconds = seconds;
    w.points = points.exchange(0);
    w.report_errors = report_errors.exchange(0);
    w.rank_errors = rank_errors.exchange(0);
    w.report_ms = report_ms.Take();
    w.rank_ms = rank_ms.Take();
    return w;
  }
};

int Soak(const SoakOptions& o) {
  TempDir dir;
  const std::string db = dir.File("prism.db");
  std::cerr << "building the Rank experiment (" << o.rank_trials
            << " completed trials) ...\n";
  const int64_t rank_id = BuildRankDb(db, o.rank_trials, /*points=*/1000,
                                      /*val_every=*/5);
  std::unique_ptr<server::Coordinator> c = StartCoordinator(db);
  const std::string worker_token = Token(c.get(), "farm", v1::ROLE_WORKER);
  const std::string viewer_token = Token(c.get(), "viewer", v1::ROLE_VIEWER);
  const int64_t ingest_id = SubmitIngestExperiment(c.get(), o.workers);
  c->results()->WaitIdle();
  v1::RankRequest rank_req;
  rank_req.set_experiment_id(rank_id);
  rank_req.set_page_size(50);
  absl::StatusOr<v1::RankResponse> ranked = c->results()->Rank(rank_req);
  if (!ranked.ok()) {
    std::cerr << "coordinator_bench: " << ranked.status() << "\n";
    return 1;
  }

  SoakCounters counters;
  std::vector<int64_t> acked(o.workers), trial_ids(o.workers);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, stop{false}, failed_setup{false};
  std::vector<std::thread> threads;
  const ReportLoop fleet{c->grpc_address(),
                         worker_token,
                         o.workers,
                         o.points_per_report,
                         o.interval_ms,
                         &ready,
                         &go,
                         &stop,
                         &failed_setup,
                         &counters.report_ms,
                         &counters.points,
                         &counters.report_errors,
                         &acked,
                         &trial_ids};
  for (int w = 0; w < o.workers; ++w) {
    threads.emplace_back([&fleet, w] { fleet.Run(w); });
  }
  for (int r = 0; r < o.readers; ++r) {
    threads.emplace_back([&, r] {
      auto stub = v1::ResultsService::NewStub(
          NewChannel(c->grpc_address(), o.workers + r));
      v1::RankResponse first;
      grpc::Status connected =
          stub->Rank(SetupCtx(viewer_token).get(), rank_req, &first);
      if (!connected.ok()) {
        std::cerr << "coordinator_bench: a reader's first Rank failed: "
                  << connected.error_message() << "\n";
        failed_setup = true;
      }
      ++ready;
      while (!go) std::this_thread::yield();
      while (!stop && !failed_setup) {
        v1::RankResponse resp;
        const Clock::time_point t0 = Clock::now();
        grpc::Status s = stub->Rank(Ctx(viewer_token).get(), rank_req, &resp);
        counters.rank_ms.Record(Ms(Clock::now() - t0));
        if (!s.ok()) ++counters.rank_errors;
      }
    });
  }
  while (ready < o.workers + o.readers)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (failed_setup) {
    go = true;
    for (std::thread& t : threads) t.join();
    return 1;
  }

  std::cout << fmt::format(
      "soak: {} min; {} workers each reporting {} points every {} ms into "
      "experiment {}; {} threads calling ResultsService.Rank (page of 50) "
      "over gRPC in a loop on experiment {} ({} completed trials, {} ranked "
      "schedules); durability normal\n",
      o.minutes, o.workers, o.points_per_report, o.interval_ms, ingest_id,
      o.readers, rank_id, o.rank_trials, ranked->total());
  std::cout << fmt::format(
      "RSS is the whole process: the coordinator and all {} simulated "
      "clients (threads, channels); in MiB, total (anonymous + "
      "file-backed). RSS with every client connected, before the load: {}\n",
      o.workers + o.readers, Rss::Read().ToString());
  std::cout << "latency percentiles from 1%-wide histogram buckets\n";
  std::cout << fmt::format("{:>6} {:>9} {:>19} {:>8} {:>19} {:>22} {:>7}\n",
                           "minute", "points/s", "report p50 / p99 ms",
                           "Rank/s", "Rank p50 / p99 ms", "RSS (anon + file)",
                           "failed reports / Ranks");
  const Clock::time_point start = Clock::now();
  go = true;
  SoakWindow total;
  Rss rss_first, rss_last;
  Clock::time_point last = start;
  for (int m = 1; m <= o.minutes; ++m) {
    std::this_thread::sleep_until(start + std::chrono::minutes(m));
    const Clock::time_point now = Clock::now();
    const SoakWindow window = counters.Take(Seconds(now - last));
    last = now;
    rss_last = Rss::Read();
    if (m == 1) rss_first = rss_last;
    std::cout << window.Row(absl::StrCat(m), rss_last.ToString()) << std::endl;
    total.Add(window);
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  // What finished after the last minute counts in the totals too.
  total.Add(counters.Take(Seconds(Clock::now() - last)));
  std::cout << total.Row("all", "") << "\n";
  std::cout << fmt::format(
      "totals: {} points acknowledged ({:.0f} reports), {} Rank calls in "
      "{:.1f} s; report max {:.1f} ms, Rank max {:.1f} ms\n",
      total.points, static_cast<double>(total.report_ms.n), total.rank_ms.n,
      total.seconds, total.report_ms.max_ms, total.rank_ms.max_ms);
  std::error_code size_error;
  std::cout << fmt::format(
      "RSS: {} MiB at minute 1, {} MiB at the end: {:+.1f} MiB ({:+.1f} "
      "anonymous, {:+.1f} file-backed); database file {:.0f} MiB\n",
      rss_first.ToString(), rss_last.ToString(),
      rss_last.total - rss_first.total, rss_last.anon - rss_first.anon,
      rss_last.file - rss_first.file,
      static_cast<double>(fs::file_size(db, size_error)) / (1 << 20));

  int64_t acked_points = 0, stored = 0;
  for (int w = 0; w < o.workers; ++w) {
    acked_points += acked[w];
    stored += StoredPoints(c.get(), trial_ids[w]);
  }
  std::cout << fmt::format(
      "acknowledged {} points, in the database {}: lost {}\n", acked_points,
      stored, acked_points - stored);
  c->Shutdown();
  c.reset();

  absl::StatusOr<storage::DatabaseCheck> check = storage::CheckDatabase(db);
  if (!check.ok()) {
    std::cout << "database check could not run: " << check.status() << "\n";
    return 1;
  }
  std::cout << fmt::format(
      "database check (storage::CheckDatabase, after shutdown): {} "
      "experiments, {} trials, {} points: {}\n",
      check->experiments, check->trials, check->points,
      check->problems.empty()
          ? std::string("every invariant holds")
          : fmt::format("{} problems", check->problems.size()));
  for (size_t i = 0; i < std::min<size_t>(20, check->problems.size()); ++i)
    std::cout << "  " << check->problems[i] << "\n";
  const bool clean = acked_points == stored && total.report_errors == 0 &&
                     total.rank_errors == 0 && check->problems.empty();
  return clean ? 0 : 1;
}

// --- hostile
// -------------------------------------------------------------------

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

// HostileCounters are what the hostile clients got, shared by their threads.
struct HostileCounters {
  std::atomic<int64_t> watch_open{0};
  std::atomic<int64_t> watch_refused{0};
  std::atomic<int64_t> watch_events{0};
  std::atomic<int64_t> watch_rounds{0};  // messages: one per delivery round
  std::atomic<int64_t> watch_cut{0};     // ended by the server mid-stream
  std::atomic<int64_t> list_pages{0};
  std::atomic<int64_t> list_bytes_max{0};
  std::atomic<int64_t> list_errors{0};
  std::atomic<int64_t> specs_refused{0};
  std::atomic<int64_t> specs_accepted{0};
  std::atomic<int64_t> bodies_refused{0};
  std::atomic<int64_t> bodies_other{0};
  std::atomic<int64_t> slow_open{0};
  std::atomic<int64_t> slow_closed_by_server{0};
  std::atomic<int64_t> points{0};
  std::atomic<int64_t> report_errors{0};
  LatencyRecorder report_ms;
  LatencyRecorder dashboard_ms;
  std::atomic<int64_t> dashboard_errors{0};
};

// CpuSeconds is the user + system CPU time a process (or "self") has used.
double CpuSeconds(const std::string& process = "self") {
  std::ifstream stat("/proc/" + process + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)),
                   std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) end with ')'.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// OversizedSpecs are specs each limit refuses: too many seeds, too many
// explicit schedules, a spec text past max_spec_bytes, a name past
// max_string_bytes.
std::vector<v1::SubmitRequest> OversizedSpecs() {
  std::vector<v1::SubmitRequest> specs(4);
  for (v1::SubmitRequest& r : specs) {
    r.mutable_spec()->mutable_model()->set_preset("tiny");
  }
  for (int s = 1; s <= 300'000; ++s) specs[0].mutable_spec()->add_seeds(s);
  specs[1].mutable_spec()->add_seeds(1);
  for (int i = 0; i < 200'000; ++i) {
    specs[1].mutable_spec()->add_schedules("4x6");
  }
  specs[2].set_spec_text(std::string(int64_t{5} << 20, '#'));
  specs[3].mutable_spec()->add_seeds(1);
  specs[3].mutable_spec()->set_name(std::string(1 << 20, 'n'));
  return specs;
}

// SlowConnection sends an HTTP request one byte every `gap`, never ending
// its headers (slowloris); false once the server has closed it.
class SlowConnection {
 public:
  SlowConnection(const std::string& host, int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    if (fd_ < 0 ||
        connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Close();
    }
  }
  ~SlowConnection() { Close(); }
  bool open() const { return fd_ >= 0; }

  // Drip sends the next byte; false when the server has closed the socket.
  bool Drip() {
    if (fd_ < 0) return false;
    static constexpr char kRequest[] =
        "GET /api/v1/experiments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    const char byte =
        sent_ < sizeof kRequest - 1 ? kRequest[sent_] : 'a' + sent_ % 26;
    ++sent_;
    if (send(fd_, &byte, 1, MSG_NOSIGNAL) != 1) {
      Close();
      return false;
    }
    char buffer[256];
    const ssize_t n = recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) {  // orderly close (a 408 or a timeout) by the server
      Close();
      return false;
    }
    return true;
  }

 private:
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
  size_t sent_ = 0;
};

// CreateTokenOver issues a token through the AuthService as the admin.
std::string CreateTokenOver(v1::AuthService::Stub* auth,
                            const std::string& user, v1::Role role) {
  v1::CreateTokenRequest req;
  req.set_user(user);
  req.set_role(role);
  v1::CreateTokenResponse resp;
  grpc::Status s = auth->CreateToken(SetupCtx(kAdminToken).get(), req, &resp);
  if (!s.ok()) {
    std::cerr << "coordinator_bench: CreateToken: " << s.error_message()
              << "\n";
    std::exit(1);
  }
  return resp.token();
}

// HostileTarget is what the hostile clients aim at.
struct HostileTarget {
  std::string grpc_address;
  std::string http_host;
  int http_port = 0;
  std::string user_token;
  std::vector<std::string> viewer_tokens;
  int64_t experiment_id = 0;
};

// ClientCounterFields names the counters the hostile clients keep, so a
// clients process can hand them to the bench (`name=value` on a line).
std::vector<std::pair<std::string, std::atomic<int64_t>*>> ClientCounterFields(
    HostileCounters* k) {
  return {{"watch_open", &k->watch_open},
          {"watch_refused", &k->watch_refused},
          {"watch_events", &k->watch_events},
          {"watch_rounds", &k->watch_rounds},
          {"watch_cut", &k->watch_cut},
          {"list_pages", &k->list_pages},
          {"list_bytes_max", &k->list_bytes_max},
          {"list_errors", &k->list_errors},
          {"specs_refused", &k->specs_refused},
          {"specs_accepted", &k->specs_accepted},
          {"bodies_refused", &k->bodies_refused},
          {"bodies_other", &k->bodies_other},
          {"slow_open", &k->slow_open},
          {"slow_closed_by_server", &k->slow_closed_by_server}};
}

// Watcher is one hostile Watch stream on a channel of its own, driven by
// gRPC's callback API: it reads every round until the stream ends.
class Watcher final : public grpc::ClientReadReactor<v1::WatchResponse> {
 public:
  Watcher(std::shared_ptr<grpc::Channel> channel, const std::string& token,
          int64_t experiment_id, HostileCounters* k)
      : stub_(v1::ResultsService::NewStub(std::move(channel))), k_(*k) {
    ctx_.AddMetadata("authorization", "Bearer " + token);
    req_.set_experiment_id(experiment_id);
  }

  void Start() {
    started_ = true;
    stub_->async()->Watch(&ctx_, &req_, this);
    StartRead(&round_);
    StartCall();
  }
  void Cancel() { ctx_.TryCancel(); }
  void WaitDone() {
    if (started_) done_.WaitForNotification();
  }

  // Reads are one at a time and OnDone comes after the last: opened_
  // needs no lock.
  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (!opened_) ++k_.watch_open;
    opened_ = true;
    k_.watch_events += round_.events_size();
    ++k_.watch_rounds;
    StartRead(&round_);
  }
  void OnDone(const grpc::Status& s) override {
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++(opened_ ? k_.watch_cut : k_.watch_refused);
    }
    done_.Notify();
  }

 private:
  std::unique_ptr<v1::ResultsService::Stub> stub_;
  HostileCounters& k_;
  grpc::ClientContext ctx_;
  v1::WatchRequest req_;
  v1::WatchResponse round_;
  bool started_ = false;
  bool opened_ = false;
  absl::Notification done_;
};

// HostileClients are the hostile kinds: Watch streams (callbacks), and
// threads for maximal List pages, oversized specs and bodies, slow
// connections (not the reporting workers, not the dashboard probe). Start
// returns once every thread is connected and set up; they push from Go
// until Stop.
class HostileClients {
 public:
  HostileClients(const HostileOptions& o, HostileTarget t, HostileCounters* k)
      : o_(o), t_(std::move(t)), k_(*k), oversized_(OversizedSpecs()) {}
  ~HostileClients() { Stop(); }

  void Start() {
    StartThreads();
    while (ready_ < static_cast<int>(threads_.size())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void Go() { go_ = true; }
  void Stop() {
    stop_ = go_ = true;  // the watchers' thread cancels their streams
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void StartThreads();

  const HostileOptions o_;
  const HostileTarget t_;
  HostileCounters& k_;
  const std::vector<v1::SubmitRequest> oversized_;
  std::atomic<int> ready_{0};
  std::atomic<bool> go_{false}, stop_{false};
  std::vector<std::thread> threads_;
};

void HostileClients::StartThreads() {
  // Watchers: one channel each, spread over the users, on the experiment
  // the workers report into (every report is an event). They are callback
  // streams driven by gRPC's few threads, not a thread each: 1,000 client
  // threads woken at once take the coordinator's cores even at SCHED_IDLE
  // (weight 3 each), which clients on other hosts would not.
  threads_.emplace_back([this] {
    std::vector<std::shared_ptr<grpc::Channel>> channels;
    for (int i = 0; i < o_.watch_streams; ++i) {
      channels.push_back(NewChannel(t_.grpc_address, 1000 + i));
      channels.back()->GetState(/*try_to_connect=*/true);
    }
    // Connected before the clock starts, like dashboards left open: the
    // storm measured is of Watch calls, not of TCP handshakes.
    std::vector<std::unique_ptr<Watcher>> watchers;
    for (int i = 0; i < o_.watch_streams; ++i) {
      channels[i]->WaitForConnected(std::chrono::system_clock::now() +
                                    std::chrono::seconds(30));
      watchers.push_back(std::make_unique<Watcher>(
          channels[i], t_.viewer_tokens[i % t_.viewer_tokens.size()],
          t_.experiment_id, &k_));
    }
    ++ready_;
    while (!go_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!stop_) {
      for (auto& w : watchers) w->Start();  // all at once
      while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      for (auto& w : watchers) w->Cancel();
      for (auto& w : watchers) w->WaitDone();
    }
  });
  // Maximal List pages: the largest page size over a 64-layer space.
  for (int i = 0; i < o_.list_threads; ++i) {
    threads_.emplace_back([this, i] {
      auto stub = v1::ScheduleService::NewStub(
          NewChannel(t_.grpc_address, 100'000 + i));
      v1::ListSchedulesRequest req;
      req.mutable_space()->set_d_model(4096);
      req.mutable_space()->set_layers(64);
      req.mutable_space()->set_base_heads(64);
      req.set_page_size(server::kMaxSchedulePageSize);
      ++ready_;
      while (!go_) std::this_thread::yield();
      while (!stop_) {
        v1::ListSchedulesResponse resp;
        grpc::ClientContext ctx;
        ctx.AddMetadata("authorization", "Bearer " + t_.viewer_tokens[0]);
        if (stub->List(&ctx, req, &resp).ok()) {
          ++k_.list_pages;
          const int64_t bytes = static_cast<int64_t>(resp.ByteSizeLong());
          int64_t max = k_.list_bytes_max.load();
          while (bytes > max &&
                 !k_.list_bytes_max.compare_exchange_weak(max, bytes)) {
          }
          req.set_page_token(resp.next_page_token());
        } else {
          ++k_.list_errors;
        }
      }
    });
  }
  // Oversized specs over gRPC and oversized bodies over HTTP.
  for (int i = 0; i < o_.oversized_threads; ++i) {
    threads_.emplace_back([this, i] {
      auto stub = v1::ExperimentService::NewStub(
          NewChannel(t_.grpc_address, 200'000 + i));
      ++ready_;
      while (!go_) std::this_thread::yield();
      for (size_t n = 0; !stop_; ++n) {
        v1::SubmitResponse resp;
        grpc::Status s = stub->Submit(Ctx(t_.user_token).get(),
                                      oversized_[n % oversized_.size()], &resp);
        ++(s.ok() ? k_.specs_accepted : k_.specs_refused);
      }
    });
  }
  for (int i = 0; i < o_.body_threads; ++i) {
    threads_.emplace_back([this] {
      const std::string body(int64_t{32} << 20, 'x');
      ++ready_;
      while (!go_) std::this_thread::yield();
      while (!stop_) {
        httplib::Client client(t_.http_host, t_.http_port);
        httplib::Result r =
            client.Post("/api/v1/experiments", body, "application/json");
        // Refused: 413, or the connection closed under the body (the
        // coordinator answers from the headers and reads none of it).
        const bool refused = r ? r->status == 413
                               : r.error() == httplib::Error::Write ||
                                     r.error() == httplib::Error::Read;
        ++(refused ? k_.bodies_refused : k_.bodies_other);
      }
    });
  }
  // Slow connections: each drips a byte a second into headers it never
  // ends.
  threads_.emplace_back([this] {
    std::vector<std::unique_ptr<SlowConnection>> slow;
    ++ready_;
    while (!go_) std::this_thread::yield();
    for (int i = 0; i < o_.slow_connections; ++i) {
      slow.push_back(
          std::make_unique<SlowConnection>(t_.http_host, t_.http_port));
      if (slow.back()->open()) ++k_.slow_open;
    }
    while (!stop_) {
      for (auto& s : slow) {
        if (s->open() && !s->Drip()) ++k_.slow_closed_by_server;
      }
      for (int t = 0; t < 10 && !stop_; ++t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });
}

// HostileClientsMain is the `hostile-clients` subcommand: the hostile
// clients alone, in a process of their own, for `seconds` once all are set
// up (it then writes `ready_file`). At the end it prints one line on stdout:
// its CPU seconds and its counters, `name=value` each.
int HostileClientsMain(const HostileOptions& o, const HostileTarget& t,
                       int seconds, const std::string& ready_file) {
  if (o.clients_idle) {
    // Before any thread starts: each inherits the policy of its creator.
    const sched_param param{};
    if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) {
      std::cerr << "coordinator_bench: hostile-clients: SCHED_IDLE: "
                << std::strerror(errno) << "\n";
      return 1;
    }
  }
  HostileCounters k;
  double cpu = 0;
  {
    HostileClients clients(o, t, &k);
    clients.Start();
    std::ofstream(ready_file) << "ready\n";
    const double cpu_before = CpuSeconds();
    clients.Go();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    clients.Stop();
    cpu = CpuSeconds() - cpu_before;
  }
  std::string line = fmt::format("cpu_seconds={:.2f}", cpu);
  for (const auto& [name, value] : ClientCounterFields(&k)) {
    absl::StrAppend(&line, " ", name, "=", value->load());
  }
  std::cout << line << std::endl;
  return 0;
}

// SpawnHostileClients starts `hostile-clients` at nice o.clients_nice (under
// SCHED_IDLE with o.clients_idle) and returns once its clients are set up.
absl::StatusOr<cli::Subprocess> SpawnHostileClients(const HostileOptions& o,
                                                    const HostileTarget& t,
                                                    int seconds,
                                                    const TempDir& dir) {
  const std::string nice = cli::FindProgram("nice");
  if (nice.empty()) return absl::NotFoundError("no `nice` on PATH");
  const std::string ready_file = dir.File("clients.ready");
  cli::SpawnOptions spawn;
  spawn.argv = {nice,
                "-n",
                std::to_string(o.clients_nice),
                cli::SelfExecutable(),
                "hostile-clients",
                "--grpc",
                t.grpc_address,
                "--http-host",
                t.http_host,
                "--http-port",
                std::to_string(t.http_port),
                "--user-token",
                t.user_token,
                "--experiment",
                std::to_string(t.experiment_id),
                "--seconds",
                std::to_string(seconds),
                "--watch-streams",
                std::to_string(o.watch_streams),
                "--list-threads",
                std::to_string(o.list_threads),
                "--oversized-threads",
                std::to_string(o.oversized_threads),
                "--body-threads",
                std::to_string(o.body_threads),
                "--slow-connections",
                std::to_string(o.slow_connections),
                "--ready-file",
                ready_file};
  if (o.clients_idle) spawn.argv.push_back("--sched-idle");
  for (const std::string& token : t.viewer_tokens) {
    spawn.argv.push_back("--viewer-token");
    spawn.argv.push_back(token);
  }
  spawn.stdout_path = dir.File("clients.out");
  spawn.stderr_path = dir.File("clients.err");
  absl::StatusOr<cli::Subprocess> p = cli::Subprocess::Spawn(spawn);
  if (!p.ok()) return p.status();
  // Setting up 1,000 channels at nice 19 beside an idle coordinator takes
  // seconds; ten minutes means something is wrong.
  const Clock::time_point deadline = Clock::now() + std::chrono::minutes(10);
  while (!fs::exists(ready_file)) {
    if (!p->Running() || Clock::now() > deadline) {
      return absl::InternalError(fmt::format(
          "the clients process did not get ready (see {})", spawn.stderr_path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return p;
}

// CollectHostileClients waits for the clients process to end, adds its
// counters into `k` and returns its CPU seconds.
absl::StatusOr<double> CollectHostileClients(cli::Subprocess* p,
                                             const std::string& out,
                                             HostileCounters* k) {
  absl::StatusOr<int> status = p->Wait(absl::Minutes(2));
  if (!status.ok()) {
    p->Stop(absl::Seconds(5));
    return status.status();
  }
  if (*status != 0) {
    return absl::InternalError(
        fmt::format("the clients process exited with {}", *status));
  }
  std::ifstream file(out);
  std::string line;
  std::getline(file, line);
  double cpu = -1;
  for (absl::string_view field : absl::StrSplit(line, ' ')) {
    const std::pair<std::string, std::string> kv =
        absl::StrSplit(field, absl::MaxSplits('=', 1));
    if (kv.first == "cpu_seconds") {
      if (!absl::SimpleAtod(kv.second, &cpu)) cpu = -1;
      continue;
    }
    for (const auto& [name, value] : ClientCounterFields(k)) {
      int64_t n = 0;
      if (name == kv.first && absl::SimpleAtoi(kv.second, &n)) *value += n;
    }
  }
  if (cpu < 0) {
    return absl::InternalError("the clients process printed no figures: " +
                               line);
  }
  return cpu;
}

int Hostile(const HostileOptions& o) {
  TempDir dir;
  const std::string db = dir.File("prism.db");
  // The coordinator runs as its own process, with its default limits, so
  // its RSS is its own and not the clients'.
  cli::CoordinatorLaunch launch;
  launch.binary = o.prism;
  launch.args = {"--db",
                 db,
                 "--listen",
                 "127.0.0.1:0",
                 "--http",
                 "127.0.0.1:0",
                 "--lease-seconds",
                 "600",
                 "--heartbeat-seconds",
                 "60",
                 "--log-level",
                 "warning"};
  // Every hostile client here is 127.0.0.1, where in use they would be many
  // hosts: one peer's connection cap (64) would refuse the slow connections
  // and the dashboard probe alike. Raised to what the run opens, unless a
  // --coordinator-arg sets it.
  if (std::none_of(o.coordinator_args.begin(), o.coordinator_args.end(),
                   [](const std::string& arg) {
                     return absl::StartsWith(arg,
                                             "--http-max-connections-per-peer");
                   })) {
    launch.args.push_back(absl::StrCat("--http-max-connections-per-peer=",
                                       o.slow_connections + 64));
  }
  for (const std::string& arg : o.coordinator_args) launch.args.push_back(arg);
  launch.env = {absl::StrCat("PRISM_ADMIN_TOKEN=", kAdminToken)};
  launch.log_path = dir.File("coordinator.log");
  launch.ready_file = dir.File("ready.json");
  absl::StatusOr<cli::LocalCoordinator> c = cli::StartCoordinator(launch);
  if (!c.ok()) {
    std::cerr << "coordinator_bench: " << c.status() << "\n";
    return 1;
  }
  const std::string grpc_address = c->endpoints.grpc;
  const std::string pid = std::to_string(c->process.pid());
  auto auth = v1::AuthService::NewStub(NewChannel(grpc_address, -1));
  const std::string worker_token =
      CreateTokenOver(auth.get(), "farm", v1::ROLE_WORKER);
  const std::string user_token =
      CreateTokenOver(auth.get(), "mallory", v1::ROLE_USER);
  std::vector<std::string> viewer_tokens;
  for (int u = 0; u < o.watch_users; ++u) {
    viewer_tokens.push_back(CreateTokenOver(
        auth.get(), absl::StrCat("viewer", u), v1::ROLE_VIEWER));
  }
  auto experiments =
      v1::ExperimentService::NewStub(NewChannel(grpc_address, -2));
  v1::SubmitRequest ingest;
  ingest.mutable_spec()->mutable_model()->set_preset("tiny");
  ingest.mutable_spec()->mutable_budget()->set_steps(kIngestSteps);
  ingest.mutable_spec()->mutable_budget()->set_log_every(1);
  ingest.mutable_spec()->mutable_budget()->set_eval_every(
      static_cast<int32_t>(kIngestSteps));
  for (int s = 1; s <= (o.workers + 20) / 21; ++s) {
    ingest.mutable_spec()->add_seeds(s);
  }
  v1::SubmitResponse submitted;
  grpc::Status submit_status =
      experiments->Submit(SetupCtx(user_token).get(), ingest, &submitted);
  if (!submit_status.ok()) {
    std::cerr << "coordinator_bench: Submit: " << submit_status.error_message()
              << "\n";
    return 1;
  }
  const int64_t ingest_id = submitted.experiment().id();
  const std::string http = c->endpoints.http;
  const std::string http_host = http.substr(0, http.rfind(':'));
  const int http_port = std::stoi(http.substr(http.rfind(':') + 1));

  HostileCounters k;
  std::vector<int64_t> acked(o.workers), trial_ids(o.workers);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, stop{false}, failed_setup{false};
  std::vector<std::thread> threads;
  const ReportLoop fleet{
      grpc_address,  worker_token, o.workers, o.points_per_report,
      o.interval_ms, &ready,       &go,       &stop,
      &failed_setup, &k.report_ms, &k.points, &k.report_errors,
      &acked,        &trial_ids};
  for (int w = 0; w < o.workers; ++w) {
    threads.emplace_back([&fleet, w] { fleet.Run(w); });
  }
  // The dashboard as a person uses it meanwhile: one API call a second.
  threads.emplace_back([&] {
    ++ready;
    while (!go) std::this_thread::yield();
    while (!stop) {
      httplib::Client client(http_host, http_port);
      client.set_connection_timeout(10);
      client.set_read_timeout(10);
      const Clock::time_point t0 = Clock::now();
      httplib::Result r = client.Get(
          "/api/v1/experiments",
          httplib::Headers{{"Authorization", "Bearer " + viewer_tokens[0]}});
      if (r && r->status == 200) {
        k.dashboard_ms.Record(Ms(Clock::now() - t0));
      } else {
        ++k.dashboard_errors;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });

  const int clients = static_cast<int>(threads.size());
  while (ready < clients)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (failed_setup) {
    stop = go = true;
    for (std::thread& t : threads) t.join();
    return 1;
  }
  const HostileTarget target{grpc_address, http_host,     http_port,
                             user_token,   viewer_tokens, ingest_id};
  const int w = o.window_seconds;
  const int windows = std::max(1, o.seconds / w);
  const bool clients_apart = o.clients_nice >= 0;
  const std::string clients_sched =
      o.clients_idle ? std::string("SCHED_IDLE")
                     : fmt::format("nice {}", o.clients_nice);
  std::optional<HostileClients> local_clients;
  std::optional<cli::Subprocess> clients_process;
  if (clients_apart) {
    absl::StatusOr<cli::Subprocess> p =
        SpawnHostileClients(o, target, w * windows, dir);
    if (!p.ok()) {
      std::cerr << "coordinator_bench: hostile clients: " << p.status() << "\n";
      stop = go = true;
      for (std::thread& t : threads) t.join();
      return 1;
    }
    clients_process.emplace(std::move(*p));
  } else {
    local_clients.emplace(o, target, &k);
    local_clients->Start();
  }
  const Rss before = Rss::Read(pid);
  const double coordinator_cpu_before = CpuSeconds(pid);
  const double clients_cpu_before = CpuSeconds();
  std::cout << fmt::format(
      "hostile: {} s; {} workers each reporting {} points every {} ms into "
      "experiment {}; at once: {} Watch streams attempted on it by {} "
      "viewers, {} threads of maximal ScheduleService.List pages (page size "
      "{}, 4096/64/64), {} threads of oversized specs and {} of 32 MiB HTTP "
      "bodies, {} slow HTTP connections (a byte a second), one dashboard call "
      "a second\n",
      o.seconds, o.workers, o.points_per_report, o.interval_ms, ingest_id,
      o.watch_streams, o.watch_users, o.list_threads,
      server::kMaxSchedulePageSize, o.oversized_threads, o.body_threads,
      o.slow_connections);
  std::cout << fmt::format(
      "RSS is the coordinator process's (pid {}), MiB total (anonymous + "
      "file-backed); before the load: {}\n",
      pid, before.ToString());
  std::cout << fmt::format("{:>5} {:>9} {:>19} {:>7} {:>9} {:>9} {:>22}\n", "s",
                           "points/s", "report p50 / p99 ms", "watches",
                           "events/s", "msgs/s", "RSS (anon + file)");
  if (clients_apart) {
    std::cout << fmt::format(
        "the hostile clients run in process {} ({}; watch figures below "
        "come at the end)\n",
        clients_process->pid(), clients_sched);
  }
  const Clock::time_point start = Clock::now();
  go = true;
  if (local_clients) local_clients->Go();
  LatencyCounts report_total;
  double rss_max = before.total;
  int64_t events_last = 0, rounds_last = 0, points_last = 0;
  for (int wnd = 1; wnd <= windows; ++wnd) {
    std::this_thread::sleep_until(start + std::chrono::seconds(w * wnd));
    const LatencyCounts window = k.report_ms.Take();
    report_total.Add(window);
    const Rss rss = Rss::Read(pid);
    rss_max = std::max(rss_max, rss.total);
    const int64_t events = k.watch_events.load(), points = k.points.load();
    const int64_t rounds = k.watch_rounds.load();
    std::cout
        << fmt::format(
               "{:>5} {:>9.0f} {:>8.3f} / {:<8.3f} {:>7} {:>9.0f} {:>9.0f} "
               "{:>22}",
               w * wnd, (points - points_last) / double(w),
               window.Percentile(50), window.Percentile(99),
               k.watch_open.load() - k.watch_cut.load(),
               (events - events_last) / double(w),
               (rounds - rounds_last) / double(w), rss.ToString())
        << std::endl;
    events_last = events;
    rounds_last = rounds;
    points_last = points;
  }
  const double seconds_run = Ms(Clock::now() - start) / 1000.0;
  const double coordinator_cpu = CpuSeconds(pid) - coordinator_cpu_before;
  const double bench_cpu = CpuSeconds() - clients_cpu_before;
  double clients_cpu = 0;
  if (local_clients) local_clients->Stop();
  stop = true;
  for (std::thread& t : threads) t.join();
  if (clients_process) {
    absl::StatusOr<double> cpu =
        CollectHostileClients(&*clients_process, dir.File("clients.out"), &k);
    if (!cpu.ok()) {
      std::cerr << "coordinator_bench: hostile clients: " << cpu.status()
                << "\n";
      return 1;
    }
    clients_cpu = *cpu;
  }
  report_total.Add(k.report_ms.Take());
  const LatencyCounts dashboard = k.dashboard_ms.Take();
  std::cout << fmt::format(
      "reports: {} points acknowledged, p50 {:.3f} ms, p99 {:.3f} ms, max "
      "{:.1f} ms, {} failed\n",
      k.points.load(), report_total.Percentile(50), report_total.Percentile(99),
      report_total.max_ms, k.report_errors.load());
  std::cout << fmt::format(
      "watch: {} opened, {} refused (RESOURCE_EXHAUSTED at open), {} cut off "
      "behind, {} events received in {} messages\n",
      k.watch_open.load(), k.watch_refused.load(), k.watch_cut.load(),
      k.watch_events.load(), k.watch_rounds.load());
  std::cout << fmt::format(
      "list: {} maximal pages, largest {:.1f} MiB, {} errors\n",
      k.list_pages.load(), k.list_bytes_max.load() / 1048576.0,
      k.list_errors.load());
  std::cout << fmt::format(
      "oversized: {} specs refused, {} accepted; {} HTTP bodies refused with "
      "413, {} answered otherwise\n",
      k.specs_refused.load(), k.specs_accepted.load(), k.bodies_refused.load(),
      k.bodies_other.load());
  std::cout << fmt::format(
      "slow connections: {} opened, {} closed by the server; dashboard "
      "calls: {} answered (p50 {:.1f} ms, max {:.1f} ms), {} failed\n",
      k.slow_open.load(), k.slow_closed_by_server.load(), dashboard.n,
      dashboard.Percentile(50), dashboard.max_ms, k.dashboard_errors.load());

  std::cout << fmt::format(
      "CPU over the run ({:.0f} s, {} cores = {:.0f} core-seconds): "
      "coordinator {:.1f} s, {}\n",
      seconds_run, std::thread::hardware_concurrency(),
      seconds_run * std::thread::hardware_concurrency(), coordinator_cpu,
      clients_apart
          ? fmt::format("this process (workers) {:.1f} s, the hostile "
                        "clients' process ({}) {:.1f} s",
                        bench_cpu, clients_sched, clients_cpu)
          : fmt::format("this process (workers and hostile clients) {:.1f} s",
                        bench_cpu));
  const Rss after = Rss::Read(pid);
  auto results = v1::ResultsService::NewStub(NewChannel(grpc_address, -3));
  int64_t acked_points = 0, stored = 0;
  for (int w = 0; w < o.workers; ++w) {
    acked_points += acked[w];
    v1::GetTrialRequest req;
    req.set_trial_id(trial_ids[w]);
    v1::GetTrialResponse resp;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", absl::StrCat("Bearer ", kAdminToken));
    if (results->GetTrial(&ctx, req, &resp).ok()) stored += resp.points_size();
  }
  std::cout << fmt::format(
      "RSS: {} before, peak {:.1f}, {} at the end (bound {} MiB); "
      "acknowledged {} points, in the database {}: lost {}\n",
      before.ToString(), rss_max, after.ToString(), o.rss_bound_mib,
      acked_points, stored, acked_points - stored);
  c->process.Stop(absl::Seconds(20));
  const bool held = rss_max < static_cast<double>(o.rss_bound_mib) &&
                    report_total.Percentile(99) < 50.0 &&
                    k.specs_accepted == 0 && acked_points == stored;
  std::cout << (held ? "hostile: every bound held\n"
                     : "hostile: a bound did not hold\n");
  return held ? 0 : 1;
}

}  // namespace
}  // namespace prism::bench

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
