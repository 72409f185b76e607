// ExperimentManager: experiments and their trials as users see them —
// submit (validate and plan, then store everything in one transaction),
// get, list, cancel, pause, resume, reprioritise, delete, list trials; and each
// user's fair-share weight and quotas. Users change only their own
// experiments; admins any, and only admins set a user's policy. Get and
// List say where a waiting experiment stands in the queue and why
// (QueueManager::Standings). Every input is bounded by Limits
// (server/core/experiments/limits.h): a spec over a limit, a non-admin's
// priority outside the user range, or a user at
// --max-active-experiments-per-user is refused with nothing stored.
//
// Thread-safety: all methods are thread-safe.
#ifndef PRISM_SERVER_CORE_EXPERIMENTS_EXPERIMENTS_H_
#define PRISM_SERVER_CORE_EXPERIMENTS_EXPERIMENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prism/v1/prism.pb.h"
#include "server/core/auth/auth.h"
#include "server/core/experiments/extend.h"
#include "server/core/experiments/limits.h"
#include "server/core/experiments/spec.h"
#include "server/core/infra/clock.h"
#include "server/core/infra/events.h"
#include "server/core/queue/queue.h"
#include "storage/experiment_store.h"
#include "storage/token_store.h"
#include "storage/worker_store.h"

namespace prism::server {

inline constexpr int kDefaultPageSize = 50;
inline constexpr int kMaxPageSize = 1000;
// The largest per-user limit of active experiments an admin may set.
inline constexpr int kMaxActiveQuota = 10000;

// UserLimits are the limits in force for one caller at submit (0: none).
struct UserLimits {
  int64_t max_queued = 0;
  int max_active = 0;
};

class ExperimentManager {
 public:
  ExperimentManager(storage::ExperimentStore* experiments,
                    storage::TokenStore* tokens, storage::WorkerStore* workers,
                    const Clock* clock, EventBus* events,
                    PlanOptions plan_options, Limits limits = {},
                    QueueManager* queue = nullptr);

  // Submit plans request.spec (or request.spec_text when set) and stores the
  // experiment with one queued trial per (schedule, seed); under a seeds
  // policy, per seed of the first round (server/core/experiments/seeds.h adds
  // the rest). The response's headroom says where the caller stands against
  // each limit. With request.dry_run it checks everything and stores nothing
  // (the experiment's id is 0). InvalidArgument naming the field and the limit,
  // with nothing stored, for a bad spec or one over a limit (checked before
  // planning where the spec says it); ResourceExhausted when the caller is
  // at their limit of active or paused experiments, or the new trials would
  // take them past their queued-trials quota (LimitsFor).
  absl::StatusOr<v1::SubmitResponse> Submit(const Caller& caller,
                                            const v1::SubmitRequest& request);
  // Get returns the experiment with counts and progress; NotFound.
  absl::StatusOr<v1::Experiment> Get(int64_t id);
  // List pages experiment summaries (no spec; Get has it), at most
  // Limits::max_page_bytes a page.
  absl::StatusOr<v1::ListExperimentsResponse> List(
      const v1::ListExperimentsRequest& request);
  // Cancel, Pause, Resume and SetPriority return the updated experiment.
  // NotFound; PermissionDenied for someone else's experiment;
  // FailedPrecondition to pause/resume a finished one; InvalidArgument for
  // a non-admin's priority outside [-max_user_priority, max_user_priority].
  absl::StatusOr<v1::Experiment> Cancel(const Caller& caller, int64_t id);
  absl::StatusOr<v1::Experiment> Pause(const Caller& caller, int64_t id);
  absl::StatusOr<v1::Experiment> Resume(const Caller& caller, int64_t id);
  absl::StatusOr<v1::Experiment> SetPriority(
      const Caller& caller, const v1::SetPriorityRequest& request);
  // Extend adds seeds or schedules to the experiment (ExtendRequest,
  // server/core/experiments/extend.h), reusing every trial it has: only the
  // missing (schedule, seed) pairs are queued, each to the whole budget, and a
  // done experiment is active again until they finish. The response says what
  // was queued and reused and where the caller stands against the limits
  // (headroom, as Submit's; plan is left empty); with request.dry_run it
  // checks everything and stores nothing. NotFound; PermissionDenied for
  // someone else's experiment; InvalidArgument naming the field
  // (PlanExtension); FailedPrecondition for a cancelled experiment or a
  // ladder's rung (the ladder carried its ranking up already);
  // ResourceExhausted naming the limit and the numbers, with nothing added,
  // past seeds_policy.max, racing.max_seeds, 64 seeds per schedule, the
  // caller's queued-trials quota or --max-trials-per-experiment.
  absl::StatusOr<v1::ExtendResponse> Extend(const Caller& caller,
                                            const v1::ExtendRequest& request);
  // Delete removes a done or cancelled experiment and everything stored for
  // it (storage's DeleteExperiment, one transaction), logs who did it, and
  // returns what it removed. NotFound; PermissionDenied for someone else's;
  // FailedPrecondition, with nothing changed, while it is active or paused,
  // and for a ladder's rung while another rung of its ladder is active or
  // paused or a lower rung is still stored: a ladder is deleted from its
  // first rung up, because a stored done rung whose next rung is missing
  // submits that rung again (LadderPlanner::ReconcileAll). Watchers of the
  // experiment get no further events.
  absl::StatusOr<v1::DeleteExperimentResponse> Delete(const Caller& caller,
                                                      int64_t id);
  // SetUserPolicy sets a user's share and quotas (unset fields keep their
  // value) and returns the policy with the user's usage. PermissionDenied
  // for a non-admin; InvalidArgument naming the field for an empty user, a
  // share <= 0 (or not finite, or above 1e6), a quota below 0, a
  // max_running above --max-running-per-user (when set), a max_queued
  // above --max-trials-per-experiment x --max-active-experiments-per-user,
  // or a max_active above kMaxActiveQuota.
  absl::StatusOr<v1::UserPolicy> SetUserPolicy(
      const Caller& caller, const v1::SetUserPolicyRequest& request);
  // ListUsers returns every user's policy and usage, by name.
  absl::StatusOr<v1::ListUsersResponse> ListUsers();
  // ListTrials pages an experiment's trials (with principle reports).
  // NotFound for an unknown experiment.
  absl::StatusOr<v1::ListTrialsResponse> ListTrials(
      const v1::ListTrialsRequest& request);

