// coordinator_bench soak: reporting workers and Rank readers together for
// minutes (scenarios.h).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
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

}  // namespace prism::bench
