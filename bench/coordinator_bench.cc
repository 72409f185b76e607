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
//
// Simulated workers emit what a trainer with log_every 1 would (val at step
// 0, then train steps 1, 2, ...) into an experiment whose budget never ends,
// so `prism db check` holds on a bench database.
//
// Results go in bench/RESULTS.md ("Coordinator").
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "fmt/format.h"
#include "prism/v1/prism.grpc.pb.h"
#include "scheduler/ranking.h"
#include "scheduler/schedule.h"
#include "scheduler/space.h"
#include "server/convert.h"
#include "server/coordinator.h"
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

  static Rss Read() {
    Rss rss;
    std::ifstream status("/proc/self/status");
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
  for (int w = 0; w < o.workers; ++w) {
    threads.emplace_back([&, w] {
      ReportingWorker worker(c->grpc_address(), w, worker_token,
                             o.points_per_report);
      if (!worker.Start()) failed_setup = true;
      trial_ids[w] = worker.trial_id();
      ++ready;
      while (!go) std::this_thread::yield();
      Clock::time_point next =
          Clock::now() +
          std::chrono::milliseconds(o.interval_ms * w / o.workers);
      while (!stop && !failed_setup && worker.HasSteps()) {
        if (o.interval_ms > 0) {
          std::this_thread::sleep_until(next);
          next += std::chrono::milliseconds(o.interval_ms);
        }
        int64_t stored = 0;
        const Clock::time_point t0 = Clock::now();
        grpc::Status s = worker.Report(&stored);
        counters.report_ms.Record(Ms(Clock::now() - t0));
        acked[w] += stored;
        counters.points += stored;
        if (!s.ok()) ++counters.report_errors;
      }
    });
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

}  // namespace
}  // namespace prism::bench

int main(int argc, char** argv) {
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
  CLI11_PARSE(app, argc, argv);
  prism::SetLogLevel(prism::LogLevel::kWarning);
  if (ingest->parsed())
    return prism::bench::Ingest(load, durability, rounds, optuna);
  if (lease->parsed()) return prism::bench::Lease(leases);
  if (soak->parsed()) return prism::bench::Soak(soak_options);
  return prism::bench::Rank(trials, rank_points, val_every, db);
}
