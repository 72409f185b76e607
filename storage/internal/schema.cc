#include "storage/internal/schema.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "prism/v1/prism.pb.h"
#include "storage/internal/row_codecs.h"

namespace prism::storage::internal {
namespace {

struct Migration {
  int version;
  const char* name;
  const char* sql;
  // Runs after `sql`, in the same transaction, for a step SQL cannot do
  // (parsing a stored proto); nullptr when there is none.
  absl::Status (*after_sql)(Connection* conn);
};

// Enum-valued columns hold the prism.v1 enum numbers (TrialState,
// ExperimentState, Role, Split); times are Unix milliseconds.
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE users (
  name TEXT PRIMARY KEY,
  created_ms INTEGER NOT NULL
);
CREATE TABLE tokens (
  hash TEXT PRIMARY KEY,  -- hex SHA-256 of the token; the token is never stored
  user TEXT NOT NULL REFERENCES users(name),
  role INTEGER NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE TABLE experiments (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  owner TEXT NOT NULL REFERENCES users(name),
  spec BLOB NOT NULL,     -- resolved prism.v1.ExperimentSpec
  state INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE INDEX experiments_by_state ON experiments(state);
CREATE INDEX experiments_by_owner ON experiments(owner, id);
CREATE TABLE trials (
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  schedule TEXT NOT NULL,
  seed INTEGER NOT NULL,
  config_fingerprint TEXT NOT NULL,
  is_baseline INTEGER NOT NULL,
  state INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '',
  lease_deadline_ms INTEGER NOT NULL DEFAULT 0,
  last_step INTEGER NOT NULL DEFAULT 0,
  total_steps INTEGER NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  -- The blobs come last: reading the columns before them never walks their
  -- overflow pages.
  metrics BLOB,           -- prism.v1.TrialMetrics once finished
  val_curve BLOB,         -- (int64 step, float32 loss) little-endian pairs
  UNIQUE (experiment_id, schedule, seed, config_fingerprint)
);
CREATE INDEX trials_by_experiment_state ON trials(experiment_id, state, id);
CREATE INDEX trials_by_state_deadline ON trials(state, lease_deadline_ms);
CREATE TABLE trial_attempts (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  attempt INTEGER NOT NULL,
  worker_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER NOT NULL DEFAULT 0,
  outcome INTEGER NOT NULL,
  message TEXT NOT NULL DEFAULT '',
  resumed_from_step INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (trial_id, attempt)
) WITHOUT ROWID;
CREATE TABLE points (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  split INTEGER NOT NULL,
  step INTEGER NOT NULL,
  loss REAL NOT NULL,
  learning_rate REAL NOT NULL,
  tokens_per_second REAL NOT NULL,
  elapsed_seconds REAL NOT NULL,
  PRIMARY KEY (trial_id, split, step)
) WITHOUT ROWID;
CREATE TABLE workers (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  device TEXT NOT NULL,
  threads INTEGER NOT NULL,
  user TEXT NOT NULL,
  registered_ms INTEGER NOT NULL,
  last_heartbeat_ms INTEGER NOT NULL,
  current_trial_id INTEGER NOT NULL DEFAULT 0,
  tokens_per_second REAL NOT NULL DEFAULT 0
);
)sql";

// v2: trial_attempts.resumed_from_step becomes nullable. It used to be the
// coordinator's last known step at lease time, which overstates where a
// resumed worker really started (its checkpoint is older); now it stays NULL
// until the worker says (Start). SQLite cannot drop a NOT NULL constraint,
// so the table is rebuilt; v1 rows keep their values. Nothing references
// trial_attempts, so dropping the old table is safe with foreign keys on.
constexpr char kSchemaV2[] = R"sql(
CREATE TABLE trial_attempts_v2 (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  attempt INTEGER NOT NULL,
  worker_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER NOT NULL DEFAULT 0,
  outcome INTEGER NOT NULL,
  message TEXT NOT NULL DEFAULT '',
  resumed_from_step INTEGER,  -- NULL until the worker's Start
  PRIMARY KEY (trial_id, attempt)
) WITHOUT ROWID;
INSERT INTO trial_attempts_v2 (trial_id, attempt, worker_id, started_ms,
                               ended_ms, outcome, message, resumed_from_step)
  SELECT trial_id, attempt, worker_id, started_ms, ended_ms, outcome, message,
         resumed_from_step
  FROM trial_attempts;
DROP TABLE trial_attempts;
ALTER TABLE trial_attempts_v2 RENAME TO trial_attempts;
)sql";

// v3: workers.stopped_ms, set by a worker's Deregister so a worker that
// exited cleanly reads as stopped rather than lost.
constexpr char kSchemaV3[] = R"sql(
ALTER TABLE workers ADD COLUMN stopped_ms INTEGER NOT NULL DEFAULT 0;
)sql";

// v4: the TrialMetrics fields ranking reads become columns of trials (see
// kRankingColumns in row_codecs.h), so ListFinishedOutcomes reads numbers
// instead of parsing a message per trial; CompleteTrial fills them and
// BackfillRankingColumns (run at v5) fills them for trials finished before.
// ALTER TABLE
// can only append, so they sit after the blobs; the one query that reads
// them reads val_curve as well, so it walks the row's overflow pages anyway.
constexpr char kSchemaV4[] = R"sql(
ALTER TABLE trials ADD COLUMN final_val_loss REAL;
ALTER TABLE trials ADD COLUMN min_val_loss REAL;
ALTER TABLE trials ADD COLUMN tokens_per_second REAL;
ALTER TABLE trials ADD COLUMN diverged INTEGER;
ALTER TABLE trials ADD COLUMN attention_distance BLOB;
)sql";

