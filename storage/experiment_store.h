// ExperimentStore: the store's role for experiments and their trials as
// their life cycle sees them: submission, state, priority and deletion, the
// coordinator's decisions that add or promote trials (ApplySeedRound,
// ExtendExperiment), scale ladders, and what ranking and planning read from
// trial rows (finished outcomes, throughput samples; the points table is
// CurveStore's). ExperimentManager, ResultsManager, SeedPlanner,
// LadderPlanner, MeasureLadder and LoadPlanContext (server/core/) use it;
// QueueManager reads an experiment through it.
//
// A write is one transaction; thread-safety and time are as storage/store.h
// says for every role.
#ifndef PRISM_STORAGE_EXPERIMENT_STORE_H_
#define PRISM_STORAGE_EXPERIMENT_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/records.h"

namespace prism::storage {

// DecidedByCoordinator is true for an experiment that a drained trial queue
// does not end, because the coordinator decides whether trials are still to
// be added or promoted (ApplySeedRound): one with a seeds policy,
// STRATEGY_GUIDED, STRATEGY_ASHA, STRATEGY_GUIDED_SCREENING or racing. Its
// experiments row has adaptive_seeds = 1.
inline bool DecidedByCoordinator(const v1::ExperimentSpec& spec) {
  return spec.has_seeds_policy() || spec.strategy() == v1::STRATEGY_GUIDED ||
         spec.strategy() == v1::STRATEGY_ASHA ||
         spec.strategy() == v1::STRATEGY_GUIDED_SCREENING ||
         (spec.has_racing() && !spec.racing().off());
}

struct NewTrial {
  std::string schedule;  // canonical form
  int64_t seed = 0;
  bool is_baseline = false;
  // STRATEGY_ASHA's and STRATEGY_GUIDED_SCREENING's first rung; 0: the
  // whole budget.
  int64_t target_steps = 0;
};

// NewExperiment is a validated, fully resolved submission.
struct NewExperiment {
  std::string name;
  std::string owner;
  v1::ExperimentSpec spec;  // resolved: no zero budget/model fields
  int priority = 0;
  int max_attempts = 1;  // resolved (spec's or the coordinator default)
  int64_t total_steps = 0;
  // Identifies (model, data, budget): part of each trial's uniqueness key.
  std::string config_fingerprint;
  std::vector<NewTrial> trials;
  int64_t now_ms = 0;
  // A scale ladder's rung (server/core/experiments/ladder.h): a spec with a
  // ladder and rung 0 starts a ladder whose id is the new experiment's; a later
  // rung names its ladder. 0 and 0: not a ladder's.
  int64_t ladder_id = 0;
  int ladder_rung = 0;
  // The steps a grid search of the same space trains (Experiment.grid_steps),
  // kept beside the spec so a summary needs no spec; negative: not known
  // (stored NULL, computed from the spec when read).
  double grid_steps = -1.0;
};

struct CreatedExperiment {
  int64_t id = 0;
  int trials_created = 0;  // identical (schedule, seed, config) rows once
};

// DeletedExperiment is what DeleteExperiment removed.
struct DeletedExperiment {
  v1::Experiment experiment;  // as it was just before
  int64_t trials = 0;
  int64_t attempts = 0;
  int64_t points = 0;
};

struct ExperimentPage {
  std::vector<v1::Experiment> experiments;  // ascending id
  int64_t next_after_id = 0;                // 0: no further page
};

struct TrialPage {
  std::vector<v1::Trial> trials;  // ascending id, without attempt history
  int64_t next_after_id = 0;      // 0: no further page
  int total = 0;                  // rows matching the filter
};

// TrialKey is a trial's identity and state, what adaptive seeds decide on.
struct TrialKey {
  std::string schedule;
  int64_t seed = 0;
  bool is_baseline = false;
  v1::TrialState state = v1::TRIAL_STATE_UNSPECIFIED;
  // The steps it trains to this attempt: an ASHA rung, or 0 for the whole
  // budget.
  int64_t target_steps = 0;
};

// ThroughputSample is one completed trial's training speed with the model and
// budget of its experiment's resolved spec, what a plan's measured
// throughput is drawn from (server/core/experiments/plan.h).
struct ThroughputSample {
  int64_t experiment_id = 0;
  double tokens_per_second = 0.0;
  std::string device;  // the trainer's ("" when unknown)
  v1::ModelConfig model;
  v1::Budget budget;
};

// SeedRound is one adaptive-seeds, guided or ASHA decision to apply
// (server/core/experiments/seeds.h). It was made from a snapshot with
// `seen_trials` trials of which `seen_finished` had finished (completed,
// diverged or failed) or stopped at a rung, and holds only while the experiment
// still has exactly those counts.
struct SeedRound {
  int64_t experiment_id = 0;
  int64_t seen_trials = 0;
  int64_t seen_finished = 0;
  std::vector<NewTrial> trials;  // to add, queued, with their target_steps
  // ASHA: each schedule's trials stopped at from_step are queued again with
  // to_step as their target.
  std::vector<AshaPromotion> promotions;
  std::string note;  // the decision's summary, for users
  int64_t now_ms = 0;
};

struct SeedRoundResult {
  int added = 0;  // trials inserted (an existing (schedule, seed) is skipped)
  int promoted = 0;  // trials queued again by the promotions
  v1::ExperimentState state = v1::EXPERIMENT_STATE_UNSPECIFIED;  // after it
};

// ExperimentExtension is one Extend to apply (ExperimentManager::Extend):
// the stored spec with its new seeds and schedules, and the trials it adds,
// each trained to the whole budget. It was planned from a snapshot with
// `seen_trials` trials and holds only while the experiment still has
// exactly that many.
struct ExperimentExtension {
  int64_t experiment_id = 0;
  v1::ExperimentSpec spec;   // replaces the stored spec
  double grid_steps = -1.0;  // of `spec`; negative: stored NULL
  std::vector<NewTrial> trials;
  int64_t seen_trials = 0;
  int64_t now_ms = 0;
};

struct ExtendedExperiment {
  int added = 0;  // trials inserted (an existing (schedule, seed) is skipped)
  v1::Experiment experiment;  // after it
};

class ExperimentStore {
 public:
  virtual ~ExperimentStore() = default;

