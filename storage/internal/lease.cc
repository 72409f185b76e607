#include "storage/internal/lease.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/internal/row_codecs.h"
#include "storage/internal/schema.h"

namespace prism::storage::internal {
namespace {

// LiveTrial is the part of a trial row the compare-and-set writes check.
struct LiveTrial {
  int64_t experiment_id = 0;
  int64_t state = 0;
  int32_t attempt = 0;
  std::string worker_id;
  int64_t total_steps = 0;
  int64_t target_steps = 0;  // an ASHA rung; 0: the whole budget
};

// RenewRunning marks a leased trial running (keeping its first start time),
// raises its last step to `step` and its lease deadline to `deadline_ms`
// (never lowering either), and returns the deadline now stored.
absl::StatusOr<int64_t> RenewRunning(Connection* c, int64_t trial_id,
                                     int64_t step, int64_t now_ms,
                                     int64_t deadline_ms) {
  PRISM_ASSIGN_OR_RETURN(
      Query q, c->Prepare("UPDATE trials SET state = ?1, started_ms = CASE "
                          "WHEN started_ms = 0 THEN ?2 ELSE started_ms END, "
                          "last_step = MAX(last_step, ?3), "
                          "lease_deadline_ms = MAX(lease_deadline_ms, ?4) "
                          "WHERE id = ?5 RETURNING lease_deadline_ms"));
  q.Bind(1, kRunning);
  q.Bind(2, now_ms);
  q.Bind(3, step);
  q.Bind(4, deadline_ms);
  q.Bind(5, trial_id);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

absl::StatusOr<LiveTrial> ReadLiveTrial(Connection* conn, int64_t trial_id) {
  PRISM_ASSIGN_OR_RETURN(
      Query q, conn->Prepare("SELECT experiment_id, state, attempt, worker_id, "
                             "total_steps, target_steps FROM trials WHERE "
                             "id = ?"));
  q.Bind(1, trial_id);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("trial ", trial_id, " not found"));
  }
  return LiveTrial{q.Int(0),  q.Int(1), static_cast<int32_t>(q.Int(2)),
                   q.Text(3), q.Int(4), q.Int(5)};
}

// CheckStep returns InvalidArgument when `step` (a point's, a heartbeat's,
// a resume's) lies outside the trial's budget, 0 through total_steps.
absl::Status CheckStep(const LiveTrial& t, int64_t trial_id,
                       absl::string_view what, int64_t step) {
  if (step >= 0 && step <= t.total_steps) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("trial ", trial_id, ": ", what, " ", step,
                   " is outside the trial's budget of ", t.total_steps,
                   " steps (0 to ", t.total_steps, ")"));
}

absl::Status CheckPointSteps(const LiveTrial& t, int64_t trial_id,
                             const std::vector<v1::LossPoint>& points) {
  for (const v1::LossPoint& p : points) {
    PRISM_RETURN_IF_ERROR(CheckStep(t, trial_id, "point step", p.step()));
  }
  return absl::OkStatus();
}

// CheckCompletedSteps holds a completion to what the attempt trained: a
// trial that did not diverge trained its whole budget, or stopped at its
// ASHA rung (target_steps); a diverged one stopped within the budget.
absl::Status CheckCompletedSteps(const LiveTrial& t, int64_t trial_id,
                                 const v1::TrialMetrics& metrics) {
  const int64_t steps = metrics.steps();
  if (metrics.diverged()) {
    PRISM_RETURN_IF_ERROR(CheckStep(t, trial_id, "metrics.steps", steps));
    return CheckStep(t, trial_id, "metrics.diverged_step",
                     metrics.diverged_step());
  }
  const bool at_rung = t.target_steps > 0 && t.target_steps < t.total_steps;
  if (steps == t.total_steps || (at_rung && steps == t.target_steps)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "trial ", trial_id, ": metrics.steps is ", steps,
      " but the trial trains ", t.total_steps, " steps",
      at_rung ? absl::StrCat(" (or ", t.target_steps, " to its rung)") : "",
      "; a trial stopped early is reported diverged, or failed"));
}