 private:
  absl::Status CheckOwner(const Caller& caller, int64_t id);
  // SetState is Pause and Resume: the owner's check, the store's ACTIVE <->
  // PAUSED move, the log line `logged`, the event.
  absl::StatusOr<v1::Experiment> SetState(const Caller& caller, int64_t id,
                                          v1::ExperimentState state,
                                          const char* logged);
  // CheckLadderDeletable is Delete's rule for a ladder's rung (OK for an
  // experiment that is not one).
  absl::Status CheckLadderDeletable(const v1::Experiment& experiment);
  void Publish(const v1::Experiment& experiment);
  // FillStandings sets queue_position and queue_reason of waiting ones.
  absl::Status FillStandings(const std::vector<v1::Experiment*>& experiments);
  // LimitsFor is what holds for `caller`: the quotas an admin set, else the
  // coordinator's defaults (which do not hold for admins).
  UserLimits LimitsFor(const Caller& caller,
                       const storage::UserPolicy& policy) const;
  // CheckHeadroom returns the caller's headroom counting `adding` queued
  // trials and `new_experiments` more active ones (Submit: 1; Extend: 1 for
  // a done experiment it reopens); ResourceExhausted past a limit.
  absl::StatusOr<v1::Headroom> CheckHeadroom(const Caller& caller,
                                             int64_t adding, int64_t spec_bytes,
                                             int new_experiments = 1)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(submit_mu_);
  // CheckExtensionLimits refuses a plan past a seed limit of the spec or
  // --max-trials-per-experiment. ResourceExhausted.
  absl::Status CheckExtensionLimits(const v1::ExperimentSpec& spec,
                                    const ExtensionPlan& plan) const;

  storage::ExperimentStore* const experiments_;
  storage::TokenStore* const tokens_;
  storage::WorkerStore* const workers_;
  const Clock* const clock_;
  EventBus* const events_;
  const PlanOptions plan_options_;
  const Limits limits_;
  QueueManager* const queue_;  // nullptr: no queue standings, no usage
  // Held from counting a user's active experiments to storing the new one,
  // so concurrent submits cannot both pass the limit.
  absl::Mutex submit_mu_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_EXPERIMENTS_EXPERIMENTS_H_
