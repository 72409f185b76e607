// Store: the coordinator's durable state — users and hashed tokens,
// experiments (their resolved spec), trials and their attempt history, loss
// curves and workers — behind one typed interface, so server/ never writes
// SQL and its tests may pass a fake. SqliteStore (sqlite_store.h) is the real
// one.
//
// Rows are prism.v1 messages where the wire already has the shape
// (Experiment, Trial, Worker, LossPoint). Every write is one transaction:
// when a method returns OK its effect is committed (and survives a process
// crash); when it fails nothing of it is visible.
//
// The queue's integrity rules live here as compare-and-set writes: a report,
// heartbeat, completion or failure names (trial, attempt, worker) and is
// applied only while that trial is leased or running under exactly that
// attempt and worker; otherwise the method returns FailedPrecondition and
// writes nothing. That is what keeps a stalled worker from double-writing. The
// lease *policy* (which trial next) is server/queue's; storage answers its
// questions and applies its decision.
//
// The curve rule (what keeps a stored curve without gaps; the worker's half
// is in worker/worker.h): a trial's stored points are always a prefix of the
// order its trainer emits them in. Points are stored once per (trial,
// split, step) and a repeat is ignored, so an attempt may redo steps; an
// attempt only ever starts at or before the end of that prefix, because a
// checkpoint is written only after every earlier point was stored and a
// worker never resumes past LastStoredSteps' complete prefix
// (TrialTask.stored_step). storage/check.h verifies the rule on a file.
//
//   std::unique_ptr<Store> store = *SqliteStore::Open("/data/prism.db");
//   absl::StatusOr<CreatedExperiment> e = store->CreateExperiment(spec);
//
// Thread-safety: every method may be called from any thread concurrently.
// Time is always passed in (now_ms): storage has no clock.
#ifndef PRISM_STORAGE_STORE_H_
#define PRISM_STORAGE_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/records.h"
#include "storage/write_observer.h"

namespace prism::storage {

// TokenInfo is what authenticating a token needs from its row.
struct TokenInfo {
  std::string id;  // the first 12 hex digits of the hash (v1::TokenInfo.id)
  std::string user;
  v1::Role role = v1::ROLE_UNSPECIFIED;
  int64_t expires_ms = 0;  // 0: never
  int64_t revoked_ms = 0;  // 0: not revoked
};

// TokenIdOf returns the id of the token whose SHA-256 hex is `token_hash`.
inline std::string TokenIdOf(const std::string& token_hash) {
  return token_hash.substr(0, 12);
}

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

// LeaseCandidate is an active experiment with at least one queued trial.
struct LeaseCandidate {
  int64_t experiment_id = 0;
  std::string owner;
  int priority = 0;
  int64_t created_ms = 0;
};

// UserPolicy is what an admin set for one user: the user's share of the
// workers in fair share and the user's quotas. A user without a row has
// the defaults.
struct UserPolicy {
  double share = 1.0;   // relative weight; > 0
  int max_running = 0;  // leased + running trials; 0: no quota
  // Queued trials and active (or paused) experiments at submit; 0: the
  // coordinator's default (server/core/experiments/limits.h).
  int max_queued = 0;
  int max_active = 0;
};

// UsageSpan is one attempt's hold on a worker, for fair share's usage:
// from its lease (started_ms) to its end (ended_ms; 0 while it is live).
struct UsageSpan {
  std::string owner;
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
};

// AttemptRef names the lease a worker believes it holds.
struct AttemptRef {
  int64_t trial_id = 0;
  int32_t attempt = 0;
  std::string worker_id;
};

struct HeartbeatResult {
  // The trial is no longer this worker's (cancelled, expired, re-leased or
  // finished): the worker should stop training it.
  bool stop = false;
  int64_t lease_deadline_ms = 0;
  int64_t experiment_id = 0;
};

// ReportWrite is one Report RPC's points; WriteReports commits many at once.
struct ReportWrite {
  AttemptRef ref;
  std::vector<v1::LossPoint> points;
  int64_t now_ms = 0;
  int64_t lease_deadline_ms = 0;  // a report renews the lease like a heartbeat
};

struct ReportOutcome {
  absl::Status status;  // FailedPrecondition for a stale attempt
  int stored = 0;
  int duplicates = 0;
  int64_t experiment_id = 0;
  bool started = false;  // this report moved the trial leased -> running
};

// ExpiredLease is a trial whose lease ExpireLeases took back, for events and
// logs.
struct ExpiredLease {
  v1::Trial trial;  // after the change: queued, or failed at max attempts
  std::string worker_id;
};

struct LastStored {
  int64_t train = -1;
  int64_t val = -1;
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

struct WorkerUpdate {
  std::string worker_id;
  int64_t trial_id = 0;  // 0 when idle
  int64_t now_ms = 0;
  double tokens_per_second = 0.0;
};

class Store {
 public:
  virtual ~Store() = default;