  // --- experiments --------------------------------------------------------
  // CreateExperiment stores the experiment and its trials in one
  // transaction, state ACTIVE, every trial queued.
  virtual absl::StatusOr<CreatedExperiment> CreateExperiment(
      const NewExperiment& experiment) = 0;
  // GetExperiment returns the experiment with its trial counts and progress;
  // NotFound if there is no such id.
  virtual absl::StatusOr<v1::Experiment> GetExperiment(int64_t id) = 0;
  // ListExperiments pages by ascending id; empty owner means everyone's.
  virtual absl::StatusOr<ExperimentPage> ListExperiments(
      const std::string& owner, int limit, int64_t after_id) = 0;
  // ListExperimentSummaries pages as ListExperiments, without reading the
  // specs: each experiment has no spec, and its strategy and grid_steps from
  // their columns (an experiment stored before those columns has strategy
  // STRATEGY_STATE_UNSPECIFIED and grid_steps -1: read it whole to know).
  virtual absl::StatusOr<ExperimentPage> ListExperimentSummaries(
      const std::string& owner, int limit, int64_t after_id) = 0;
  // SetExperimentState moves ACTIVE <-> PAUSED. NotFound; FailedPrecondition
  // when the experiment is cancelled or done.
  virtual absl::StatusOr<v1::Experiment> SetExperimentState(
      int64_t id, v1::ExperimentState state, int64_t now_ms) = 0;
  // CancelExperiment marks the experiment and every unfinished trial
  // cancelled (leased/running ones learn it at their next heartbeat).
  // NotFound; OK and unchanged if already cancelled or done.
  virtual absl::StatusOr<v1::Experiment> CancelExperiment(int64_t id,
                                                          int64_t now_ms) = 0;
  virtual absl::StatusOr<v1::Experiment> SetExperimentPriority(
      int64_t id, int priority, int64_t now_ms) = 0;
  // DeleteExperiment removes a done or cancelled experiment and every row
  // stored for it — its trials' points and attempts, its trials, its row —
  // in one transaction; a worker still recorded on one of its trials is
  // recorded idle; its attempts' worker time stays in ListUsageSpans.
  // Neither its id nor its trials' ids are given to a later row. NotFound;
  // FailedPrecondition, with nothing changed, while it is active or paused.
  virtual absl::StatusOr<DeletedExperiment> DeleteExperiment(int64_t id) = 0;
  // CountQueuedTrialsOf counts `owner`'s queued trials in active and paused
  // experiments.
  virtual absl::StatusOr<int64_t> CountQueuedTrialsOf(
      const std::string& owner) = 0;
  // CountActiveExperiments counts `owner`'s active and paused experiments.
  virtual absl::StatusOr<int64_t> CountActiveExperiments(
      const std::string& owner) = 0;

