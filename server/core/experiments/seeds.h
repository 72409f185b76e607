// SeedPlanner: the coordinator's own trial decisions — adaptive seeds
// (ExperimentSpec.seeds_policy), guided search (STRATEGY_GUIDED), ASHA's
// promotions (STRATEGY_ASHA, scheduler/strategy/asha.h: a promoted schedule's
// trials waiting at a rung are queued again with their next target) and guided
// screening's promotions and brackets (STRATEGY_GUIDED_SCREENING,
// scheduler/strategy/screening.h: a bracket's schedules are stored in one
// round, so the order of the stored trials says which bracket each is in). When
// a trial of such an experiment finishes (or stops at a rung), it ranks the
// experiment's finished trials (scheduler/analysis/ranking.h, as
// ResultsService.Rank does), decides which schedules get their next seed
// (scheduler/strategy/adaptive_seeds.h), which new schedules to train on every
// seed (scheduler/strategy/guided.h), or which schedules go on past a rung
// (from their val losses at the rungs, Store::ListAshaTrials), and applies the
// decision with Store::ApplySeedRound, which also ends the experiment when
// nothing is pending and nothing was added or promoted.
//
// A decision is a function of stored trials only and is applied in one
// transaction, compare-and-set on the trial counts it was made from (a trial
// that finished meanwhile makes it decide again), and a (schedule, seed) is
// stored once (a promotion moves only trials still waiting at its rung); so a
// round run twice adds or promotes nothing the second time, and one a crash
// interrupted is simply run again: ReconcileAll, at coordinator start, runs
// a round for every unfinished experiment with a seeds policy, the guided or
// the ASHA strategy.
//
//   SeedPlanner seeds(store, clock);
//   seeds.ReconcileAll();            // at start
//   seeds.TrialFinished(7);          // after each finished trial
//
// Thread-safety: all methods are thread-safe; rounds run one at a time.
#ifndef PRISM_SERVER_CORE_EXPERIMENTS_SEEDS_H_
#define PRISM_SERVER_CORE_EXPERIMENTS_SEEDS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/strategy/asha.h"
#include "server/core/infra/clock.h"
#include "server/core/infra/finish_signal.h"
#include "storage/experiment_store.h"

namespace prism::server {

// ScreenedSchedules counts the schedules other than the baseline among an
// ASHA or guided-screening experiment's trials: every one was screened at a
// first rung (VerdictOptions::screened_schedules).
int ScreenedSchedules(const std::vector<AshaTrial>& trials);

class SeedPlanner {
 public:
  SeedPlanner(storage::ExperimentStore* experiments, const Clock* clock);

  // SubscribeTo makes every trial that finishes run TrialFinished at once
  // (before the worker's next Lease, which then finds the added trials
  // queued); a failed round is logged.
  void SubscribeTo(FinishSignal* finished);
  // TrialFinished runs a round for the experiment when its spec has a seeds
  // policy, the guided or the ASHA strategy and it is active or paused (a
  // trial stopping at a rung counts as finished); returns the trials added
  // or promoted (0 for any other experiment). NotFound for an unknown
  // experiment; Aborted when the experiment kept changing under every attempt
  // (the next finished trial, or a restart, runs the round again).
  absl::StatusOr<int> TrialFinished(int64_t experiment_id);
  // ReconcileAll runs a round for every active or paused experiment with a
  // seeds policy, the guided or the ASHA strategy; returns the trials added
  // or promoted in all. A round that fails is logged and skipped (a later
  // finished trial or the next start retries); only a failure to list the
  // experiments is returned.
  absl::StatusOr<int> ReconcileAll();

 private:
  absl::StatusOr<int> Round(const v1::Experiment& experiment);

  storage::ExperimentStore* const experiments_;
  const Clock* const clock_;
  absl::Mutex mu_;  // held for a whole round: rounds never interleave
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_EXPERIMENTS_SEEDS_H_