bool HoldsLease(const LiveTrial& t, const AttemptRef& ref) {
  return IsLive(t.state) && t.attempt == ref.attempt &&
         t.worker_id == ref.worker_id;
}

absl::Status StaleAttempt(const LiveTrial& t, const AttemptRef& ref) {
  return absl::FailedPreconditionError(absl::StrCat(
      "trial ", ref.trial_id, " attempt ", ref.attempt, " by worker '",
      ref.worker_id, "' does not hold the lease (trial is ",
      v1::TrialState_Name(static_cast<v1::TrialState>(t.state)), ", attempt ",
      t.attempt, ", worker '", t.worker_id, "')"));
}

// InsertPoints stores each point once per (trial, split, step). Only a
// repeat of a stored key is ignored: SQLite binds NaN as NULL, and a point
// with one is an error (the coordinator refuses them before), never a
// silent drop counted as a duplicate.
absl::Status InsertPoints(Connection* conn, int64_t trial_id,
                          const std::vector<v1::LossPoint>& points, int* stored,
                          int* duplicates, int64_t* max_step) {
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      conn->Prepare("INSERT INTO points (trial_id, split, step, loss, "
                    "learning_rate, tokens_per_second, elapsed_seconds) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (trial_id, "
                    "split, step) DO NOTHING"));
  for (const v1::LossPoint& p : points) {
    q.Bind(1, trial_id);
    q.Bind(2, static_cast<int64_t>(p.split()));
    q.Bind(3, p.step());
    q.Bind(4, static_cast<double>(p.loss()));
    q.Bind(5, static_cast<double>(p.learning_rate()));
    q.Bind(6, p.tokens_per_second());
    q.Bind(7, p.elapsed_seconds());
    PRISM_RETURN_IF_ERROR(q.Run());
    if (conn->changes() > 0) {
      ++*stored;
    } else {
      ++*duplicates;
    }
    *max_step = std::max(*max_step, p.step());
  }
  return absl::OkStatus();
}

// CloseAttempt ends the open attempt row with `outcome`.
absl::Status CloseAttempt(Connection* conn, int64_t trial_id, int32_t attempt,
                          v1::TrialState outcome, const std::string& message,
                          int64_t now_ms) {
  PRISM_ASSIGN_OR_RETURN(
      Query q, conn->Prepare("UPDATE trial_attempts SET ended_ms = ?, outcome "
                             "= ?, message = ? WHERE trial_id = ? AND attempt "
                             "= ?"));
  q.Bind(1, now_ms);
  q.Bind(2, static_cast<int64_t>(outcome));
  q.BindText(3, message);
  q.Bind(4, trial_id);
  q.Bind(5, static_cast<int64_t>(attempt));
  return q.Run();
}

absl::Status ReleaseWorker(Connection* conn, const std::string& worker_id,
                           int64_t trial_id) {
  PRISM_ASSIGN_OR_RETURN(
      Query q, conn->Prepare("UPDATE workers SET current_trial_id = 0 WHERE "
                             "id = ? AND current_trial_id = ?"));
  q.BindText(1, worker_id);
  q.Bind(2, trial_id);
  return q.Run();
}

// FinishExperimentIfDrained marks an active or paused experiment done once
// no trial is queued, leased or running. An experiment with a seeds policy is
// left to ApplySeedRound (`seeds_decided` true), which knows whether seeds
// are still to be added.
absl::Status FinishExperimentIfDrained(Connection* conn, int64_t id,
                                       int64_t now_ms,
                                       bool seeds_decided = false) {
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      conn->Prepare("UPDATE experiments SET state = ?, updated_ms = ? WHERE "
                    "id = ? AND state IN (?, ?) AND (adaptive_seeds = 0 OR ?) "
                    "AND NOT EXISTS (SELECT 1 FROM trials WHERE experiment_id "
                    "= ? AND state IN (?, ?, ?))"));
  q.Bind(1, static_cast<int64_t>(v1::EXPERIMENT_DONE));
  q.Bind(2, now_ms);
  q.Bind(3, id);
  q.Bind(4, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
  q.Bind(5, static_cast<int64_t>(v1::EXPERIMENT_PAUSED));
  q.Bind(6, static_cast<int64_t>(seeds_decided ? 1 : 0));
  q.Bind(7, id);
  q.Bind(8, kQueued);
  q.Bind(9, kLeased);
  q.Bind(10, kRunning);
  return q.Run();
}

