// The harness the coordinator_bench scenarios share (scenarios.h): a real
// coordinator in a temp dir, gRPC contexts and channels of their own,
// simulated reporting workers, latency histograms and the process's RSS.
// Each scenario is one file beside this one; main.cc parses the flags.
//
//   TempDir dir;
//   std::unique_ptr<server::Coordinator> c =
//       StartCoordinator(dir.File("prism.db"));
//   ReportingWorker w(c->grpc_address(), /*id=*/0,
//                     Token(c.get(), "farm", v1::ROLE_WORKER), /*points=*/100);
//
// Thread-safety: the free functions are thread-safe; LatencyRecorder is
// safe to Record from many threads; the other classes belong to one thread
// (ReportLoop::Run to one per worker).
#ifndef PRISM_BENCH_COORDINATOR_HARNESS_H_
#define PRISM_BENCH_COORDINATOR_HARNESS_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "prism/v1/prism.grpc.pb.h"
#include "server/coordinator.h"

namespace prism::bench {

using Clock = std::chrono::steady_clock;

inline constexpr char kAdminToken[] = "prism_bench_admin";
// kIngestSteps is the budget of the experiment simulated workers report
// into: far more steps than any run here reaches (a paced worker logs 1,000
// steps a second), so its trials never end, while storage::CheckDatabase
// (which lists a trial's expected steps) stays cheap.
inline constexpr int64_t kIngestSteps = 10'000'000;

// Ms and Seconds return a duration in milliseconds and in seconds.
double Ms(Clock::duration d);
double Seconds(Clock::duration d);

// Percentile returns the p-th percentile (0..100, nearest rank) of `v`; 0
// when `v` is empty.
double Percentile(std::vector<double> v, double p);

// Summary returns p50, p90, p99 and max of latencies `ms` on one line.
std::string Summary(const std::vector<double>& ms);

// StartCoordinator creates and starts a coordinator on the SQLite file `db`
// (gRPC and HTTP on loopback, admin token kAdminToken); exits the process
// with the error on stderr if it cannot.
std::unique_ptr<server::Coordinator> StartCoordinator(
    const std::string& db, const std::string& durability = "normal");

// Ctx returns a context that carries `token` as the call's bearer token.
std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token);

// SetupCtx is Ctx for a client's first calls, made before the clock starts:
// they wait for the channel to connect (a minute at most) rather than fail
// while hundreds of clients connect at once.
std::unique_ptr<grpc::ClientContext> SetupCtx(const std::string& token);

// NewChannel opens a channel of its own (no subchannel sharing), like a
// separate worker process would.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address, int id);

// Token issues a token for (user, role) in process, as the admin.
std::string Token(server::Coordinator* c, const std::string& user,
                  v1::Role role);

// SubmitTiny submits a tiny-preset experiment of `user` with seeds
// 1..`seeds` and returns its id; exits the process if it is refused.
int64_t SubmitTiny(server::Coordinator* c, const std::string& user, int seeds,
                   const v1::Budget& budget = v1::Budget());

// SubmitIngestExperiment submits an experiment with at least `workers` trials
// (21 schedules of the tiny preset per seed) whose cadence fits the
// simulated workers' curves: train every step, val at 0 and at the last
// step, kIngestSteps steps.
int64_t SubmitIngestExperiment(server::Coordinator* c, int workers);

// StoredPoints counts the points the database holds for `trial_id`.
int64_t StoredPoints(server::Coordinator* c, int64_t trial_id);

// BuildRankDb fills `db` with one finished experiment of `trials` trials of
// about `points` points each, one in `val_every` of them a val point,
// written through the store as the coordinator would, and returns the
// experiment's id. The curves follow the trainer's cadence (train at every
// step 1..S with S = points - points / val_every; val at 0, every
// val_every - 1 steps and at S), so the database passes
// storage::CheckDatabase.
int64_t BuildRankDb(const std::string& db, int trials, int points,
                    int val_every);

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
        (std::filesystem::temp_directory_path() / "prism-bench-XXXXXX")
            .string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const {
    return (std::filesystem::path(path_) / name).string();
  }

 private:
  std::string path_;
};

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

}  // namespace prism::bench

#endif  // PRISM_BENCH_COORDINATOR_HARNESS_H_