  // SetWriteObserver reports every later write's storage fault, and every
  // committed write, to `observer` (storage/write_observer.h), which must
  // outlive the store or be replaced by nullptr first.
  virtual void SetWriteObserver(WriteObserver* observer) = 0;

  // --- users and tokens ---------------------------------------------------
  // CreateToken stores `token_hash` (never the token) for `user` (created if
  // new), expiring at `expires_ms` (0: never), its id TokenIdOf(hash).
  // AlreadyExists if the hash or the id is taken.
  virtual absl::Status CreateToken(const std::string& token_hash,
                                   const std::string& user, v1::Role role,
                                   int64_t now_ms, int64_t expires_ms) = 0;
  // LookupToken returns who holds the token with this hash, revoked and
  // expired ones included; NotFound if none.
  virtual absl::StatusOr<TokenInfo> LookupToken(
      const std::string& token_hash) = 0;
  // CountTokens counts every token row, revoked and expired ones included.
  virtual absl::StatusOr<int64_t> CountTokens() = 0;
  // ListTokens returns `user`'s tokens (everyone's when empty), oldest first.
  virtual absl::StatusOr<std::vector<v1::TokenInfo>> ListTokens(
      const std::string& user) = 0;
  // GetToken returns the token with this id; NotFound if none.
  virtual absl::StatusOr<v1::TokenInfo> GetToken(const std::string& id) = 0;
  // RevokeToken marks the token revoked at now_ms and returns it; NotFound
  // if there is no such id; OK and unchanged when it already was revoked;
  // FailedPrecondition when it is the last admin token still usable (not
  // revoked, not expired at now_ms), which would lock every admin out.
  virtual absl::StatusOr<v1::TokenInfo> RevokeToken(const std::string& id,
                                                    int64_t now_ms) = 0;
  // RecordTokensUsed sets last_used_ms of each (hash, ms) pair, in one
  // transaction, never moving it back; hashes with no row are skipped.
  virtual absl::Status RecordTokensUsed(
      const std::vector<std::pair<std::string, int64_t>>& used) = 0;

  // SetUserPolicy stores `user`'s share and quotas (the user row is created
  // if new; the caller validates the values).
  virtual absl::Status SetUserPolicy(const std::string& user,
                                     const UserPolicy& policy,
                                     int64_t now_ms) = 0;
  // ListUserPolicies returns every user's policy (the defaults for users
  // no admin has set).
  virtual absl::StatusOr<std::map<std::string, UserPolicy>>
  ListUserPolicies() = 0;

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
  // GetPoints returns a trial's points ordered by (split, step).
  virtual absl::StatusOr<std::vector<v1::LossPoint>> GetPoints(
      int64_t trial_id) = 0;
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
  // LastStoredSteps returns the highest stored step of the trial's train and
  // val points (-1 for a split with none). NotFound for no such trial.
  virtual absl::StatusOr<LastStored> LastStoredSteps(int64_t trial_id) = 0;
  // CountFinished returns how many of the experiment's trials completed,
  // diverged or failed (it only grows, so it versions ranking caches).
  virtual absl::StatusOr<int64_t> CountFinished(int64_t experiment_id) = 0;
  // CountTrialsByState counts every stored trial, keyed by state.
  virtual absl::StatusOr<std::map<v1::TrialState, int64_t>>
  CountTrialsByState() = 0;