// CountFailedAttempts counts the trial's attempts that ended failed (a Fail
// or an expired lease); released and cancelled ones do not count.
absl::StatusOr<int> CountFailedAttempts(Connection* conn, int64_t trial_id) {
  PRISM_ASSIGN_OR_RETURN(
      Query q, conn->Prepare("SELECT COUNT(*) FROM trial_attempts WHERE "
                             "trial_id = ? AND outcome = ?"));
  q.Bind(1, trial_id);
  q.Bind(2, static_cast<int64_t>(v1::TRIAL_FAILED));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? static_cast<int>(q.Int(0)) : 0;
}

absl::StatusOr<int> MaxAttempts(Connection* conn, int64_t experiment_id) {
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      conn->Prepare("SELECT max_attempts FROM experiments WHERE id = ?"));
  q.Bind(1, experiment_id);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError("experiment not found");
  return static_cast<int>(q.Int(0));
}

}  // namespace

absl::StatusOr<std::optional<v1::Trial>> LeaseNextTrial(
    Connection* c, int64_t experiment_id, const std::string& worker_id,
    int64_t now_ms, int64_t deadline_ms) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  int64_t trial_id = 0;
  int64_t attempt = 0;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT t.id, t.attempt FROM trials t "
                            "JOIN experiments e ON e.id = t.experiment_id "
                            "WHERE t.experiment_id = ? AND t.state = ? AND "
                            "e.state = ? ORDER BY t.id LIMIT 1"));
    q.Bind(1, experiment_id);
    q.Bind(2, kQueued);
    q.Bind(3, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return std::optional<v1::Trial>();
    trial_id = q.Int(0);
    attempt = q.Int(1) + 1;
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trials SET state = ?, attempt = ?, "
                            "worker_id = ?, lease_deadline_ms = ? WHERE id = "
                            "?"));
    q.Bind(1, kLeased);
    q.Bind(2, attempt);
    q.BindText(3, worker_id);
    q.Bind(4, deadline_ms);
    q.Bind(5, trial_id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("INSERT INTO trial_attempts (trial_id, attempt, "
                            "worker_id, started_ms, outcome) VALUES (?, ?, ?, "
                            "?, ?)"));
    q.Bind(1, trial_id);
    q.Bind(2, attempt);
    q.BindText(3, worker_id);
    q.Bind(4, now_ms);
    q.Bind(5, kRunning);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE workers SET current_trial_id = ?, "
                            "last_heartbeat_ms = ? WHERE id = ?"));
    q.Bind(1, trial_id);
    q.Bind(2, now_ms);
    q.BindText(3, worker_id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_ASSIGN_OR_RETURN(v1::Trial trial,
                         ReadTrial(c, trial_id, /*with_attempts=*/false));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return std::optional<v1::Trial>(std::move(trial));
}

absl::StatusOr<std::optional<v1::Trial>> RedeliverLease(
    Connection* c, const std::string& worker_id, int64_t now_ms,
    int64_t deadline_ms) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  int64_t trial_id = 0;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT id FROM trials WHERE state = ? AND "
                            "worker_id = ? AND lease_deadline_ms >= ? ORDER "
                            "BY id LIMIT 1"));
    q.Bind(1, kLeased);
    q.BindText(2, worker_id);
    q.Bind(3, now_ms);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return std::optional<v1::Trial>();
    trial_id = q.Int(0);
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trials SET lease_deadline_ms = MAX("
                            "lease_deadline_ms, ?) WHERE id = ?"));
    q.Bind(1, deadline_ms);
    q.Bind(2, trial_id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_ASSIGN_OR_RETURN(v1::Trial trial,
                         ReadTrial(c, trial_id, /*with_attempts=*/false));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return std::optional<v1::Trial>(std::move(trial));
}

