// Spec planning: turns a submitted ExperimentSpec into a validated, fully
// resolved plan — the model shape (preset plus overrides), every zero budget
// field filled from the preset's training defaults, the schedule list (grid,
// random sample or explicit list) with the uniform baseline always added, and
// one trial per (schedule, seed) — under a seeds policy, per (schedule, seed
// of the first round): the resolved spec then lists the policy's whole seed
// sequence (scheduler/strategy/adaptive_seeds.h) and the coordinator adds the
// rest. Nothing here touches storage: a spec that fails validation never
// reaches it.
//
//   absl::StatusOr<v1::ExperimentSpec> spec = ParseSpecText(text);
//   absl::StatusOr<ExperimentPlan> plan = PlanExperiment(*spec, {});
//
// Thread-safety: pure functions.
#ifndef PRISM_SERVER_CORE_EXPERIMENTS_SPEC_H_
#define PRISM_SERVER_CORE_EXPERIMENTS_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"
#include "storage/experiment_store.h"

namespace prism::server {

inline constexpr int kDefaultMaxAttempts = 3;
// A grid beyond this many trials is refused (suggesting STRATEGY_RANDOM).
inline constexpr int64_t kDefaultMaxGridTrials = 100000;

struct PlanOptions {
  int default_max_attempts = kDefaultMaxAttempts;
  int64_t max_trials = kDefaultMaxGridTrials;
  // Resolved data roots (base/data_roots.h) every data path must lie in;
  // empty: not checked (offline tools planning their own specs).
  std::vector<std::string> data_roots;
};

struct ExperimentPlan {
  v1::ExperimentSpec spec;  // resolved: model, budget, run bounds, strategy
  ModelShape shape;
  SpaceSpec space;
  std::string baseline;  // the uniform schedule, canonical
  std::vector<storage::NewTrial> trials;
  std::string config_fingerprint;  // SHA-256 of (model, data, budget)
};

// ParseSpecText parses a textproto ExperimentSpec. InvalidArgument
// "spec_text:LINE:COL: <parser message>" on a syntax error or unknown field,
// "spec_text: FIELD is not valid UTF-8" for a string (say "\377") that the
// wire format cannot carry.
absl::StatusOr<v1::ExperimentSpec> ParseSpecText(absl::string_view text);

// PlanExperiment validates and resolves `spec`. InvalidArgument naming the
// first problem: unknown preset, inconsistent model overrides, bad budget
// numbers, no or duplicate seeds, a bad seeds policy (min below 2, max
// below min or above kMaxPolicySeeds, more seeds listed than max), a principle
// filter that leaves no schedule, an explicit schedule that is malformed, of
// the wrong depth, breaks a hard constraint or a requested principle, random
// strategy without samples, a grid over options.max_trials trials, or a
// data path outside options.data_roots (after resolving `..` and symlinks).
absl::StatusOr<ExperimentPlan> PlanExperiment(const v1::ExperimentSpec& spec,
                                              const PlanOptions& options);

// PlannedTask is the task a worker would lease for `trial` of `plan` on its
// first attempt: the resolved model, data and budget with the trial's
// schedule and seed (no resume step, no rung). Offline tools that train a
// plan's trials without a coordinator (bench/replay_record) build their
// trainer configs from it.
v1::TrialTask PlannedTask(const ExperimentPlan& plan,
                          const storage::NewTrial& trial);

// CheckScheduleInSpace parses `text` as a schedule of `space` (an
// experiment's, SpaceForSpec): its canonical form on success;
// InvalidArgument "<field> '<text>': ..." when it is malformed, has another
// depth, breaks a hard constraint or a principle the space requires.
absl::StatusOr<Schedule> CheckScheduleInSpace(const SpaceSpec& space,
                                              absl::string_view field,
                                              absl::string_view text);

// ToNewExperiment is what storage keeps of `plan` submitted by `owner`
// (Store::CreateExperiment), the grid's steps included.
storage::NewExperiment ToNewExperiment(ExperimentPlan plan, std::string owner,
                                       int64_t now_ms);

// ResolveModelShape returns the shape `model` names (a preset with its
// overrides, or a custom shape). InvalidArgument naming the field.
absl::StatusOr<ModelShape> ResolveModelShape(const v1::ModelConfig& model);

// ShapeForSpec returns the model shape of a resolved spec.
ModelShape ShapeForSpec(const v1::ExperimentSpec& resolved);

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_EXPERIMENTS_SPEC_H_
