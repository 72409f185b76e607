// StartKnownTruthCluster: a generated known-truth experiment (scheduler/
// known_truth.h) replayed through a real coordinator and `prism worker
// --replay` workers, for the end-to-end tests of the verdicts and the search.
//
//   absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(spec);
//   LocalCluster cluster;
//   absl::StatusOr<std::string> spec_text =
//       StartKnownTruthCluster(*truth, cluster);
//   cluster.SubmitSpec(absl::StrCat(*spec_text, "name: \"x\"\n"));
#ifndef PRISM_TESTS_CLI_KNOWN_TRUTH_CLUSTER_H_
#define PRISM_TESTS_CLI_KNOWN_TRUTH_CLUSTER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "bench/known_truth_replay.h"
#include "scheduler/simulate/known_truth.h"
#include "tests/cli/cluster.h"

namespace prism::testing {

// IsolatedBestFixture is the search tests' experiment: 120 schedules whose
// best has an isolated bonus of 4 noise sd (no smooth trend leads to it),
// 120 steps with evals every 20.
inline KnownTruthSpec IsolatedBestFixture() {
  KnownTruthSpec spec;
  spec.structure = TruthStructure::kIsolatedBest;
  spec.steps = 120;
  spec.eval_every = 20;
  spec.best_gap = 4 * spec.noise_sd;
  spec.seed = 27;
  return spec;
}

// StartKnownTruthCluster writes `truth` as a replay fixture in the cluster's
// directory, starts the coordinator and `workers` replay workers, and returns
// the spec text that replays it (a submit adds a name and, for a search, its
// strategy). `coordinator_env` arms failpoints (base/failpoint.h).
inline absl::StatusOr<std::string> StartKnownTruthCluster(
    const KnownTruth& truth, LocalCluster& cluster, int workers = 2,
    const std::vector<std::string>& coordinator_env = {}) {
  std::string spec_text = bench::KnownTruthSpecText(truth);
  absl::StatusOr<std::string> replay =
      bench::KnownTruthReplay(truth, spec_text);
  if (!replay.ok()) return replay.status();
  const std::string fixture = cluster.dir() + "/truth.replay";
  WriteFile(fixture, *replay);
  if (absl::Status s = cluster.StartCoordinator(coordinator_env); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), cluster.Logs()));
  }
  for (int i = 0; i < workers; ++i) {
    absl::StatusOr<int> worker = cluster.StartWorker({"--replay", fixture});
    if (!worker.ok()) return worker.status();
  }
  return spec_text;
}

// RankOf reads experiment `id`'s whole ranking through the cluster.
inline absl::Status RankOf(LocalCluster& cluster, int64_t id,
                           v1::RankResponse* rank) {
  v1::RankRequest request;
  request.set_experiment_id(id);
  return cluster.client().Call(&v1::ResultsService::Stub::Rank,
                               cluster.client().results(), request, rank);
}

// SearchRun is one finished search over a known truth: its id, the
// experiment as it ended and its whole ranking.
struct SearchRun {
  int64_t id = 0;
  v1::Experiment experiment;
  v1::RankResponse rank;
};

// RunKnownTruthSearch starts `truth`'s cluster in `cluster`, submits its spec
// with `settings` appended (a name, a strategy, ...), waits up to 240 s for
// it to end and reads its ranking; the error names the step that failed,
// with the cluster's logs.
inline absl::StatusOr<SearchRun> RunKnownTruthSearch(
    const KnownTruth& truth, LocalCluster& cluster,
    const std::string& settings) {
  absl::StatusOr<std::string> spec_text =
      StartKnownTruthCluster(truth, cluster);
  if (!spec_text.ok()) return spec_text.status();
  SearchRun run;
  absl::StatusOr<int64_t> id =
      cluster.SubmitSpec(absl::StrCat(*spec_text, settings));
  if (!id.ok()) return id.status();
  run.id = *id;
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(run.id, absl::Seconds(240));
  if (!done.ok()) {
    return absl::Status(done.status().code(),
                        absl::StrCat(done.status().message(), cluster.Logs()));
  }
  run.experiment = *std::move(done);
  if (absl::Status s = RankOf(cluster, run.id, &run.rank); !s.ok()) return s;
  return run;
}

// ChosenSchedule is what a search chose: the trained-to-the-end schedule
// with the lowest mean paired delta ("" when none).
inline std::string ChosenSchedule(const v1::RankResponse& rank) {
  std::string chosen;
  double lowest = 0.0;
  for (const v1::RankedSchedule& r : rank.schedules()) {
    if (r.is_baseline()) continue;
    if (chosen.empty() || r.delta_vs_baseline().mean() < lowest) {
      chosen = r.schedule();
      lowest = r.delta_vs_baseline().mean();
    }
  }
  return chosen;
}

}  // namespace prism::testing

#endif  // PRISM_TESTS_CLI_KNOWN_TRUTH_CLUSTER_H_