absl::StatusOr<HeartbeatResult> Heartbeat(Connection* c, const AttemptRef& ref,
                                          int64_t step, int64_t now_ms,
                                          int64_t deadline_ms) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(LiveTrial t, ReadLiveTrial(c, ref.trial_id));
  HeartbeatResult result;
  result.experiment_id = t.experiment_id;
  if (!HoldsLease(t, ref)) {
    result.stop = true;
    return result;
  }
  PRISM_RETURN_IF_ERROR(CheckStep(t, ref.trial_id, "heartbeat step", step));
  PRISM_ASSIGN_OR_RETURN(
      result.lease_deadline_ms,
      RenewRunning(c, ref.trial_id, step, now_ms, deadline_ms));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return result;
}

absl::StatusOr<int64_t> StartAttempt(Connection* c, const AttemptRef& ref,
                                     int64_t resumed_from_step, int64_t now_ms,
                                     int64_t deadline_ms) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(LiveTrial t, ReadLiveTrial(c, ref.trial_id));
  if (!HoldsLease(t, ref)) return StaleAttempt(t, ref);
  PRISM_RETURN_IF_ERROR(
      CheckStep(t, ref.trial_id, "resumed_from_step", resumed_from_step));
  PRISM_ASSIGN_OR_RETURN(
      const int64_t deadline,
      RenewRunning(c, ref.trial_id, resumed_from_step, now_ms, deadline_ms));
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trial_attempts SET resumed_from_step = ? "
                            "WHERE trial_id = ? AND attempt = ?"));
    q.Bind(1, resumed_from_step);
    q.Bind(2, ref.trial_id);
    q.Bind(3, static_cast<int64_t>(ref.attempt));
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return deadline;
}

absl::StatusOr<std::vector<ReportOutcome>> WriteReports(
    Connection* c, const std::vector<const ReportWrite*>& reports) {
  std::vector<ReportOutcome> outcomes(reports.size());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  for (size_t i = 0; i < reports.size(); ++i) {
    const ReportWrite& r = *reports[i];
    ReportOutcome& out = outcomes[i];
    absl::StatusOr<LiveTrial> t = ReadLiveTrial(c, r.ref.trial_id);
    if (!t.ok()) {
      if (!absl::IsNotFound(t.status())) return t.status();
      out.status = t.status();
      continue;
    }
    out.experiment_id = t->experiment_id;
    if (!HoldsLease(*t, r.ref)) {
      out.status = StaleAttempt(*t, r.ref);
      continue;
    }
    out.status = CheckPointSteps(*t, r.ref.trial_id, r.points);
    if (!out.status.ok()) continue;
    int64_t max_step = 0;
    PRISM_RETURN_IF_ERROR(InsertPoints(c, r.ref.trial_id, r.points, &out.stored,
                                       &out.duplicates, &max_step));
    out.started = t->state == kLeased;
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trials SET state = ?1, started_ms = CASE "
                            "WHEN started_ms = 0 THEN ?2 ELSE started_ms END, "
                            "last_step = MAX(last_step, ?3), "
                            "lease_deadline_ms = MAX(lease_deadline_ms, ?4) "
                            "WHERE id = ?5"));
    q.Bind(1, kRunning);
    q.Bind(2, r.now_ms);
    q.Bind(3, max_step);
    q.Bind(4, r.lease_deadline_ms);
    q.Bind(5, r.ref.trial_id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return outcomes;
}

