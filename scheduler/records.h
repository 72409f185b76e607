// Scheduler records: the plain trial records that storage/ reads and writes
// and the scheduler's rules take in, with no search logic, so that storage/
// depends on these types only (scheduler/README.md):
//   - TrialOutcome, a finished trial as the ranking reads it
//     (scheduler/analysis/ranking.h);
//   - AshaTrial and AshaPromotion, a trial as ASHA decides on it and a
//     decision's promotion (scheduler/strategy/asha.h).
//
// Thread-safety: plain structs.
#ifndef PRISM_SCHEDULER_RECORDS_H_
#define PRISM_SCHEDULER_RECORDS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace prism {

// OutcomeState is how a finished trial ended. Only completed trials enter the
// statistics; diverged and failed ones are counted.
enum class OutcomeState { kCompleted, kDiverged, kFailed };

// TrialOutcome is one finished trial as storage returns it. The metrics are
// meaningful for completed trials only.
struct TrialOutcome {
  int64_t trial_id = 0;
  std::string schedule;  // canonical form
  int64_t seed = 0;
  bool is_baseline = false;
  OutcomeState state = OutcomeState::kCompleted;
  double final_val_loss = 0.0;
  double min_val_loss = 0.0;
  double tokens_per_second = 0.0;
  // Where it ran: the worker that finished it and the trainer's device string
  // ("" when unknown).
  std::string worker_id;
  std::string device;
  // The share of its cores a CPU trial got while stepping (TrialMetrics);
  // 0 when unknown.
  double cpu_share = 0.0;
  // The val curve, steps ascending.
  std::vector<int64_t> val_steps;
  std::vector<double> val_losses;
  std::vector<double> attention_distance;  // per layer
};

// AshaTrial is one trial of the experiment as ASHA sees it
// (scheduler/strategy/asha.h).
struct AshaTrial {
  std::string schedule;  // canonical form
  int64_t seed = 0;
  bool is_baseline = false;
  // Waiting at its target step (TRIAL_STOPPED_AT_RUNG): promotable.
  bool at_rung = false;
  int64_t target_steps = 0;  // 0: the whole budget
  // Failed, diverged or cancelled: it trains no further. A schedule with
  // such a trial that has no val loss at a rung is out of that rung: it
  // counts towards the rung's completion, never as an entry.
  bool ended = false;
  // Its stored val loss at each rung step it has reached.
  std::map<int64_t, double> val_loss;
};

// AshaPromotion moves a schedule's trials waiting at from_step on.
struct AshaPromotion {
  std::string schedule;
  int64_t from_step = 0;
  int64_t to_step = 0;  // the next rung; 0: the whole budget
};

}  // namespace prism

#endif  // PRISM_SCHEDULER_RECORDS_H_
