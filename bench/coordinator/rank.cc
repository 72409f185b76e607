// coordinator_bench rank: Rank latency on a large finished experiment,
// cold and warm (scenarios.h).
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/coordinator/harness.h"
#include "bench/coordinator/scenarios.h"
#include "fmt/format.h"
#include "prism/v1/prism.grpc.pb.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"
#include "server/coordinator.h"
#include "server/core/infra/convert.h"

namespace prism::bench {

namespace fs = std::filesystem;

namespace {

// RankTimes are the scenario's measurements, in milliseconds.
struct RankTimes {
  double start_ms = 0.0;             // the coordinator's start
  double first_after_start = 0.0;    // its warm-up build in flight
  double first_after_warm_up = 0.0;  // that build finished
  std::vector<double> cold;          // fresh cache: read + RankSchedules
  std::vector<double> read;          // the cold path's read alone
  std::vector<double> rank_only;     // and its RankSchedules alone
  std::vector<double> warm;          // cached, a page of 50
  std::vector<double> warm_all;      // cached, every row
  std::vector<double> rpc;           // cached, over loopback gRPC
};

// StartAndRankFirst starts the coordinator on `db` and times its first Rank
// while it warms recent experiments' rankings, and the first after that.
std::unique_ptr<server::Coordinator> StartAndRankFirst(
    const std::string& db, const v1::RankRequest& req, RankTimes* t) {
  // The coordinator warms recent experiments' rankings as it starts: a Rank
  // at once waits for that build; one after it is warm.
  Clock::time_point started = Clock::now();
  std::unique_ptr<server::Coordinator> c = StartCoordinator(db);
  t->start_ms = Ms(Clock::now() - started);
  Clock::time_point t_first = Clock::now();
  (void)c->results()->Rank(req);
  t->first_after_start = Ms(Clock::now() - t_first);
  c->results()->WaitIdle();
  Clock::time_point t_warmed = Clock::now();
  (void)c->results()->Rank(req);
  t->first_after_warm_up = Ms(Clock::now() - t_warmed);
  return c;
}

// TimeColdRanks times Rank on a fresh cache five times and prints the
// experiment's best once; false (said on stderr) when Rank fails.
bool TimeColdRanks(server::Coordinator* c, const v1::RankRequest& req,
                   int64_t id, RankTimes* t) {
  for (int i = 0; i < 5; ++i) {
    server::ResultsManager fresh(c->store(), c->store());  // an empty cache
    Clock::time_point t0 = Clock::now();
    absl::StatusOr<v1::RankResponse> r = fresh.Rank(req);
    t->cold.push_back(Ms(Clock::now() - t0));
    if (!r.ok()) {
      std::cerr << r.status() << "\n";
      return false;
    }
    if (i == 0) {
      std::cout << fmt::format(
          "experiment {}: {} ranked schedules, best {} ({:.4f})\n", id,
          r->total(), r->schedules(0).schedule(),
          r->schedules(0).final_val_loss().mean());
    }
  }
  return true;
}

// TimeColdParts times the cold path's two parts apart: reading the
// completed trials and RankSchedules.
void TimeColdParts(server::Coordinator* c, int64_t id, RankTimes* t) {
  const v1::Experiment e = *c->store()->GetExperiment(id);
  const SpaceSpec space = server::SpaceForSpec(e.spec());
  const std::string baseline =
      Schedule::Uniform(space.base_heads, space.layers).ToString();
  for (int i = 0; i < 5; ++i) {
    Clock::time_point t0 = Clock::now();
    std::vector<TrialOutcome> outcomes = *c->store()->ListFinishedOutcomes(id);
    Clock::time_point t1 = Clock::now();
    Ranking ranking = RankSchedules(space, baseline, outcomes);
    t->rank_only.push_back(Ms(Clock::now() - t1));
    t->read.push_back(Ms(t1 - t0));
  }
}

// TimeWarmRanks times cached Ranks: a page of 50, then every row.
void TimeWarmRanks(server::Coordinator* c, const v1::RankRequest& req,
                   RankTimes* t) {
  (void)c->results()->Rank(req);
  for (int i = 0; i < 50; ++i) {
    Clock::time_point t0 = Clock::now();
    (void)c->results()->Rank(req);
    t->warm.push_back(Ms(Clock::now() - t0));
  }
  v1::RankRequest all = req;
  all.set_page_size(0);
  for (int i = 0; i < 20; ++i) {
    Clock::time_point t0 = Clock::now();
    (void)c->results()->Rank(all);
    t->warm_all.push_back(Ms(Clock::now() - t0));
  }
}

// TimeRpcRanks times cached Ranks over loopback gRPC as `viewer`; false
// (said on stderr) when one fails.
bool TimeRpcRanks(server::Coordinator* c, const std::string& viewer,
                  const v1::RankRequest& req, RankTimes* t) {
  auto stub = v1::ResultsService::NewStub(NewChannel(c->grpc_address(), 0));
  for (int i = 0; i < 50; ++i) {
    v1::RankResponse resp;
    Clock::time_point t0 = Clock::now();
    grpc::Status s = stub->Rank(Ctx(viewer).get(), req, &resp);
    t->rpc.push_back(Ms(Clock::now() - t0));
    if (!s.ok()) {
      std::cerr << s.error_message() << "\n";
      return false;
    }
  }
  return true;
}

void PrintRankTimes(int trials, int points, int val_every, const RankTimes& t) {
  std::cout << fmt::format(
      "rank, {} trials x {} points (1 in {} val), page of 50:\n", trials,
      points, val_every);
  std::cout << fmt::format(
      "  first Rank right after the coordinator started ({:.0f} ms), its "
      "warm-up build in flight  {:.3f} ms\n",
      t.start_ms, t.first_after_start);
  std::cout << fmt::format(
      "  first Rank once the warm-up finished                   {:.3f} ms\n",
      t.first_after_warm_up);
  std::cout << fmt::format(
      "  cold, first fresh cache in this process                {:.3f} ms\n",
      t.cold[0]);
  std::cout << "  cold (fresh cache: read completed trials + RankSchedules) "
            << Summary(t.cold) << "\n";
  std::cout << "    of which: read the completed trials                     "
            << Summary(t.read) << "\n";
  std::cout << "    of which: RankSchedules                                 "
            << Summary(t.rank_only) << "\n";
  std::cout << "  warm (cached, filter+sort+page)                           "
            << Summary(t.warm) << "\n";
  std::cout << "  warm, every row (page_size 0)                             "
            << Summary(t.warm_all) << "\n";
  std::cout << "  warm over loopback gRPC                                   "
            << Summary(t.rpc) << "\n";
}

}  // namespace

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
  RankTimes t;
  std::unique_ptr<server::Coordinator> c = StartAndRankFirst(db, req, &t);
  const std::string viewer =
      Token(c.get(), absl::StrCat("viewer", getpid()), v1::ROLE_VIEWER);
  if (!TimeColdRanks(c.get(), req, id, &t)) return 1;
  TimeColdParts(c.get(), id, &t);
  TimeWarmRanks(c.get(), req, &t);
  if (!TimeRpcRanks(c.get(), viewer, req, &t)) return 1;
  PrintRankTimes(trials, points, val_every, t);
  return 0;
}

}  // namespace prism::bench