absl::StatusOr<v1::Trial> CompleteTrial(
    Connection* c, const AttemptRef& ref, const v1::TrialMetrics& metrics,
    const std::vector<v1::LossPoint>& points, int64_t now_ms) {
  std::string metrics_blob;
  if (!metrics.SerializeToString(&metrics_blob)) {
    return absl::InternalError("cannot serialize trial metrics");
  }
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(LiveTrial t, ReadLiveTrial(c, ref.trial_id));
  const bool finished_by_this_attempt =
      (t.state == v1::TRIAL_COMPLETED || t.state == v1::TRIAL_DIVERGED ||
       t.state == v1::TRIAL_STOPPED_AT_RUNG) &&
      t.attempt == ref.attempt && t.worker_id == ref.worker_id;
  if (finished_by_this_attempt) {
    // A re-sent Complete whose first acknowledgement was lost.
    return ReadTrial(c, ref.trial_id, /*with_attempts=*/true);
  }
  if (!HoldsLease(t, ref)) return StaleAttempt(t, ref);
  PRISM_RETURN_IF_ERROR(CheckCompletedSteps(t, ref.trial_id, metrics));
  PRISM_RETURN_IF_ERROR(CheckPointSteps(t, ref.trial_id, points));

  int stored = 0;
  int duplicates = 0;
  int64_t max_step = metrics.steps();
  PRISM_RETURN_IF_ERROR(
      InsertPoints(c, ref.trial_id, points, &stored, &duplicates, &max_step));
  std::string curve;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT step, loss FROM points WHERE trial_id = ? "
                            "AND split = ? ORDER BY step"));
    q.Bind(1, ref.trial_id);
    q.Bind(2, static_cast<int64_t>(v1::SPLIT_VAL));
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      AppendCurvePoint(q.Int(0), static_cast<float>(q.Double(1)), &curve);
    }
  }
  int64_t target_steps = 0;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT target_steps, total_steps FROM trials "
                            "WHERE id = ?"));
    q.Bind(1, ref.trial_id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    // An ASHA trial short of the budget waits at its rung; one that trained
    // the whole budget anyway is simply completed.
    if (row && q.Int(0) > 0 && q.Int(0) < q.Int(1) &&
        metrics.steps() < q.Int(1)) {
      target_steps = q.Int(0);
    }
  }
  const v1::TrialState state = metrics.diverged() ? v1::TRIAL_DIVERGED
                               : target_steps > 0 ? v1::TRIAL_STOPPED_AT_RUNG
                                                  : v1::TRIAL_COMPLETED;
  {
    static const std::string sql = absl::StrCat(
        "UPDATE trials SET state = ?1, metrics = ?2, val_curve = ?3, "
        "last_step = MAX(last_step, ?4), started_ms = CASE WHEN started_ms = "
        "0 THEN ?5 ELSE started_ms END, finished_ms = ?5, lease_deadline_ms = "
        "0, target_steps = CASE WHEN ?1 = ",
        static_cast<int>(v1::TRIAL_STOPPED_AT_RUNG),
        " THEN target_steps ELSE 0 END, (", kRankingColumns, ") = (",
        RankingPlaceholders(7), ") WHERE id = ?6");
    PRISM_ASSIGN_OR_RETURN(Query q, c->Prepare(sql.c_str()));
    q.Bind(1, static_cast<int64_t>(state));
    q.BindBlob(2, metrics_blob);
    q.BindBlob(3, curve);
    q.Bind(4, max_step);
    q.Bind(5, now_ms);
    q.Bind(6, ref.trial_id);
    BindRankingColumns(metrics, /*first=*/7, &q);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_RETURN_IF_ERROR(
      CloseAttempt(c, ref.trial_id, ref.attempt, state, "", now_ms));
  PRISM_RETURN_IF_ERROR(ReleaseWorker(c, ref.worker_id, ref.trial_id));
  PRISM_RETURN_IF_ERROR(FinishExperimentIfDrained(c, t.experiment_id, now_ms));
  PRISM_ASSIGN_OR_RETURN(v1::Trial trial,
                         ReadTrial(c, ref.trial_id, /*with_attempts=*/true));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return trial;
}

absl::StatusOr<v1::Trial> FailTrial(Connection* c, const AttemptRef& ref,
                                    const std::string& message, bool retryable,
                                    int64_t now_ms) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(LiveTrial t, ReadLiveTrial(c, ref.trial_id));
  if (!HoldsLease(t, ref)) return StaleAttempt(t, ref);
  PRISM_ASSIGN_OR_RETURN(int max_attempts, MaxAttempts(c, t.experiment_id));
  PRISM_ASSIGN_OR_RETURN(int failed_before,
                         CountFailedAttempts(c, ref.trial_id));
  const bool requeue = retryable && failed_before + 1 < max_attempts;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trials SET state = ?1, worker_id = CASE "
                            "WHEN ?1 = 1 THEN '' ELSE worker_id END, "
                            "lease_deadline_ms = 0, error = ?2, finished_ms = "
                            "CASE WHEN ?1 = 1 THEN 0 ELSE ?3 END WHERE id = "
                            "?4"));
    q.Bind(1, requeue ? kQueued : static_cast<int64_t>(v1::TRIAL_FAILED));
    q.BindText(2, message);
    q.Bind(3, now_ms);
    q.Bind(4, ref.trial_id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_RETURN_IF_ERROR(CloseAttempt(c, ref.trial_id, ref.attempt,
                                     v1::TRIAL_FAILED, message, now_ms));
  PRISM_RETURN_IF_ERROR(ReleaseWorker(c, ref.worker_id, ref.trial_id));
  PRISM_RETURN_IF_ERROR(FinishExperimentIfDrained(c, t.experiment_id, now_ms));
  PRISM_ASSIGN_OR_RETURN(v1::Trial trial,
                         ReadTrial(c, ref.trial_id, /*with_attempts=*/true));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return trial;
}