  // --- the queue ----------------------------------------------------------
  // ListLeaseCandidates returns every ACTIVE experiment that has a queued
  // trial, in no particular order (the queue's policy orders them).
  virtual absl::StatusOr<std::vector<LeaseCandidate>> ListLeaseCandidates() = 0;
  // CountLiveTrialsByUser counts leased + running trials per owner.
  virtual absl::StatusOr<std::map<std::string, int>>
  CountLiveTrialsByUser() = 0;
  // LeaseNextTrial leases the experiment's lowest-id queued trial to
  // `worker_id`: attempt + 1, deadline, an open attempt row (its
  // resumed_from_step unset until StartAttempt), the worker's current trial.
  // Returns nullopt when it has no queued trial (or is no longer active).
  virtual absl::StatusOr<std::optional<v1::Trial>> LeaseNextTrial(
      int64_t experiment_id, const std::string& worker_id, int64_t now_ms,
      int64_t deadline_ms) = 0;
  // RedeliverLease returns the trial leased to `worker_id` that the worker
  // never started (still leased, lease not expired), its deadline renewed to
  // deadline_ms, or nullopt. A worker asks for a lease only when it holds no
  // trial, so such a trial's lease answer was lost (the coordinator died
  // after committing it): it is answered again rather than waited out.
  virtual absl::StatusOr<std::optional<v1::Trial>> RedeliverLease(
      const std::string& worker_id, int64_t now_ms, int64_t deadline_ms) = 0;
  // Heartbeat renews the lease (leased -> running on the first one) and
  // records the step; stop=true (and nothing renewed) when the trial is no
  // longer this attempt's. NotFound for an unknown trial; InvalidArgument
  // for a step outside the trial's budget (0 to total_steps).
  virtual absl::StatusOr<HeartbeatResult> Heartbeat(const AttemptRef& ref,
                                                    int64_t step,
                                                    int64_t now_ms,
                                                    int64_t deadline_ms) = 0;
  // StartAttempt records the step the attempt's trainer resumed from on its
  // open attempt row, and renews the lease like a heartbeat (leased ->
  // running). Returns the lease deadline; FailedPrecondition for a stale
  // attempt; NotFound for an unknown trial; InvalidArgument for a step
  // outside the trial's budget.
  virtual absl::StatusOr<int64_t> StartAttempt(const AttemptRef& ref,
                                               int64_t resumed_from_step,
                                               int64_t now_ms,
                                               int64_t deadline_ms) = 0;
  // WriteReports applies every report in one transaction (group commit):
  // points INSERT OR IGNORE keyed (trial, split, step). One outcome per
  // report, in order; a stale report's outcome is FailedPrecondition, one
  // with a point outside the trial's budget (0 to total_steps)
  // InvalidArgument (none of its points stored). A non-OK return means
  // nothing was committed.
  virtual absl::StatusOr<std::vector<ReportOutcome>> WriteReports(
      const std::vector<const ReportWrite*>& reports) = 0;
  // CompleteTrial stores remaining points, the metrics and the compact val
  // curve; the trial becomes completed (diverged when metrics.diverged()),
  // or TRIAL_STOPPED_AT_RUNG when it has a target_steps below total_steps
  // (and did not diverge): the attempt ends there, the trial waits for an
  // ASHA decision.
  // Idempotent: the same attempt completing again returns the trial.
  // FailedPrecondition for a stale attempt. InvalidArgument for a point
  // outside the budget, or metrics.steps other than what the attempt
  // trained: total_steps, or target_steps at an ASHA rung (a diverged
  // trial: anything within the budget).
  virtual absl::StatusOr<v1::Trial> CompleteTrial(
      const AttemptRef& ref, const v1::TrialMetrics& metrics,
      const std::vector<v1::LossPoint>& points, int64_t now_ms) = 0;
  // FailTrial requeues the trial when retryable and fewer than max attempts
  // failed (this one included), else marks it failed with `message`.
  // FailedPrecondition for a stale attempt.
  virtual absl::StatusOr<v1::Trial> FailTrial(const AttemptRef& ref,
                                              const std::string& message,
                                              bool retryable,
                                              int64_t now_ms) = 0;
  // ReleaseTrial requeues the trial whatever its attempts: the worker handed
  // it back on purpose. The attempt ends TRIAL_QUEUED with "released by
  // worker" (plus `message`), which max attempts do not count.
  // FailedPrecondition for a stale attempt.
  virtual absl::StatusOr<v1::Trial> ReleaseTrial(const AttemptRef& ref,
                                                 const std::string& message,
                                                 int64_t now_ms) = 0;
  // ExpireLeases requeues every leased/running trial whose deadline is
  // before now_ms, or fails it when its failed attempts (expiries and
  // failures, this one included; releases are not counted) reached the
  // experiment's max attempts. Returns the trials it changed. `proceed`, when
  // set, is asked once the write lock is held, before anything is read: false
  // expires nothing. The coordinator's expiry loop uses it to stand down when
  // a storage stall began while it waited for the lock (heartbeats waited
  // behind the same lock, so the deadlines it would act on are stale).
  virtual absl::StatusOr<std::vector<ExpiredLease>> ExpireLeases(
      int64_t now_ms, const std::function<bool()>& proceed) = 0;
  absl::StatusOr<std::vector<ExpiredLease>> ExpireLeases(int64_t now_ms) {
    return ExpireLeases(now_ms, nullptr);
  }
  // ProbeWrite commits a write of one row that changes nothing anyone reads
  // (it rewrites the newest schema_migrations row as it is), so a caller
  // learns whether the disk takes writes again when nothing else writes.
  // Unavailable with SQLite's message when it does not.
  virtual absl::Status ProbeWrite() = 0;
  // ExtendLiveLeases sets every live lease's deadline to at least
  // deadline_ms (at coordinator start: workers could not heartbeat while it
  // was down). Returns how many leases it touched.
  virtual absl::StatusOr<int> ExtendLiveLeases(int64_t deadline_ms) = 0;
  // CountQueued counts queued trials of active experiments (queue depth).
  virtual absl::StatusOr<int64_t> CountQueued() = 0;
  // ListUsageSpans returns the attempts that hold a worker now (the trial
  // leased or running) or ended at or after `ended_since_ms`, with the
  // owner of their experiment, in no particular order.
  virtual absl::StatusOr<std::vector<UsageSpan>> ListUsageSpans(
      int64_t ended_since_ms) = 0;
  // CountQueuedTrialsOf counts `owner`'s queued trials in active and paused
  // experiments.
  virtual absl::StatusOr<int64_t> CountQueuedTrialsOf(
      const std::string& owner) = 0;
  // CountActiveExperiments counts `owner`'s active and paused experiments.
  virtual absl::StatusOr<int64_t> CountActiveExperiments(
      const std::string& owner) = 0;

