// coordinator_bench soak: reporting workers and Rank readers together for
// minutes (scenarios.h).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/coordinator/harness.h"
#include "bench/coordinator/scenarios.h"
#include "fmt/format.h"
#include "prism/v1/prism.grpc.pb.h"
#include "server/coordinator.h"
#include "storage/check.h"
#include "storage/sqlite_store.h"

namespace prism::bench {

namespace fs = std::filesystem;

namespace {

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

// RankReader is one of the soak's readers: it calls ResultsService.Rank
// over gRPC in a loop until told to stop (the reporting workers' ReportLoop,
// harness.h, is its counterpart).
struct RankReader {
  std::string address;
  std::string token;
  int first_channel = 0;  // the reporting workers' channels come first
  v1::RankRequest request;
  std::atomic<int>* ready = nullptr;
  const std::atomic<bool>* go = nullptr;
  const std::atomic<bool>* stop = nullptr;
  std::atomic<bool>* failed_setup = nullptr;
  SoakCounters* counters = nullptr;

  void Run(int r) const {
    auto stub =
        v1::ResultsService::NewStub(NewChannel(address, first_channel + r));
    v1::RankResponse first;
    grpc::Status connected = stub->Rank(SetupCtx(token).get(), request, &first);
    if (!connected.ok()) {
      std::cerr << "coordinator_bench: a reader's first Rank failed: "
                << connected.error_message() << "\n";
      *failed_setup = true;
    }
    ++*ready;
    while (!*go) std::this_thread::yield();
    while (!*stop && !*failed_setup) {
      v1::RankResponse resp;
      const Clock::time_point t0 = Clock::now();
      grpc::Status s = stub->Rank(Ctx(token).get(), request, &resp);
      counters->rank_ms.Record(Ms(Clock::now() - t0));
      if (!s.ok()) ++counters->rank_errors;
    }
  }
};

void PrintSoakHeader(const SoakOptions& o, int64_t ingest_id, int64_t rank_id,
                     int64_t ranked_schedules) {
  std::cout << fmt::format(
      "soak: {} min; {} workers each reporting {} points every {} ms into "
      "experiment {}; {} threads calling ResultsService.Rank (page of 50) "
      "over gRPC in a loop on experiment {} ({} completed trials, {} ranked "
      "schedules); durability normal\n",
      o.minutes, o.workers, o.points_per_report, o.interval_ms, ingest_id,
      o.readers, rank_id, o.rank_trials, ranked_schedules);
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
}

// SoakTotals are the whole run's counts and the RSS at its first and last
// minute.
struct SoakTotals {
  SoakWindow total;
  Rss rss_first, rss_last;
};

// RunMinutes lets the clients go, prints a row a minute, then stops and
// joins every client thread.
SoakTotals RunMinutes(const SoakOptions& o, SoakCounters* counters,
                      std::atomic<bool>* go, std::atomic<bool>* stop,
                      std::vector<std::thread>* threads) {
  const Clock::time_point start = Clock::now();
  *go = true;
  SoakTotals t;
  Clock::time_point last = start;
  for (int m = 1; m <= o.minutes; ++m) {
    std::this_thread::sleep_until(start + std::chrono::minutes(m));
    const Clock::time_point now = Clock::now();
    const SoakWindow window = counters->Take(Seconds(now - last));
    last = now;
    t.rss_last = Rss::Read();
    if (m == 1) t.rss_first = t.rss_last;
    std::cout << window.Row(absl::StrCat(m), t.rss_last.ToString())
              << std::endl;
    t.total.Add(window);
  }
  *stop = true;
  for (std::thread& thread : *threads) thread.join();
  // What finished after the last minute counts in the totals too.
  t.total.Add(counters->Take(Seconds(Clock::now() - last)));
  return t;
}

void PrintSoakTotals(const SoakTotals& t, const std::string& db) {
  const SoakWindow& total = t.total;
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
      t.rss_first.ToString(), t.rss_last.ToString(),
      t.rss_last.total - t.rss_first.total, t.rss_last.anon - t.rss_first.anon,
      t.rss_last.file - t.rss_first.file,
      static_cast<double>(fs::file_size(db, size_error)) / (1 << 20));
}

// EveryAckedPointStored prints the acknowledged points and those in the
// database, and returns whether they agree.
bool EveryAckedPointStored(server::Coordinator* c,
                           const std::vector<int64_t>& acked,
                           const std::vector<int64_t>& trial_ids) {
  int64_t acked_points = 0, stored = 0;
  for (size_t w = 0; w < acked.size(); ++w) {
    acked_points += acked[w];
    stored += StoredPoints(c, trial_ids[w]);
  }
  std::cout << fmt::format(
      "acknowledged {} points, in the database {}: lost {}\n", acked_points,
      stored, acked_points - stored);
  return acked_points == stored;
}

// CheckDatabaseAfterShutdown prints storage::CheckDatabase's verdict on the
// file (at most 20 problems) and returns whether every invariant holds;
// nullopt (said on stdout) when the check could not run.
std::optional<bool> CheckDatabaseAfterShutdown(const std::string& db) {
  absl::StatusOr<storage::DatabaseCheck> check = storage::CheckDatabase(db);
  if (!check.ok()) {
    std::cout << "database check could not run: " << check.status() << "\n";
    return std::nullopt;
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
  return check->problems.empty();
}

}  // namespace

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
  const RankReader reader{
      c->grpc_address(), viewer_token, o.workers, rank_req, &ready, &go, &stop,
      &failed_setup,     &counters};
  for (int w = 0; w < o.workers; ++w) {
    threads.emplace_back([&fleet, w] { fleet.Run(w); });
  }
  for (int r = 0; r < o.readers; ++r) {
    threads.emplace_back([&reader, r] { reader.Run(r); });
  }
  while (ready < o.workers + o.readers)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (failed_setup) {
    go = true;
    for (std::thread& t : threads) t.join();
    return 1;
  }

  PrintSoakHeader(o, ingest_id, rank_id, ranked->total());
  const SoakTotals totals = RunMinutes(o, &counters, &go, &stop, &threads);
  PrintSoakTotals(totals, db);
  const bool stored = EveryAckedPointStored(c.get(), acked, trial_ids);
  c->Shutdown();
  c.reset();
  const std::optional<bool> database_clean = CheckDatabaseAfterShutdown(db);
  if (!database_clean.has_value()) return 1;
  const bool clean = stored && totals.total.report_errors == 0 &&
                     totals.total.rank_errors == 0 && *database_clean;
  return clean ? 0 : 1;
}

}  // namespace prism::bench