absl::StatusOr<v1::Trial> ReleaseTrial(Connection* c, const AttemptRef& ref,
                                       const std::string& message,
                                       int64_t now_ms) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(LiveTrial t, ReadLiveTrial(c, ref.trial_id));
  if (!HoldsLease(t, ref)) return StaleAttempt(t, ref);
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trials SET state = ?, worker_id = '', "
                            "lease_deadline_ms = 0 WHERE id = ?"));
    q.Bind(1, kQueued);
    q.Bind(2, ref.trial_id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  const std::string note = message.empty()
                               ? "released by worker"
                               : absl::StrCat("released by worker: ", message);
  PRISM_RETURN_IF_ERROR(CloseAttempt(c, ref.trial_id, ref.attempt,
                                     v1::TRIAL_QUEUED, note, now_ms));
  PRISM_RETURN_IF_ERROR(ReleaseWorker(c, ref.worker_id, ref.trial_id));
  PRISM_ASSIGN_OR_RETURN(v1::Trial trial,
                         ReadTrial(c, ref.trial_id, /*with_attempts=*/true));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return trial;
}

absl::StatusOr<std::vector<ExpiredLease>> ExpireLeases(Connection* c,
                                                       int64_t now_ms) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  struct Expired {
    int64_t trial_id, experiment_id;
    int32_t attempt;
    int max_attempts;
    std::string worker_id;
  };
  std::vector<Expired> expired;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT t.id, t.experiment_id, t.attempt, "
                            "e.max_attempts, t.worker_id FROM trials t JOIN "
                            "experiments e ON e.id = t.experiment_id WHERE "
                            "t.state IN (?, ?) AND t.lease_deadline_ms < ?"));
    q.Bind(1, kLeased);
    q.Bind(2, kRunning);
    q.Bind(3, now_ms);
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      expired.push_back(Expired{q.Int(0), q.Int(1),
                                static_cast<int32_t>(q.Int(2)),
                                static_cast<int>(q.Int(3)), q.Text(4)});
    }
  }
  std::vector<ExpiredLease> changed;
  for (const Expired& x : expired) {
    PRISM_ASSIGN_OR_RETURN(int failed_before,
                           CountFailedAttempts(c, x.trial_id));
    const bool exhausted = failed_before + 1 >= x.max_attempts;
    const std::string message =
        exhausted
            ? absl::StrCat("lease expired (no heartbeat); ", failed_before + 1,
                           " of ", x.max_attempts, " allowed attempts failed")
            : "lease expired (no heartbeat)";
    {
      PRISM_ASSIGN_OR_RETURN(
          Query q, c->Prepare("UPDATE trials SET state = ?1, worker_id = '', "
                              "lease_deadline_ms = 0, error = CASE WHEN ?1 = "
                              "1 THEN error ELSE ?2 END, finished_ms = CASE "
                              "WHEN ?1 = 1 THEN 0 ELSE ?3 END WHERE id = ?4"));
      q.Bind(1, exhausted ? static_cast<int64_t>(v1::TRIAL_FAILED) : kQueued);
      q.BindText(2, message);
      q.Bind(3, now_ms);
      q.Bind(4, x.trial_id);
      PRISM_RETURN_IF_ERROR(q.Run());
    }
    PRISM_RETURN_IF_ERROR(CloseAttempt(c, x.trial_id, x.attempt,
                                       v1::TRIAL_FAILED, message, now_ms));
    PRISM_RETURN_IF_ERROR(ReleaseWorker(c, x.worker_id, x.trial_id));
    if (exhausted) {
      PRISM_RETURN_IF_ERROR(
          FinishExperimentIfDrained(c, x.experiment_id, now_ms));
    }
    PRISM_ASSIGN_OR_RETURN(v1::Trial trial,
                           ReadTrial(c, x.trial_id, /*with_attempts=*/false));
    changed.push_back(ExpiredLease{std::move(trial), x.worker_id});
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return changed;
}

