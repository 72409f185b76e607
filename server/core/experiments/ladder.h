// Ladder: the scale-ladder strategy (ExperimentSpec.ladder, docs/ladder.md)
// — search at a small size, carry the best up, run it at the next size, and
// measure whether the ranking transferred.
//
// A ladder is a chain of experiments, one per rung, tagged in storage with
// the ladder's id (its first rung's experiment id) and the rung's index.
// CheckLadder validates a submitted spec and RungSpec gives rung 0's
// experiment spec (ExperimentManager::Submit stores it). When a rung's
// experiment is done, LadderPlanner::ExperimentChanged takes its best-set
// (Hsu's MCB; the top_k by mean paired delta when larger), the worst and the
// median ranked schedule and the baseline, maps each onto the next rung's
// shape (scheduler/space/profile.h) and stores the next rung's experiment, a
// grid over exactly those. Storage refuses a second copy of a rung (a unique
// index on the tag), so the advance runs again harmlessly; ReconcileAll, at
// coordinator start, runs it for every done rung, so a crash between "rung
// done" and "next stored" submits the next rung exactly once. An empty
// best-set or an unmappable schedule stops the ladder: the done rung's
// ladder_note says why, naming the size and the schedule.
//
// MeasureLadder measures each pair of consecutive rungs with
// scheduler/analysis/transfer.h's MeasureTransfer over the carried schedules.
//
//   LadderPlanner ladder(store, clock, plan_options);
//   ladder.ReconcileAll();              // at start
//   ladder.ExperimentChanged(7);        // after each finished trial
//   MeasureLadder(store, 7);            // ResultsService.LadderTransfer
//
// Thread-safety: all methods are thread-safe; advances run one at a time.
#ifndef PRISM_SERVER_CORE_EXPERIMENTS_LADDER_H_
#define PRISM_SERVER_CORE_EXPERIMENTS_LADDER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/space/presets.h"
#include "server/core/experiments/spec.h"
#include "server/core/infra/clock.h"
#include "server/core/infra/finish_signal.h"
#include "storage/experiment_store.h"

namespace prism::server {

// The top_k a ladder carries when its spec leaves it unset.
inline constexpr int kDefaultLadderTopK = 8;

// LadderSizeName names a shape in a ladder's messages and tables: its
// preset's name when it is exactly that preset's shape, else
// "d<d_model>-l<layers>-h<base_heads>".
std::string LadderSizeName(const ModelShape& shape);

// CheckLadder validates a submitted spec with a ladder and returns it
// normalised: every rung's budget is the spec's budget with the rung's set
// fields over it, every rung lists its seeds. InvalidArgument naming the
// field for: fewer than 2 rungs, a rung without a model or whose model,
// budget or seeds do not plan, top_k below 1, the spec's own model,
// strategy, samples, guided, asha, screening, seeds_policy or
// ladder_carried set, a strategy on a later rung, sizes out of order (a
// later rung with fewer layers or a smaller d_model, or the same size), and
// a listed schedule that cannot be mapped to a later rung (naming the size
// and the schedule).
absl::StatusOr<v1::ExperimentSpec> CheckLadder(const v1::ExperimentSpec& spec,
                                               const PlanOptions& options);

// RungSpec returns rung `rung`'s experiment spec of a normalised ladder spec
// (CheckLadder's): the rung's model, budget and seeds; rung 0's strategy
// and policies; a later rung a grid with no schedules (the caller lists the
// carried ones).
v1::ExperimentSpec RungSpec(const v1::ExperimentSpec& spec, int rung);

// MeasureLadder measures the ladder of `experiment_id` (any of its rungs):
// ResultsService.LadderTransfer's answer. NotFound; FailedPrecondition when
// it is not a ladder's.
absl::StatusOr<v1::LadderTransferResponse> MeasureLadder(
    storage::ExperimentStore* experiments, int64_t experiment_id);

class LadderPlanner {
 public:
  LadderPlanner(storage::ExperimentStore* experiments, const Clock* clock,
                PlanOptions plan_options);

  // SubscribeTo makes every trial that finishes run ExperimentChanged, so a
  // ladder's rung that just ended submits the next rung; a failed advance is
  // logged. Subscribe it after SeedPlanner: a seeds round may end the rung.
  void SubscribeTo(FinishSignal* finished);
  // ExperimentChanged advances the experiment's ladder when the experiment
  // is a ladder's rung, done, and not the last: returns the next rung's
  // experiment id (the one stored earlier when it already exists), 0 when
  // there is nothing to advance or the ladder stopped here (ladder_note).
  // NotFound for an unknown experiment.
  absl::StatusOr<int64_t> ExperimentChanged(int64_t experiment_id);
  // ReconcileAll runs ExperimentChanged for every done rung of a ladder;
  // returns the rungs submitted. A failing advance is logged and skipped.
  absl::StatusOr<int> ReconcileAll();

 private:
  storage::ExperimentStore* const experiments_;
  const Clock* const clock_;
  const PlanOptions plan_options_;
  absl::Mutex mu_;  // held for a whole advance
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_EXPERIMENTS_LADDER_H_
