#include "storage/internal/row_codecs.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace prism::storage::internal {
namespace {

// --- little-endian blobs: the compact val curve ((int64 step, float32 loss)
// pairs) and the per-layer attention distance (float64s).

void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i)
    out->push_back(static_cast<char>(value >> (8 * i)));
}

uint64_t ReadLittleEndian(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return value;
}

constexpr int kCurveRecordBytes = 12;
#ifdef ABSL_IS_LITTLE_ENDIAN
constexpr bool kLittleEndianHost = true;
#else
constexpr bool kLittleEndianHost = false;
#endif

void DecodeCurve(absl::string_view blob, TrialOutcome* outcome) {
  const size_t n = blob.size() / kCurveRecordBytes;
  outcome->val_steps.resize(n);
  outcome->val_losses.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const char* p = blob.data() + i * kCurveRecordBytes;
    uint64_t step;
    uint32_t bits;
    if constexpr (kLittleEndianHost) {
      // The records are little-endian already: ranking reads ~2 M of them
      // on a cold start, so skip the byte-by-byte assembly.
      std::memcpy(&step, p, sizeof(step));
      std::memcpy(&bits, p + 8, sizeof(bits));
    } else {
      step = ReadLittleEndian(p, 8);
      bits = static_cast<uint32_t>(ReadLittleEndian(p + 8, 4));
    }
    float loss;
    std::memcpy(&loss, &bits, sizeof(loss));
    outcome->val_steps[i] = static_cast<int64_t>(step);
    outcome->val_losses[i] = loss;
  }
}

// DecodeDoubles reads little-endian float64s, as EncodeDoubles writes them.
void DecodeDoubles(absl::string_view blob, std::vector<double>* out) {
  const size_t n = blob.size() / sizeof(double);
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t bits =
        ReadLittleEndian(blob.data() + i * sizeof(double), sizeof(double));
    std::memcpy(&(*out)[i], &bits, sizeof(double));
  }
}

// EncodeDoubles writes `values` as little-endian float64s.
std::string EncodeDoubles(
    const google::protobuf::RepeatedField<double>& values) {
  std::string out;
  out.reserve(values.size() * sizeof(double));
  for (double d : values) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof(bits));
    AppendLittleEndian(bits, sizeof(double), &out);
  }
  return out;
}

}  // namespace

void AppendCurvePoint(int64_t step, float loss, std::string* out) {
  uint32_t bits;
  std::memcpy(&bits, &loss, sizeof(bits));
  AppendLittleEndian(static_cast<uint64_t>(step), 8, out);
  AppendLittleEndian(bits, 4, out);
}

v1::Trial TrialFromRow(const Query& q) {
  v1::Trial t;
  t.set_id(q.Int(0));
  t.set_experiment_id(q.Int(1));
  t.set_schedule(q.Text(2));
  t.set_seed(q.Int(3));
  t.set_is_baseline(q.Int(4) != 0);
  t.set_state(static_cast<v1::TrialState>(q.Int(5)));
  t.set_attempt(static_cast<int32_t>(q.Int(6)));
  t.set_worker_id(q.Text(7));
  t.set_lease_deadline_unix_ms(q.Int(8));
  t.set_last_step(q.Int(9));
  t.set_total_steps(q.Int(10));
  if (!q.IsNull(11)) t.mutable_metrics()->ParseFromString(q.Blob(11));
  t.set_error(q.Text(12));
  t.set_created_unix_ms(q.Int(13));
  t.set_started_unix_ms(q.Int(14));
  t.set_finished_unix_ms(q.Int(15));
  t.set_target_steps(q.Int(16));
  return t;
}