namespace {

// InsertQueuedTrials queues `trials` in the experiment (its config
// fingerprint, total_steps and the trial's target_steps; a (schedule, seed)
// it has is skipped) and returns how many it added.
absl::StatusOr<int> InsertQueuedTrials(Connection* c, int64_t experiment_id,
                                       const std::string& fingerprint,
                                       const std::vector<NewTrial>& trials,
                                       int64_t now_ms) {
  static const std::string sql = absl::StrCat(
      "INSERT OR IGNORE INTO trials (id, experiment_id, schedule, seed, "
      "config_fingerprint, is_baseline, state, total_steps, created_ms, "
      "target_steps) SELECT ",
      kNextTrialId,
      ", ?1, ?2, ?3, ?4, ?5, ?6, (SELECT MAX(total_steps) FROM trials WHERE "
      "experiment_id = ?1), ?7, ?8");
  PRISM_ASSIGN_OR_RETURN(Query q, c->Prepare(sql.c_str()));
  int added = 0;
  for (const NewTrial& t : trials) {
    q.Bind(1, experiment_id);
    q.BindText(2, t.schedule);
    q.Bind(3, t.seed);
    q.BindText(4, fingerprint);
    q.Bind(5, static_cast<int64_t>(t.is_baseline ? 1 : 0));
    q.Bind(6, kQueued);
    q.Bind(7, now_ms);
    q.Bind(8, t.target_steps);
    PRISM_RETURN_IF_ERROR(q.Run());
    added += static_cast<int>(c->changes());
  }
  return added;
}

}  // namespace