// v5: adaptive seeds. adaptive_seeds marks an experiment whose spec has a
// seeds policy: a drained trial queue does not make it done (the coordinator
// decides, in ApplySeedRound, whether seeds are still to be added);
// seeds_added and seeds_note record what those decisions added and why.
// STRATEGY_GUIDED experiments use the same three columns for its decisions
// (store.h's DecidedByCoordinator).
constexpr char kSchemaV5[] = R"sql(
ALTER TABLE experiments ADD COLUMN adaptive_seeds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE experiments ADD COLUMN seeds_added INTEGER NOT NULL DEFAULT 0;
ALTER TABLE experiments ADD COLUMN seeds_note TEXT NOT NULL DEFAULT '';
)sql";

// v6: trials.device, the trainer's device string from TrialMetrics, so the
// ranking pairs tokens/s on hardware (see ranking.h). The backfill of the
// ranking columns runs here rather than at v4 (a database migrated to v4 by an
// earlier binary is backfilled again: it is idempotent): it fills every ranking
// column, device included, so it needs this one to exist.
constexpr char kSchemaV6[] = R"sql(
ALTER TABLE trials ADD COLUMN device TEXT;
)sql";

// v7: trials.cpu_share, the share of its cores a CPU trial got
// (TrialMetrics), so the ranking pairs tokens/s only between trials that had
// their cores alike (see ranking.h). The backfill of every ranking column
// moves here from v6 (it writes this column too; it is idempotent, so a
// database an earlier binary took to v6 is simply filled again).
constexpr char kSchemaV7[] = R"sql(
ALTER TABLE trials ADD COLUMN cpu_share REAL;
)sql";

// v8: the scaler's state (server/core/queue/scaler.h). scalers keeps the tag in
// every worker job's name, so a restarted coordinator finds the jobs its
// earlier run submitted; scaler_jobs records each job from its submission (or
// adoption) until the scheduler no longer lists it.
constexpr char kSchemaV8[] = R"sql(
CREATE TABLE scalers (
  backend TEXT PRIMARY KEY,  -- "slurm"
  tag TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE TABLE scaler_jobs (
  backend TEXT NOT NULL,
  job_id TEXT NOT NULL,
  recorded_ms INTEGER NOT NULL,
  ended_ms INTEGER NOT NULL DEFAULT 0,  -- 0 while the scheduler lists it
  PRIMARY KEY (backend, job_id)
) WITHOUT ROWID;
)sql";