absl::StatusOr<v1::Trial> ReadTrial(Connection* conn, int64_t trial_id,
                                    bool with_attempts) {
  static const std::string sql =
      absl::StrCat("SELECT ", kTrialColumns, " FROM trials WHERE id = ?");
  v1::Trial trial;
  {
    PRISM_ASSIGN_OR_RETURN(Query q, conn->Prepare(sql.c_str()));
    q.Bind(1, trial_id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) {
      return absl::NotFoundError(
          absl::StrCat("trial ", trial_id, " not found"));
    }
    trial = TrialFromRow(q);
  }
  if (!with_attempts) return trial;
  PRISM_ASSIGN_OR_RETURN(
      Query q, conn->Prepare("SELECT attempt, worker_id, started_ms, ended_ms, "
                             "outcome, message, resumed_from_step FROM "
                             "trial_attempts WHERE trial_id = ? ORDER BY "
                             "attempt"));
  q.Bind(1, trial_id);
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    v1::TrialAttempt* a = trial.add_attempts();
    a->set_attempt(static_cast<int32_t>(q.Int(0)));
    a->set_worker_id(q.Text(1));
    a->set_started_unix_ms(q.Int(2));
    a->set_ended_unix_ms(q.Int(3));
    a->set_outcome(static_cast<v1::TrialState>(q.Int(4)));
    a->set_message(q.Text(5));
    if (!q.IsNull(6)) a->set_resumed_from_step(q.Int(6));
  }
  return trial;
}

absl::StatusOr<v1::Experiment> ReadExperiment(Connection* conn, int64_t id,
                                              ExperimentView view) {
  v1::Experiment e;
  {
    // A summary neither copies nor parses the spec (SQLite still steps over
    // its overflow pages to reach the columns stored after it).
    PRISM_ASSIGN_OR_RETURN(
        Query q,
        conn->Prepare(view == ExperimentView::kFull
                          ? "SELECT id, name, owner, state, priority, "
                            "created_ms, updated_ms, seeds_added, seeds_note, "
                            "ladder_id, ladder_rung, ladder_note, strategy, "
                            "grid_steps, spec FROM experiments WHERE id = ?"
                          : "SELECT id, name, owner, state, priority, "
                            "created_ms, updated_ms, seeds_added, seeds_note, "
                            "ladder_id, ladder_rung, ladder_note, strategy, "
                            "grid_steps FROM experiments WHERE id = ?"));
    q.Bind(1, id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) {
      return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
    }
    e.set_id(q.Int(0));
    e.set_name(q.Text(1));
    e.set_owner(q.Text(2));
    e.set_state(static_cast<v1::ExperimentState>(q.Int(3)));
    e.set_priority(static_cast<int32_t>(q.Int(4)));
    e.set_created_unix_ms(q.Int(5));
    e.set_updated_unix_ms(q.Int(6));
    e.set_seeds_added(static_cast<int32_t>(q.Int(7)));
    e.set_seeds_note(q.Text(8));
    e.set_ladder_id(q.Int(9));
    e.set_ladder_rung(static_cast<int32_t>(q.Int(10)));
    e.set_ladder_note(q.Text(11));
    e.set_strategy(static_cast<v1::Strategy>(q.Int(12)));
    e.set_grid_steps(q.IsNull(13) ? -1.0 : q.Double(13));
    if (view == ExperimentView::kFull) {
      if (!e.mutable_spec()->ParseFromString(q.Blob(14))) {
        return absl::DataLossError(
            absl::StrCat("experiment ", id, ": stored spec does not parse"));
      }
      e.set_strategy(e.spec().strategy());
    }
  }
  // Progress: a finished trial (completed, failed, diverged) counts whole;
  // any other, a cancelled one included, the share of its steps it trained,
  // so a cancelled experiment does not read as done (issue 41).
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      conn->Prepare(
          "SELECT state, COUNT(*), SUM(CASE WHEN state BETWEEN 4 AND "
          "6 THEN 1.0 "
          "WHEN total_steps > 0 THEN MIN(1.0, last_step * 1.0 / "
          "total_steps) ELSE 0.0 END), SUM(last_step) FROM trials WHERE "
          "experiment_id = ? GROUP BY state"));
  q.Bind(1, id);
  v1::TrialCounts* c = e.mutable_counts();
  double done = 0.0;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    const auto n = static_cast<int32_t>(q.Int(1));
    done += q.Double(2);
    e.set_steps_trained(e.steps_trained() + q.Int(3));
    c->set_total(c->total() + n);
    switch (q.Int(0)) {
      case v1::TRIAL_QUEUED:
        c->set_queued(n);
        break;
      case v1::TRIAL_LEASED:
        c->set_leased(n);
        break;
      case v1::TRIAL_RUNNING:
        c->set_running(n);
        break;
      case v1::TRIAL_COMPLETED:
        c->set_completed(n);
        break;
      case v1::TRIAL_FAILED:
        c->set_failed(n);
        break;
      case v1::TRIAL_DIVERGED:
        c->set_diverged(n);
        break;
      case v1::TRIAL_CANCELLED:
        c->set_cancelled(n);
        break;
      case v1::TRIAL_STOPPED_AT_RUNG:
        c->set_stopped_at_rung(n);
        break;
      default:
        break;
    }
  }
  e.set_progress(c->total() > 0 ? done / c->total() : 0.0);
  return e;
}