  // --- trials -------------------------------------------------------------
  // ListTrials pages an experiment's trials; state UNSPECIFIED means all.
  virtual absl::StatusOr<TrialPage> ListTrials(int64_t experiment_id,
                                               v1::TrialState state, int limit,
                                               int64_t after_id) = 0;
  // GetTrial returns the trial with its attempt history; NotFound.
  virtual absl::StatusOr<v1::Trial> GetTrial(int64_t trial_id) = 0;
  // FindBaselineTrial returns the experiment's baseline trial for `seed`;
  // NotFound if there is none.
  virtual absl::StatusOr<v1::Trial> FindBaselineTrial(int64_t experiment_id,
                                                      int64_t seed) = 0;
  // ListFinishedOutcomes returns the experiment's completed, diverged and
  // failed trials, by id, as the ranking needs them (val curve from the
  // compact blob written at completion; the points table is not scanned).
  // Metrics are read for completed trials only; worker_id is the worker that
  // held the trial last, device the trainer's (NULL before the v6 backfill:
  // "").
  virtual absl::StatusOr<std::vector<TrialOutcome>> ListFinishedOutcomes(
      int64_t experiment_id) = 0;
  // ListTrialKeys returns every trial of the experiment (any state) as its
  // (schedule, seed, is_baseline, state, target_steps), by id.
  virtual absl::StatusOr<std::vector<TrialKey>> ListTrialKeys(
      int64_t experiment_id) = 0;
  // ListThroughputSamples returns the `limit` most recently stored completed
  // trials that reported a positive tokens/s, newest first.
  virtual absl::StatusOr<std::vector<ThroughputSample>> ListThroughputSamples(
      int limit) = 0;
  // ListAshaTrials returns every trial of the experiment as ASHA decides on
  // it (scheduler/records.h): at_rung for TRIAL_STOPPED_AT_RUNG, its target
  // steps, and its stored val loss at each of `rungs` it has a point for.
  virtual absl::StatusOr<std::vector<AshaTrial>> ListAshaTrials(
      int64_t experiment_id, const std::vector<int64_t>& rungs) = 0;
  // FindLadderRung returns the id of the ladder's experiment at `rung`, or 0
  // when none is stored.
  virtual absl::StatusOr<int64_t> FindLadderRung(int64_t ladder_id,
                                                 int rung) = 0;
  // ListLadder returns the ladder's experiments, by rung.
  virtual absl::StatusOr<std::vector<v1::Experiment>> ListLadder(
      int64_t ladder_id) = 0;
  // SetLadderNote records the ladder's word on the experiment's rung.
  // NotFound.
  virtual absl::Status SetLadderNote(int64_t experiment_id,
                                     const std::string& note,
                                     int64_t now_ms) = 0;
  // ApplySeedRound applies an adaptive-seeds decision in one transaction:
  // when the experiment is active or paused and still has the round's seen
  // counts, it adds round.trials (queued, with the experiment's config
  // fingerprint; a (schedule, seed) it already has is skipped), adds their
  // number to seeds_added, queues the promoted trials (those still stopped
  // at the promotion's rung) with their next target, records the note, and
  // marks the experiment done
  // when it then has no queued, leased or running trial. Aborted when the
  // counts changed (decide again on fresh state); OK and nothing written
  // for a cancelled or done experiment; NotFound. An experiment with a
  // seeds policy becomes done only here: finishing its last trial does not
  // end it.
  virtual absl::StatusOr<SeedRoundResult> ApplySeedRound(
      const SeedRound& round) = 0;
  // ExtendExperiment applies an Extend in one transaction: it stores
  // extension.spec (and its grid_steps), adds extension.trials queued with
  // the experiment's config fingerprint and whole budget (a (schedule, seed)
  // it already has is skipped), and makes a done experiment active again (a
  // paused one stays paused); finishing its new trials ends it as any
  // experiment ends (an experiment decided by the coordinator through
  // ApplySeedRound). NotFound; FailedPrecondition, with nothing changed,
  // for a cancelled experiment; Aborted when its trial count is no longer
  // extension.seen_trials (plan again on fresh state).
  virtual absl::StatusOr<ExtendedExperiment> ExtendExperiment(
      const ExperimentExtension& extension) = 0;
  // CountFinished returns how many of the experiment's trials completed,
  // diverged or failed (it only grows, so it versions ranking caches).
  virtual absl::StatusOr<int64_t> CountFinished(int64_t experiment_id) = 0;
  // CountTrialsByState counts every stored trial, keyed by state.
  virtual absl::StatusOr<std::map<v1::TrialState, int64_t>>
  CountTrialsByState() = 0;
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_EXPERIMENT_STORE_H_
