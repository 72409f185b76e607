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
    server::ResultsManager fresh(c->store(), c->store());  // an empty cache
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

}  // namespace prism::bench