// v9: token lifecycle. id names a token in `prism token list/revoke`
// without its secret (the hash's first 12 hex digits, unique so a revoke
// can never hit two tokens); expires_ms and revoked_ms are 0 for never;
// last_used_ms is written at most once a minute per token
// (server/core/auth/auth.h).
constexpr char kSchemaV9[] = R"sql(
ALTER TABLE tokens ADD COLUMN id TEXT NOT NULL DEFAULT '';
UPDATE tokens SET id = substr(hash, 1, 12);
CREATE UNIQUE INDEX tokens_by_id ON tokens(id);
ALTER TABLE tokens ADD COLUMN expires_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN revoked_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN last_used_ms INTEGER NOT NULL DEFAULT 0;
)sql";

// v10: trials.target_steps, the step a STRATEGY_ASHA trial trains to before
// its next rung decision (0: the whole budget, as every earlier trial).
constexpr char kSchemaV10[] = R"sql(
ALTER TABLE trials ADD COLUMN target_steps INTEGER NOT NULL DEFAULT 0;
)sql";

// v11: fair share and quotas (server/core/queue/fair_share.h). users.share
// weighs a user's usage (default 1: equal shares); max_running and max_queued
// are per-user quotas (0: none). Usage itself is derived from trial_attempts
// (each attempt's lease to its end), so it needs no column of its own and
// survives a restart with the attempts; the index serves the recent ones.
constexpr char kSchemaV11[] = R"sql(
ALTER TABLE users ADD COLUMN share REAL NOT NULL DEFAULT 1;
ALTER TABLE users ADD COLUMN max_running INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN max_queued INTEGER NOT NULL DEFAULT 0;
CREATE INDEX trial_attempts_by_ended ON trial_attempts(ended_ms);
)sql";

// v12: a scale ladder's rungs (server/core/experiments/ladder.h). ladder_id is
// the ladder's first rung's experiment id (0: not a ladder's), ladder_rung the
// rung's index; the unique index is what makes submitting a rung happen once.
// ladder_note is the ladder's word on the rung once it is done.
constexpr char kSchemaV12[] = R"sql(
ALTER TABLE experiments ADD COLUMN ladder_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE experiments ADD COLUMN ladder_rung INTEGER NOT NULL DEFAULT 0;
ALTER TABLE experiments ADD COLUMN ladder_note TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX experiments_by_ladder ON experiments(ladder_id, ladder_rung)
  WHERE ladder_id != 0;
)sql";

// v13: what a summary of an experiment shows without its spec
// (ExperimentService.List): the strategy and the grid's steps, written at
// creation (NULL for earlier experiments: the coordinator reads their spec
// when it lists them). users.max_active is an admin's per-user limit on
// active experiments (0: the coordinator's default), beside max_queued
// (whose 0 now means the default too: --max-queued-trials-per-user).
constexpr char kSchemaV13[] = R"sql(
ALTER TABLE experiments ADD COLUMN strategy INTEGER;
ALTER TABLE experiments ADD COLUMN grid_steps REAL;
ALTER TABLE users ADD COLUMN max_active INTEGER NOT NULL DEFAULT 0;
)sql";

// v14: deleting an experiment (Store::DeleteExperiment). retired_ids keeps,
// per table, the highest id a deleted row had: SQLite gives a new row the
// table's highest id + 1, so without it the next experiment (or trial)
// would take a deleted one's id, and with it the deleted one's cached
// ranking, links and worker checkpoints. kNextExperimentId and kNextTrialId
// give ids above both.
constexpr char kSchemaV14[] = R"sql(
CREATE TABLE retired_ids (
  name TEXT PRIMARY KEY,  -- 'experiments' or 'trials'
  max_id INTEGER NOT NULL
);
)sql";

// v15: the worker time of a deleted experiment's attempts, kept for fair
// share: deleting an experiment removes its attempts, and with them what
// its owner used; usage_of_deleted keeps each span (an attempt not ended
// when its experiment was cancelled ends at the experiment's last update)
// so ListUsageSpans counts it as before.
constexpr char kSchemaV15[] = R"sql(
CREATE TABLE usage_of_deleted (
  owner TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER NOT NULL
);
CREATE INDEX usage_of_deleted_by_ended ON usage_of_deleted(ended_ms);
)sql";