  // --- workers ------------------------------------------------------------
  // UpsertWorker registers or re-registers a worker (keeping registered
  // time on re-registration) and returns it. The ownership check and the
  // write are one statement: PermissionDenied, with nothing changed, when
  // the id belongs to another user and `take_over` is false.
  virtual absl::StatusOr<v1::Worker> UpsertWorker(const v1::Worker& worker,
                                                  int64_t now_ms,
                                                  bool take_over) = 0;
  // GetWorker returns the stored worker; NotFound.
  virtual absl::StatusOr<v1::Worker> GetWorker(const std::string& id) = 0;
  // TouchWorker records a heartbeat (a stopped worker is running again).
  // NotFound for an unknown worker.
  virtual absl::Status TouchWorker(const WorkerUpdate& update) = 0;
  // StopWorker records that the worker process said goodbye: it holds no
  // trial and stopped_unix_ms is now_ms until it registers or heartbeats
  // again. NotFound for an unknown worker.
  virtual absl::Status StopWorker(const std::string& id, int64_t now_ms) = 0;
  // ListWorkers returns every worker (state is left for the caller to
  // derive from last_heartbeat_unix_ms and stopped_unix_ms).
  virtual absl::StatusOr<std::vector<v1::Worker>> ListWorkers() = 0;

  // --- scaler (server/core/queue/scaler.h)
  // ----------------------------------------- ScalerTag returns the tag
  // `backend`'s worker jobs carry for this database, storing `proposed` first
  // when there is none yet.
  virtual absl::StatusOr<std::string> ScalerTag(const std::string& backend,
                                                const std::string& proposed,
                                                int64_t now_ms) = 0;
  // RecordScalerJob records a job (submitted, or adopted from the
  // scheduler's listing) as open; recording an open job again changes
  // nothing.
  virtual absl::Status RecordScalerJob(const std::string& backend,
                                       const std::string& job_id,
                                       int64_t now_ms) = 0;
  // EndScalerJob records that the scheduler no longer lists the job.
  virtual absl::Status EndScalerJob(const std::string& backend,
                                    const std::string& job_id,
                                    int64_t now_ms) = 0;
  // ListOpenScalerJobs returns the ids of `backend`'s jobs not yet ended.
  virtual absl::StatusOr<std::vector<std::string>> ListOpenScalerJobs(
      const std::string& backend) = 0;
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_STORE_H_