v1::Worker WorkerFromRow(const Query& q) {
  v1::Worker w;
  w.set_id(q.Text(0));
  w.set_host(q.Text(1));
  w.set_device(q.Text(2));
  w.set_threads(static_cast<int32_t>(q.Int(3)));
  w.set_user(q.Text(4));
  w.set_registered_unix_ms(q.Int(5));
  w.set_last_heartbeat_unix_ms(q.Int(6));
  w.set_current_trial_id(q.Int(7));
  w.set_tokens_per_second(q.Double(8));
  w.set_stopped_unix_ms(q.Int(9));
  return w;
}

v1::LossPoint LossPointFromRow(const Query& q) {
  v1::LossPoint p;
  p.set_split(static_cast<v1::Split>(q.Int(0)));
  p.set_step(q.Int(1));
  p.set_loss(static_cast<float>(q.Double(2)));
  p.set_learning_rate(static_cast<float>(q.Double(3)));
  p.set_tokens_per_second(q.Double(4));
  p.set_elapsed_seconds(q.Double(5));
  return p;
}

absl::StatusOr<TrialOutcome> OutcomeFromRow(const Query& q) {
  TrialOutcome o;
  o.trial_id = q.Int(0);
  o.schedule = q.Text(1);
  o.seed = q.Int(2);
  o.is_baseline = q.Int(3) != 0;
  o.worker_id = q.Text(10);
  if (!q.IsNull(11)) o.device = q.Text(11);
  if (!q.IsNull(12)) o.cpu_share = q.Double(12);
  switch (q.Int(9)) {
    case v1::TRIAL_DIVERGED:
      o.state = OutcomeState::kDiverged;
      return o;
    case v1::TRIAL_FAILED:
      o.state = OutcomeState::kFailed;
      return o;
    default:
      o.state = OutcomeState::kCompleted;
  }
  if (q.IsNull(4)) {
    // Only a v3 row whose metrics blob did not parse at the v4 migration.
    return absl::DataLossError(
        absl::StrCat("trial ", o.trial_id, ": stored metrics do not parse"));
  }
  o.final_val_loss = q.Double(4);
  o.min_val_loss = q.Double(5);
  o.tokens_per_second = q.Double(6);
  DecodeDoubles(q.BlobView(7), &o.attention_distance);
  DecodeCurve(q.BlobView(8), &o);
  return o;
}

void BindRankingColumns(const v1::TrialMetrics& metrics, int first, Query* q) {
  q->Bind(first, metrics.final_val_loss());
  q->Bind(first + 1, metrics.min_val_loss());
  q->Bind(first + 2, metrics.tokens_per_second());
  q->Bind(first + 3, int64_t{metrics.diverged() ? 1 : 0});
  q->BindBlob(first + 4, EncodeDoubles(metrics.attention_distance()));
  q->BindText(first + 5, metrics.device());
  q->Bind(first + 6, metrics.cpu_share());
}

std::string RankingPlaceholders(int first) {
  std::vector<std::string> marks;
  for (int i = 0; i < kRankingColumnCount; ++i) {
    marks.push_back(absl::StrCat("?", first + i));
  }
  return absl::StrJoin(marks, ", ");
}

}  // namespace prism::storage::internal
