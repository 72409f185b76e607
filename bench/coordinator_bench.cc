// coordinator_bench: the coordinator's performance targets, measured on a
// real coordinator (SQLite file in a temp dir, gRPC on loopback).
//
//   coordinator_bench ingest [--workers 64] [--seconds 10] [--points 100]
//       64 simulated workers, one channel each, report loss points in a
//       closed loop; points/s, report latency percentiles, and a check that
//       every acknowledged point is in the database. Then, in the same run,
//       Optuna's RDB storage on SQLite recording intermediate values from 8
//       processes (bench/reference/optuna_ingest_reference.py) as reference.
//   coordinator_bench lease [--leases 2000]
//       Lease -> task latency at the coordinator (QueueManager::Lease) and
//       over loopback gRPC, with 2,520 queued trials of 6 experiments of 3
//       users (fair share in play).
//   coordinator_bench rank [--trials 10000] [--points 1000] [--db FILE]
//       Rank of an experiment with 10,000 completed trials x 1,000 points:
//       cold (fresh ranking cache) and warm, in-process and over gRPC.
//
// Results go in bench/RESULTS.md ("Coordinator").
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
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
#include "storage/sqlite_store.h"

namespace prism::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kAdminToken[] = "prism_bench_admin";

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
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

std::unique_ptr<server::Coordinator> StartCoordinator(const std::string& db) {
  server::CoordinatorOptions options;
  options.db_path = db;
  options.admin_token_env = kAdminToken;
  options.lease_seconds = 600;
  options.heartbeat_seconds = 60;
  options.max_grid_trials = 1'000'000;
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

int64_t SubmitTiny(server::Coordinator* c, const std::string& user, int seeds) {
  v1::SubmitRequest req;
  req.mutable_spec()->mutable_model()->set_preset("tiny");
  for (int s = 1; s <= seeds; ++s) req.mutable_spec()->add_seeds(s);
  absl::StatusOr<v1::SubmitResponse> r =
      c->experiments()->Submit(server::Caller{user, v1::ROLE_USER}, req);
  if (!r.ok()) {
    std::cerr << "coordinator_bench: " << r.status() << "\n";
    std::exit(1);
  }
  return r->experiment().id();
}

// --- ingest
// --------------------------------------------------------------------

struct WorkerResult {
  int64_t trial_id = 0;
  int64_t acked_points = 0;
  int64_t errors = 0;
  std::vector<double> latency_ms;
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

int Ingest(int workers, int seconds, int points_per_report, int interval_ms,
           const std::string& optuna_script) {
  TempDir dir;
  std::unique_ptr<server::Coordinator> c =
      StartCoordinator(dir.File("prism.db"));
  const std::string worker_token = Token(c.get(), "farm", v1::ROLE_WORKER);
  // 21 schedules x 4 seeds = 84 trials >= 64 workers.
  SubmitTiny(c.get(), "alice", (workers + 20) / 21);

  std::vector<WorkerResult> results(workers);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point deadline;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      auto stub = v1::WorkerService::NewStub(NewChannel(c->grpc_address(), w));
      v1::RegisterResponse reg;
      stub->Register(Ctx(worker_token).get(), v1::RegisterRequest(), &reg);
      v1::LeaseRequest lease_req;
      lease_req.set_worker_id(reg.worker_id());
      v1::LeaseResponse lease;
      stub->Lease(Ctx(worker_token).get(), lease_req, &lease);
      WorkerResult& r = results[w];
      r.trial_id = lease.task().trial().id();
      v1::ReportRequest req;
      req.set_worker_id(reg.worker_id());
      req.set_trial_id(lease.task().trial().id());
      req.set_attempt(lease.task().trial().attempt());
      for (int i = 0; i < points_per_report; ++i) {
        v1::LossPoint* p = req.add_points();
        p->set_split(v1::SPLIT_TRAIN);
        p->set_learning_rate(1e-3f);
        p->set_tokens_per_second(12345.0);
      }
      ++ready;
      while (!go) std::this_thread::yield();
      int64_t step = 0;
      // Paced workers start spread over one interval, like real ones would.
      Clock::time_point next =
          Clock::now() + std::chrono::milliseconds(interval_ms * w / workers);
      while (Clock::now() < deadline) {
        if (interval_ms > 0) {
          std::this_thread::sleep_until(next);
          next += std::chrono::milliseconds(interval_ms);
        }
        for (v1::LossPoint& p : *req.mutable_points()) {
          p.set_step(++step);
          p.set_loss(4.0f / static_cast<float>(step));
          p.set_elapsed_seconds(static_cast<double>(step));
        }
        v1::ReportResponse resp;
        const Clock::time_point t0 = Clock::now();
        grpc::Status s = stub->Report(Ctx(worker_token).get(), req, &resp);
        r.latency_ms.push_back(Ms(Clock::now() - t0));
        if (s.ok()) {
          r.acked_points += resp.stored();
        } else {
          ++r.errors;
        }
      }
    });
  }
  while (ready < workers)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const Clock::time_point start = Clock::now();
  deadline = start + std::chrono::seconds(seconds);
  go = true;
  for (std::thread& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - start).count();

  int64_t acked = 0, stored = 0, errors = 0;
  std::vector<double> latency;
  for (const WorkerResult& r : results) {
    acked += r.acked_points;
    errors += r.errors;
    latency.insert(latency.end(), r.latency_ms.begin(), r.latency_ms.end());
    absl::StatusOr<std::vector<v1::LossPoint>> points =
        c->store()->GetPoints(r.trial_id);
    stored += points.ok() ? static_cast<int64_t>(points->size()) : 0;
  }
  std::cout << fmt::format(
      "prism ingest: {} workers x {} s, {} points/report, {}\n", workers,
      seconds, points_per_report,
      interval_ms > 0
          ? fmt::format("one report per worker every {} ms", interval_ms)
          : std::string("closed loop (next report as soon as acked)"));
  std::cout << fmt::format(
      "  acknowledged {} points in {:.2f} s = {:.0f} points/s ({:.0f} "
      "reports/s)\n",
      acked, elapsed, acked / elapsed, latency.size() / elapsed);
  std::cout << "  report latency " << Summary(latency) << "\n";
  std::cout << fmt::format(
      "  in the database {} points; lost {}; failed reports {}\n", stored,
      acked - stored, errors);
  c->Shutdown();

  if (!optuna_script.empty()) {
    std::cout << "optuna reference (RDB storage on SQLite, 8 processes, "
                 "trial.report):\n"
              << RunOptunaReference(optuna_script, 8, seconds, dir.File(""))
              << "\n";
  }
  return acked == stored && errors == 0 ? 0 : 1;
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

  std::vector<double> in_process;
  for (int i = 0; i < leases; ++i) {
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<v1::LeaseResponse> r = c->queue()->Lease(worker, req);
    in_process.push_back(Ms(Clock::now() - t0));
    if (!r.ok() || !r->has_task()) {
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
// `points` points each (val every `val_every`-th point), written through the
// store as the coordinator would.
int64_t BuildRankDb(const std::string& db, int trials, int points,
                    int val_every) {
  constexpr int64_t kFarFuture = 1'000'000'000'000'000;
  absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store =
      storage::SqliteStore::Open(db);
  const int seeds = 2;
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
  e.spec.mutable_budget()->set_steps(points);
  e.spec.add_seeds(1);
  e.spec.add_seeds(2);
  e.max_attempts = 3;
  e.total_steps = points;
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
  (void)(*store)->UpsertWorker(w, 0);
  const Clock::time_point t0 = Clock::now();
  for (int t = 0; t < static_cast<int>(e.trials.size()); ++t) {
    absl::StatusOr<std::optional<v1::Trial>> trial =
        (*store)->LeaseNextTrial(id, "bench", 1, kFarFuture);
    const double quality = 0.01 * ((*trial)->id() % 97);
    storage::ReportWrite report;
    report.ref = storage::AttemptRef{(*trial)->id(), 1, "bench"};
    report.lease_deadline_ms = kFarFuture;
    double val = 0;
    for (int i = 1; i <= points; ++i) {
      v1::LossPoint p;
      const bool is_val = i % val_every == 0;
      p.set_split(is_val ? v1::SPLIT_VAL : v1::SPLIT_TRAIN);
      p.set_step(i);
      val = 3.0 + quality + 5.0 / i;
      p.set_loss(static_cast<float>(val));
      report.points.push_back(p);
    }
    (void)(*store)->WriteReports({&report});
    v1::TrialMetrics m;
    m.set_final_val_loss(val);
    m.set_min_val_loss(val);
    m.set_tokens_per_second(10000 + (*trial)->id() % 13);
    m.set_steps(points);
    for (int l = 0; l < 12; ++l) m.add_attention_distance(10.0 + l + quality);
    (void)(*store)->CompleteTrial(report.ref, m, {}, 2);
    if ((t + 1) % 1000 == 0) {
      std::cerr << fmt::format(
          "  built {} trials ({:.0f} s)\n", t + 1,
          std::chrono::duration<double>(Clock::now() - t0).count());
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

}  // namespace
}  // namespace prism::bench

int main(int argc, char** argv) {
  CLI::App app{"Coordinator benchmarks (see the file header)",
               "coordinator_bench"};
  app.require_subcommand(1);
  int workers = 64, seconds = 10, points = 100, leases = 2000, trials = 10000,
      rank_points = 1000, val_every = 5;
  std::string optuna = std::string(PRISM_SOURCE_DIR) +
                       "/bench/reference/optuna_ingest_reference.py";
  std::string db;
  CLI::App* ingest =
      app.add_subcommand("ingest", "Report ingest throughput and latency");
  ingest->add_option("--workers", workers)->capture_default_str();
  ingest->add_option("--seconds", seconds)->capture_default_str();
  ingest->add_option("--points", points, "points per report")
      ->capture_default_str();
  int interval_ms = 0;
  ingest
      ->add_option("--interval-ms", interval_ms,
                   "each worker reports every N ms (0: closed loop)")
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
      ->capture_default_str();
  rank->add_option("--db", db, "reuse (or build once) this database file");
  CLI11_PARSE(app, argc, argv);
  prism::SetLogLevel(prism::LogLevel::kWarning);
  if (ingest->parsed())
    return prism::bench::Ingest(workers, seconds, points, interval_ms, optuna);
  if (lease->parsed()) return prism::bench::Lease(leases);
  return prism::bench::Rank(trials, rank_points, val_every, db);
}
