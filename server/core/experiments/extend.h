// Extend planning: what ExperimentService.Extend adds to a stored
// experiment (proto ExtendRequest), decided from its resolved spec and its
// stored trials alone — the new seeds and schedules, the trials they need,
// the spec as it will be stored — so that every trial the experiment already
// has is reused and only missing (schedule, seed) pairs train.
//
// Seeds go to the experiment's ranked schedules: every schedule it trained
// to the whole budget (for ASHA and guided screening, the ones that reached
// it, not the ones stopped at a rung), narrowed by seed_schedules, and
// always to the baseline, which every verdict pairs with. New seeds
// continue the experiment's sequence (its spec's seeds, racing's, then the
// integers above the largest). New schedules train on every seed the
// experiment has and the new ones.
//
//   absl::StatusOr<ExtensionPlan> plan = PlanExtension(experiment, keys, req);
//
// Thread-safety: pure functions.
#ifndef PRISM_SERVER_CORE_EXPERIMENTS_EXTEND_H_
#define PRISM_SERVER_CORE_EXPERIMENTS_EXTEND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prism/v1/prism.pb.h"
#include "storage/experiment_store.h"

namespace prism::server {

struct ExtensionPlan {
  v1::ExperimentSpec spec;  // the resolved spec with the additions
  std::vector<storage::NewTrial> trials;
  std::vector<int64_t> seeds_added;  // seeds the experiment had no trial on
  std::vector<std::string> schedules_added;  // canonical
  // The seeds the schedules getting seeds will each have (the largest of
  // them), what the seed limits are checked against.
  int most_seeds = 0;
  std::string most_seeds_schedule;
  int64_t trials_reused = 0;  // completed or diverged: they count as they are
  int64_t trials_after = 0;   // the experiment's trials with the new ones
};

// PlanExtension plans `request` on `experiment` (with its resolved spec)
// whose stored trials are `keys`. InvalidArgument naming the field for more
// than one of add_seeds, to_seeds and seeds; a negative count; a seed listed
// twice or one the experiment has; to_seeds not above the seeds it has; a
// schedule malformed, outside the experiment's space, listed twice or one it
// has; a seed_schedules entry that is not one of its ranked schedules (or
// seed_schedules without seeds to add); nothing to add. It checks no limit
// (ExperimentManager::Extend does).
absl::StatusOr<ExtensionPlan> PlanExtension(
    const v1::Experiment& experiment,
    const std::vector<storage::TrialKey>& keys,
    const v1::ExtendRequest& request);

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_EXPERIMENTS_EXTEND_H_