// BackfillRankingColumns fills the ranking columns of every trial that
// has a metrics message, parsing it with the generated TrialMetrics. A
// message that does not parse leaves the row's columns NULL (and a warning),
// so ranking its experiment fails with DataLoss as it did before v4, while
// the rest of the database stays usable.
absl::Status BackfillRankingColumns(Connection* conn) {
  static const std::string update_sql = absl::StrCat(
      "UPDATE trials SET (", kRankingColumns, ") = (", RankingPlaceholders(1),
      ") WHERE id = ?", kRankingColumnCount + 1);
  // Batches keep memory flat on a large file; no statement reads trials
  // while the updates write it.
  constexpr int64_t kBatch = 1000;
  int64_t after_id = 0;
  while (true) {
    std::vector<std::pair<int64_t, std::string>> batch;
    {
      PRISM_ASSIGN_OR_RETURN(
          Query q, conn->Prepare("SELECT id, metrics FROM trials WHERE id > ? "
                                 "AND metrics IS NOT NULL ORDER BY id LIMIT "
                                 "?"));
      q.Bind(1, after_id);
      q.Bind(2, kBatch);
      while (true) {
        PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) break;
        batch.emplace_back(q.Int(0), q.Blob(1));
      }
    }
    if (batch.empty()) return absl::OkStatus();
    PRISM_ASSIGN_OR_RETURN(Query update, conn->Prepare(update_sql.c_str()));
    for (const auto& [id, blob] : batch) {
      v1::TrialMetrics metrics;
      if (!metrics.ParseFromString(blob)) {
        Log(LogLevel::kWarning,
            "trial metrics do not parse; ranking columns left empty")
            .Kv("trial", id);
        continue;
      }
      BindRankingColumns(metrics, /*first=*/1, &update);
      update.Bind(kRankingColumnCount + 1, id);
      PRISM_RETURN_IF_ERROR(update.Run());
    }
    after_id = batch.back().first;
  }
}

const std::vector<Migration>& Migrations() {
  static const auto* migrations = new std::vector<Migration>{
      {1, "initial schema", kSchemaV1, nullptr},
      {2, "nullable trial_attempts.resumed_from_step", kSchemaV2, nullptr},
      {3, "workers.stopped_ms", kSchemaV3, nullptr},
      {4, "trials ranking columns", kSchemaV4, nullptr},
      {5, "experiments adaptive seeds", kSchemaV5, nullptr},
      {6, "trials.device", kSchemaV6, nullptr},
      {7, "trials.cpu_share", kSchemaV7, BackfillRankingColumns},
      {8, "scaler tag and jobs", kSchemaV8, nullptr},
      {9, "tokens id, expiry, revocation, last use", kSchemaV9, nullptr},
      {10, "trials.target_steps", kSchemaV10, nullptr},
      {11, "users share and quotas", kSchemaV11, nullptr},
      {12, "experiments ladder", kSchemaV12, nullptr},
      {13, "experiment summaries and max_active", kSchemaV13, nullptr},
      {14, "retired ids of deleted experiments", kSchemaV14, nullptr},
      {15, "usage of deleted experiments", kSchemaV15, nullptr},
  };
  return *migrations;
}

}  // namespace

absl::StatusOr<int> SchemaVersion(Connection* conn) {
  PRISM_RETURN_IF_ERROR(
      conn->Exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
                 " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                 " applied_ms INTEGER NOT NULL)"));
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      conn->Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? static_cast<int>(q.Int(0)) : 0;
}

absl::Status Migrate(Connection* conn, int target_version) {
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(conn, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(int current, SchemaVersion(conn));
  if (current > target_version) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database schema version ", current, " is newer than this binary's (",
        target_version, "); upgrade prism"));
  }
  for (const Migration& m : Migrations()) {
    if (m.version <= current || m.version > target_version) continue;
    PRISM_RETURN_IF_ERROR(conn->Exec(m.sql));
    if (m.after_sql != nullptr) PRISM_RETURN_IF_ERROR(m.after_sql(conn));
    PRISM_ASSIGN_OR_RETURN(
        Query q, conn->Prepare("INSERT INTO schema_migrations VALUES "
                               "(?, ?, CAST((julianday('now') - 2440587.5) "
                               "* 86400000 AS INTEGER))"));
    q.Bind(1, static_cast<int64_t>(m.version));
    q.BindText(2, m.name);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  return txn.Commit();
}

}  // namespace prism::storage::internal
