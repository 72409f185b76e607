// SyntheticExperiment: an experiment's trials in memory, for the suggest and
// guided tests. Its space is d_model 64, 8 layers, 8 base heads (120
// schedules, no principles) and a trial's final val loss is its seed's
// baseline loss plus SyntheticDelta, a known linear function of the
// schedule's features: wider first layers are better, transitions cost.
#ifndef PRISM_TESTS_SCHEDULER_SYNTHETIC_EXPERIMENT_H_
#define PRISM_TESTS_SCHEDULER_SYNTHETIC_EXPERIMENT_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "scheduler/analysis/ranking.h"
#include "scheduler/space/space.h"
#include "scheduler/strategy/adaptive_seeds.h"
#include "scheduler/strategy/surrogate.h"

namespace prism::testing {

inline constexpr char kBase64[] = "8x8";

inline SpaceSpec Space64() {
  SpaceSpec spec;
  spec.d_model = 64;
  spec.layers = 8;
  spec.base_heads = 8;
  return spec;
}

// SyntheticDelta: -0.01 per doubling of the first layer's d_head over the
// baseline's, +0.004 per transition.
inline double SyntheticDelta(const std::string& schedule) {
  const std::vector<double> f =
      ScheduleFeatures(64, 8, *ParseSchedule(schedule));
  return -0.01 * (f[0] - 3.0) + 0.004 * f[8];
}

class SyntheticExperiment {
 public:
  // Pending adds a queued trial.
  void Pending(const std::string& schedule, int64_t seed) {
    trials_.push_back(SeedTrial{schedule, seed, schedule == kBase64, true});
  }
  // Finished adds a completed trial (or a failed one: no loss).
  void Finished(const std::string& schedule, int64_t seed,
                bool failed = false) {
    TrialOutcome o;
    o.trial_id = next_id_++;
    o.schedule = schedule;
    o.seed = seed;
    o.is_baseline = schedule == kBase64;
    o.state = failed ? OutcomeState::kFailed : OutcomeState::kCompleted;
    o.final_val_loss =
        3.0 + 0.01 * seed + (o.is_baseline ? 0.0 : SyntheticDelta(schedule));
    o.min_val_loss = o.final_val_loss;
    outcomes_.push_back(o);
    trials_.push_back(SeedTrial{schedule, seed, o.is_baseline, false});
  }
  // FinishAll completes every pending trial.
  void FinishAll() {
    std::vector<SeedTrial> pending;
    std::vector<SeedTrial> kept;
    for (const SeedTrial& t : trials_) {
      (t.pending ? pending : kept).push_back(t);
    }
    trials_ = kept;
    for (const SeedTrial& t : pending) Finished(t.schedule, t.seed);
  }
  Ranking Rank() const { return RankSchedules(Space64(), kBase64, outcomes_); }
  const std::vector<SeedTrial>& trials() const { return trials_; }
  // Tried is every schedule with a trial, the baseline included.
  std::set<std::string> Tried() const {
    std::set<std::string> out;
    for (const SeedTrial& t : trials_) out.insert(t.schedule);
    return out;
  }

 private:
  int64_t next_id_ = 1;
  std::vector<TrialOutcome> outcomes_;
  std::vector<SeedTrial> trials_;
};

}  // namespace prism::testing

#endif  // PRISM_TESTS_SCHEDULER_SYNTHETIC_EXPERIMENT_H_