absl::StatusOr<ExtendedExperiment> ExtendExperiment(
    Connection* c, const ExperimentExtension& extension) {
  std::string spec;
  if (!extension.spec.SerializeToString(&spec)) {
    return absl::InternalError("cannot serialize the experiment spec");
  }
  const int64_t id = extension.experiment_id;
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  v1::ExperimentState state = v1::EXPERIMENT_STATE_UNSPECIFIED;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT state FROM experiments WHERE id = ?"));
    q.Bind(1, id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) {
      return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
    }
    state = static_cast<v1::ExperimentState>(q.Int(0));
  }
  if (state == v1::EXPERIMENT_CANCELLED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "experiment ", id, " is cancelled: its trials are not trained again"));
  }
  std::string fingerprint;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT COUNT(*), MIN(config_fingerprint) FROM "
                            "trials WHERE experiment_id = ?"));
    q.Bind(1, id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row || q.Int(0) != extension.seen_trials) {
      return absl::AbortedError(
          absl::StrCat("experiment ", id,
                       " changed since the extension was planned; plan "
                       "again"));
    }
    fingerprint = q.Text(1);
  }
  ExtendedExperiment result;
  PRISM_ASSIGN_OR_RETURN(
      result.added, InsertQueuedTrials(c, id, fingerprint, extension.trials,
                                       extension.now_ms));
  {
    // A done experiment is active again: its new trials are queued. A
    // paused one stays paused (its owner resumes it).
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE experiments SET spec = ?1, grid_steps = "
                            "?2, state = CASE WHEN state = ?3 AND ?4 > 0 "
                            "THEN ?5 ELSE state END, updated_ms = ?6 WHERE "
                            "id = ?7"));
    q.BindBlob(1, spec);
    if (extension.grid_steps >= 0) {
      q.Bind(2, extension.grid_steps);
    } else {
      q.BindNull(2);
    }
    q.Bind(3, static_cast<int64_t>(v1::EXPERIMENT_DONE));
    q.Bind(4, static_cast<int64_t>(result.added));
    q.Bind(5, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
    q.Bind(6, extension.now_ms);
    q.Bind(7, id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_ASSIGN_OR_RETURN(result.experiment, ReadExperiment(c, id));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return result;
}

absl::StatusOr<SeedRoundResult> ApplySeedRound(Connection* c,
                                               const SeedRound& round) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  SeedRoundResult result;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT state FROM experiments WHERE id = ?"));
    q.Bind(1, round.experiment_id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) {
      return absl::NotFoundError(
          absl::StrCat("experiment ", round.experiment_id, " not found"));
    }
    result.state = static_cast<v1::ExperimentState>(q.Int(0));
  }
  if (result.state != v1::EXPERIMENT_ACTIVE &&
      result.state != v1::EXPERIMENT_PAUSED) {
    return result;
  }
  std::string fingerprint;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q,
        c->Prepare("SELECT COUNT(*), COALESCE(SUM(state IN (?, ?, ?, ?)), "
                   "0), MIN(config_fingerprint) FROM trials WHERE "
                   "experiment_id = ?"));
    q.Bind(1, static_cast<int64_t>(v1::TRIAL_COMPLETED));
    q.Bind(2, static_cast<int64_t>(v1::TRIAL_DIVERGED));
    q.Bind(3, static_cast<int64_t>(v1::TRIAL_FAILED));
    q.Bind(4, static_cast<int64_t>(v1::TRIAL_STOPPED_AT_RUNG));
    q.Bind(5, round.experiment_id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row || q.Int(0) != round.seen_trials ||
        q.Int(1) != round.seen_finished) {
      return absl::AbortedError(absl::StrCat(
          "experiment ", round.experiment_id,
          " changed since the seeds decision was made; decide again"));
    }
    fingerprint = q.Text(2);
  }
  PRISM_ASSIGN_OR_RETURN(result.added,
                         InsertQueuedTrials(c, round.experiment_id, fingerprint,
                                            round.trials, round.now_ms));
  {
    // The trial keeps its last_step: its next lease resumes from the
    // checkpoint at the rung.
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trials SET state = ?1, target_steps = ?2, "
                            "finished_ms = 0 WHERE experiment_id = ?3 AND "
                            "schedule = ?4 AND is_baseline = 0 AND state = ?5 "
                            "AND target_steps = ?6"));
    for (const AshaPromotion& p : round.promotions) {
      q.Bind(1, kQueued);
      q.Bind(2, p.to_step);
      q.Bind(3, round.experiment_id);
      q.BindText(4, p.schedule);
      q.Bind(5, static_cast<int64_t>(v1::TRIAL_STOPPED_AT_RUNG));
      q.Bind(6, p.from_step);
      PRISM_RETURN_IF_ERROR(q.Run());
      result.promoted += static_cast<int>(c->changes());
    }
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE experiments SET seeds_added = seeds_added "
                            "+ ?, seeds_note = ?, updated_ms = ? WHERE id = "
                            "?"));
    q.Bind(1, static_cast<int64_t>(result.added));
    q.BindText(2, round.note);
    q.Bind(3, round.now_ms);
    q.Bind(4, round.experiment_id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_RETURN_IF_ERROR(FinishExperimentIfDrained(
      c, round.experiment_id, round.now_ms, /*seeds_decided=*/true));
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT state FROM experiments WHERE id = ?"));
    q.Bind(1, round.experiment_id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (row) result.state = static_cast<v1::ExperimentState>(q.Int(0));
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return result;
}

absl::StatusOr<int> ExtendLiveLeases(Connection* c, int64_t deadline_ms) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  int touched = 0;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trials SET lease_deadline_ms = ?1 WHERE "
                            "state IN (?2, ?3) AND lease_deadline_ms < ?1"));
    q.Bind(1, deadline_ms);
    q.Bind(2, kLeased);
    q.Bind(3, kRunning);
    PRISM_RETURN_IF_ERROR(q.Run());
    touched = static_cast<int>(c->changes());
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return touched;
}

}  // namespace prism::storage::internal
