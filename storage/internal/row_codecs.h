// Row codecs: how storage's rows read back as prism.v1 messages (Experiment,
// Trial, Worker, LossPoint) and ranking's TrialOutcome, and how a finished
// trial's ranking columns and compact val curve blob are written. Each
// `k...Columns` list is the SELECT list its `...FromRow` reader expects, in
// that order.
//
// Thread-safety: the functions touch only their arguments; a Connection and
// its Queries belong to one thread at a time (see sqlite.h).
#ifndef PRISM_STORAGE_INTERNAL_ROW_CODECS_H_
#define PRISM_STORAGE_INTERNAL_ROW_CODECS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/records.h"
#include "storage/internal/sqlite.h"

namespace prism::storage::internal {

// The trial states as stored (the prism.v1.TrialState numbers) that the
// queue's SQL compares against.
inline constexpr int64_t kQueued = v1::TRIAL_QUEUED;
inline constexpr int64_t kLeased = v1::TRIAL_LEASED;
inline constexpr int64_t kRunning = v1::TRIAL_RUNNING;

// IsLive is true for a trial a worker holds (leased or running).
inline bool IsLive(int64_t state) {
  return state == kLeased || state == kRunning;
}

inline constexpr char kTrialColumns[] =
    "id, experiment_id, schedule, seed, is_baseline, state, attempt, "
    "worker_id, lease_deadline_ms, last_step, total_steps, metrics, error, "
    "created_ms, started_ms, finished_ms, target_steps";
// TrialFromRow reads a row of kTrialColumns, without attempt history.
v1::Trial TrialFromRow(const Query& q);

inline constexpr char kWorkerColumns[] =
    "id, host, device, threads, user, registered_ms, last_heartbeat_ms, "
    "current_trial_id, tokens_per_second, stopped_ms";
// WorkerFromRow reads a row of kWorkerColumns.
v1::Worker WorkerFromRow(const Query& q);

inline constexpr char kPointColumns[] =
    "split, step, loss, learning_rate, tokens_per_second, elapsed_seconds";
// LossPointFromRow reads a row of kPointColumns from `points`.
v1::LossPoint LossPointFromRow(const Query& q);

inline constexpr char kOutcomeColumns[] =
    "id, schedule, seed, is_baseline, final_val_loss, min_val_loss, "
    "tokens_per_second, attention_distance, val_curve, state, worker_id, "
    "device, cpu_share";
// OutcomeFromRow reads a row of kOutcomeColumns of a finished (completed,
// diverged or failed) trial; only a completed trial's metrics are read.
// DataLoss when a completed row has no ranking columns (its metrics did not
// parse when the v4 migration filled them in).
absl::StatusOr<TrialOutcome> OutcomeFromRow(const Query& q);

// The ranking columns of a finished trial (schema v4, device v5), copied out
// of its TrialMetrics so ranking never parses the message: REAL
// final_val_loss, min_val_loss, tokens_per_second; INTEGER diverged (0 or 1);
// BLOB attention_distance (little-endian float64 per layer); TEXT device (the
// trainer's, for pairing tokens/s on hardware); REAL cpu_share (v7: the
// share of its cores a CPU trial got, for the same pairing). All NULL until
// the trial finishes.
inline constexpr char kRankingColumns[] =
    "final_val_loss, min_val_loss, tokens_per_second, diverged, "
    "attention_distance, device, cpu_share";
inline constexpr int kRankingColumnCount = 7;
// RankingPlaceholders is "?first, ?first+1, ..." for the kRankingColumns.
std::string RankingPlaceholders(int first);
// BindRankingColumns binds the kRankingColumns values of `metrics`, in that
// order, to parameters `first` to `first + kRankingColumnCount - 1` of `q`.
void BindRankingColumns(const v1::TrialMetrics& metrics, int first, Query* q);

// ReadTrial returns trial `trial_id`, with its attempts (ascending) when
// `with_attempts`; NotFound when there is no such trial.
absl::StatusOr<v1::Trial> ReadTrial(Connection* conn, int64_t trial_id,
                                    bool with_attempts);

// ExperimentView says whether ReadExperiment reads the stored spec
// (kSummary: no spec; strategy and grid_steps from their columns).
enum class ExperimentView { kFull, kSummary };

// ReadExperiment returns experiment `id` with its trial counts and progress;
// NotFound when there is no such experiment, DataLoss when its stored spec
// does not parse. Every view fills strategy, and grid_steps where stored
// (-1 where not: an experiment stored before the column).
absl::StatusOr<v1::Experiment> ReadExperiment(
    Connection* conn, int64_t id, ExperimentView view = ExperimentView::kFull);

// AppendCurvePoint appends one val curve record to `out`: (int64 step,
// float32 loss), little-endian, 12 bytes.
void AppendCurvePoint(int64_t step, float loss, std::string* out);

}  // namespace prism::storage::internal

#endif  // PRISM_STORAGE_INTERNAL_ROW_CODECS_H_
