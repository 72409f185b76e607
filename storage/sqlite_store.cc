#include "storage/sqlite_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "storage/internal/schema.h"
#include "storage/internal/sqlite.h"

namespace prism::storage {

using internal::Connection;
using internal::Query;
using internal::Transaction;

namespace {

constexpr int64_t kQueued = v1::TRIAL_QUEUED;
constexpr int64_t kLeased = v1::TRIAL_LEASED;
constexpr int64_t kRunning = v1::TRIAL_RUNNING;

bool IsLive(int64_t state) { return state == kLeased || state == kRunning; }

// --- the compact val curve: (int64 step, float32 loss) little-endian pairs.

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

void AppendCurvePoint(int64_t step, float loss, std::string* out) {
  uint32_t bits;
  std::memcpy(&bits, &loss, sizeof(bits));
  AppendLittleEndian(static_cast<uint64_t>(step), 8, out);
  AppendLittleEndian(bits, 4, out);
}

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

// ReadRankingMetrics reads the four TrialMetrics fields ranking uses from
// the stored message, skipping the others without building the message
// (its milestones and strings): on a cold ranking of 10,000 trials the full
// parse was most of the read. Returns false for a malformed blob.
bool ReadRankingMetrics(absl::string_view blob, TrialOutcome* outcome) {
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const uint8_t*>(blob.data()),
      static_cast<int>(blob.size()));
  constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2,
                     kFixed32 = 5;
  auto read_double = [&in](double* value) {
    uint64_t bits;
    if (!in.ReadLittleEndian64(&bits)) return false;
    std::memcpy(value, &bits, sizeof(*value));
    return true;
  };
  while (const uint32_t tag = in.ReadTag()) {
    const uint32_t field = tag >> 3;
    const uint32_t wire_type = tag & 7;
    if (wire_type == kFixed64 &&
        field == v1::TrialMetrics::kFinalValLossFieldNumber) {
      if (!read_double(&outcome->final_val_loss)) return false;
    } else if (wire_type == kFixed64 &&
               field == v1::TrialMetrics::kMinValLossFieldNumber) {
      if (!read_double(&outcome->min_val_loss)) return false;
    } else if (wire_type == kFixed64 &&
               field == v1::TrialMetrics::kTokensPerSecondFieldNumber) {
      if (!read_double(&outcome->tokens_per_second)) return false;
    } else if (field == v1::TrialMetrics::kAttentionDistanceFieldNumber &&
               (wire_type == kFixed64 || wire_type == kLengthDelimited)) {
      // Packed (what proto3 writes) or one element per tag.
      uint32_t bytes = 8;
      if (wire_type == kLengthDelimited && !in.ReadVarint32(&bytes)) {
        return false;
      }
      for (uint32_t i = 0; i < bytes / 8; ++i) {
        double d;
        if (!read_double(&d)) return false;
        outcome->attention_distance.push_back(d);
      }
    } else if (wire_type == kVarint) {
      uint64_t ignored;
      if (!in.ReadVarint64(&ignored)) return false;
    } else if (wire_type == kFixed64) {
      if (!in.Skip(8)) return false;
    } else if (wire_type == kLengthDelimited) {
      uint32_t bytes;
      if (!in.ReadVarint32(&bytes) || !in.Skip(static_cast<int>(bytes))) {
        return false;
      }
    } else if (wire_type == kFixed32) {
      if (!in.Skip(4)) return false;
    } else {
      return false;  // groups: never written by proto3
    }
  }
  return in.ConsumedEntireMessage();
}

// --- row readers, shared by the read pool and the writer.

constexpr char kTrialColumns[] =
    "id, experiment_id, schedule, seed, is_baseline, state, attempt, "
    "worker_id, lease_deadline_ms, last_step, total_steps, metrics, error, "
    "created_ms, started_ms, finished_ms";

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

absl::StatusOr<v1::Experiment> ReadExperiment(Connection* conn, int64_t id) {
  v1::Experiment e;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, conn->Prepare("SELECT id, name, owner, spec, state, priority, "
                               "created_ms, updated_ms FROM experiments WHERE "
                               "id = ?"));
    q.Bind(1, id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) {
      return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
    }
    e.set_id(q.Int(0));
    e.set_name(q.Text(1));
    e.set_owner(q.Text(2));
    if (!e.mutable_spec()->ParseFromString(q.Blob(3))) {
      return absl::DataLossError(
          absl::StrCat("experiment ", id, ": stored spec does not parse"));
    }
    e.set_state(static_cast<v1::ExperimentState>(q.Int(4)));
    e.set_priority(static_cast<int32_t>(q.Int(5)));
    e.set_created_unix_ms(q.Int(6));
    e.set_updated_unix_ms(q.Int(7));
  }
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      conn->Prepare("SELECT state, COUNT(*), SUM(CASE WHEN state >= 4 THEN 1.0 "
                    "WHEN total_steps > 0 THEN MIN(1.0, last_step * 1.0 / "
                    "total_steps) ELSE 0.0 END) FROM trials WHERE "
                    "experiment_id = ? GROUP BY state"));
  q.Bind(1, id);
  v1::TrialCounts* c = e.mutable_counts();
  double done = 0.0;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    const auto n = static_cast<int32_t>(q.Int(1));
    done += q.Double(2);
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

// WorkerChanged is NotFound when the UPDATE just run on `c` found no row
// for worker `id`.
absl::Status WorkerChanged(Connection& c, const std::string& id) {
  if (c.changes() != 0) return absl::OkStatus();
  return absl::NotFoundError(
      absl::StrCat("worker '", id, "' is not registered"));
}

constexpr char kWorkerColumns[] =
    "id, host, device, threads, user, registered_ms, last_heartbeat_ms, "
    "current_trial_id, tokens_per_second, stopped_ms";

// LiveTrial is the part of a trial row the compare-and-set writes check.
struct LiveTrial {
  int64_t experiment_id = 0;
  int64_t state = 0;
  int32_t attempt = 0;
  std::string worker_id;
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
      Query q, conn->Prepare("SELECT experiment_id, state, attempt, worker_id "
                             "FROM trials WHERE id = ?"));
  q.Bind(1, trial_id);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("trial ", trial_id, " not found"));
  }
  return LiveTrial{q.Int(0), q.Int(1), static_cast<int32_t>(q.Int(2)),
                   q.Text(3)};
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

// InsertPoints stores each point once per (trial, split, step).
absl::Status InsertPoints(Connection* conn, int64_t trial_id,
                          const std::vector<v1::LossPoint>& points, int* stored,
                          int* duplicates, int64_t* max_step) {
  PRISM_ASSIGN_OR_RETURN(
      Query q, conn->Prepare("INSERT OR IGNORE INTO points (trial_id, split, "
                             "step, loss, learning_rate, tokens_per_second, "
                             "elapsed_seconds) VALUES (?, ?, ?, ?, ?, ?, ?)"));
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
// no trial is queued, leased or running.
absl::Status FinishExperimentIfDrained(Connection* conn, int64_t id,
                                       int64_t now_ms) {
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      conn->Prepare("UPDATE experiments SET state = ?, updated_ms = ? WHERE "
                    "id = ? AND state IN (?, ?) AND NOT EXISTS (SELECT 1 FROM "
                    "trials WHERE experiment_id = ? AND state IN (?, ?, ?))"));
  q.Bind(1, static_cast<int64_t>(v1::EXPERIMENT_DONE));
  q.Bind(2, now_ms);
  q.Bind(3, id);
  q.Bind(4, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
  q.Bind(5, static_cast<int64_t>(v1::EXPERIMENT_PAUSED));
  q.Bind(6, id);
  q.Bind(7, kQueued);
  q.Bind(8, kLeased);
  q.Bind(9, kRunning);
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

// Reader is a pooled read-only connection, returned to the pool on
// destruction.
class SqliteStore::Reader {
 public:
  Reader(SqliteStore* store, std::unique_ptr<Connection> conn)
      : store_(store), conn_(std::move(conn)) {}
  Reader(Reader&&) = default;
  ~Reader() {
    if (conn_ != nullptr) store_->ReleaseReader(std::move(conn_));
  }
  Connection* operator->() { return conn_.get(); }
  Connection* get() { return conn_.get(); }

 private:
  SqliteStore* store_;
  std::unique_ptr<Connection> conn_;
};

SqliteStore::WriterLock::~WriterLock() {
  if (fd >= 0) close(fd);
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path) {
  // One writer per file: a second coordinator on the same database would
  // otherwise fight over the write lock and time out at random.
  const std::string lock_path = absl::StrCat(path, ".lock");
  auto lock = std::make_unique<WriterLock>();
  lock->fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock->fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot open database ", path,
                                               ": ", std::strerror(errno)));
  }
  if (flock(lock->fd, LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database ", path,
        " is in use by another process (is a coordinator already running "
        "on it?)"));
  }
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<Connection> writer,
                         Connection::Open(path, Connection::Options{}));
  PRISM_RETURN_IF_ERROR(internal::Migrate(writer.get(), kSchemaVersion));
  // Checkpoints move to their own thread: run inside a commit they would
  // stall every report waiting on that commit for the database fsync.
  PRISM_RETURN_IF_ERROR(writer->Exec("PRAGMA wal_autocheckpoint=0"));
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<Connection> checkpointer,
                         Connection::Open(path, Connection::Options{}));
  return std::unique_ptr<SqliteStore>(new SqliteStore(
      path, std::move(lock), std::move(writer), std::move(checkpointer)));
}

SqliteStore::SqliteStore(std::string path, std::unique_ptr<WriterLock> lock,
                         std::unique_ptr<Connection> writer,
                         std::unique_ptr<Connection> checkpointer)
    : path_(std::move(path)),
      lock_(std::move(lock)),
      writer_(std::move(writer)),
      checkpointer_(std::move(checkpointer)),
      checkpoint_thread_([this] { CheckpointLoop(); }) {}

SqliteStore::~SqliteStore() {
  {
    absl::MutexLock lock(&checkpoint_mu_);
    stopping_ = true;
  }
  checkpoint_thread_.join();
  checkpointer_.reset();
  // Readers close before the writer, whose close then checkpoints the WAL
  // into the database and removes it.
  absl::MutexLock pool_lock(&pool_mu_);
  free_readers_.clear();
}

void SqliteStore::CheckpointLoop() {
  while (true) {
    {
      absl::MutexLock lock(&checkpoint_mu_);
      if (checkpoint_mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                                          kCheckpointInterval)) {
        return;
      }
    }
    // PASSIVE copies what it can without blocking the writer or readers;
    // a busy database just waits for the next round.
    checkpointer_->Exec("PRAGMA wal_checkpoint(PASSIVE)").IgnoreError();
  }
}

absl::StatusOr<SqliteStore::Reader> SqliteStore::AcquireReader() {
  {
    absl::MutexLock lock(&pool_mu_);
    if (!free_readers_.empty()) {
      std::unique_ptr<Connection> conn = std::move(free_readers_.back());
      free_readers_.pop_back();
      return Reader(this, std::move(conn));
    }
  }
  Connection::Options options;
  options.read_only = true;
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                         Connection::Open(path_, options));
  return Reader(this, std::move(conn));
}

void SqliteStore::ReleaseReader(std::unique_ptr<Connection> conn) {
  absl::MutexLock lock(&pool_mu_);
  free_readers_.push_back(std::move(conn));
}

absl::StatusOr<int> SqliteStore::SchemaVersion() {
  absl::MutexLock lock(&write_mu_);
  return internal::SchemaVersion(writer_.get());
}

// --- users and tokens -------------------------------------------------------

absl::Status SqliteStore::CreateToken(const std::string& token_hash,
                                      const std::string& user, v1::Role role,
                                      int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("INSERT OR IGNORE INTO users (name, created_ms) "
                            "VALUES (?, ?)"));
    q.BindText(1, user);
    q.Bind(2, now_ms);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("INSERT INTO tokens (hash, user, role, created_ms) "
                            "VALUES (?, ?, ?, ?)"));
    q.BindText(1, token_hash);
    q.BindText(2, user);
    q.Bind(3, static_cast<int64_t>(role));
    q.Bind(4, now_ms);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  return txn.Commit();
}

absl::StatusOr<TokenInfo> SqliteStore::LookupToken(
    const std::string& token_hash) {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT user, role FROM tokens WHERE hash = ?"));
  q.BindText(1, token_hash);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError("unknown token");
  return TokenInfo{q.Text(0), static_cast<v1::Role>(q.Int(1))};
}

absl::StatusOr<int64_t> SqliteStore::CountTokens() {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare("SELECT COUNT(*) FROM tokens"));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

// --- experiments ------------------------------------------------------------

absl::StatusOr<CreatedExperiment> SqliteStore::CreateExperiment(
    const NewExperiment& e) {
  std::string spec;
  if (!e.spec.SerializeToString(&spec)) {
    return absl::InternalError("cannot serialize the experiment spec");
  }
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("INSERT OR IGNORE INTO users (name, created_ms) "
                            "VALUES (?, ?)"));
    q.BindText(1, e.owner);
    q.Bind(2, e.now_ms);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  CreatedExperiment created;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q,
        c->Prepare("INSERT INTO experiments (name, owner, spec, state, "
                   "priority, max_attempts, created_ms, updated_ms) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    q.BindText(1, e.name);
    q.BindText(2, e.owner);
    q.BindBlob(3, spec);
    q.Bind(4, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
    q.Bind(5, static_cast<int64_t>(e.priority));
    q.Bind(6, static_cast<int64_t>(e.max_attempts));
    q.Bind(7, e.now_ms);
    q.Bind(8, e.now_ms);
    PRISM_RETURN_IF_ERROR(q.Run());
    created.id = c->last_insert_rowid();
  }
  PRISM_ASSIGN_OR_RETURN(
      Query q, c->Prepare("INSERT OR IGNORE INTO trials (experiment_id, "
                          "schedule, seed, config_fingerprint, is_baseline, "
                          "state, total_steps, created_ms) VALUES (?, ?, ?, ?, "
                          "?, ?, ?, ?)"));
  for (const NewTrial& t : e.trials) {
    q.Bind(1, created.id);
    q.BindText(2, t.schedule);
    q.Bind(3, t.seed);
    q.BindText(4, e.config_fingerprint);
    q.Bind(5, static_cast<int64_t>(t.is_baseline ? 1 : 0));
    q.Bind(6, kQueued);
    q.Bind(7, e.total_steps);
    q.Bind(8, e.now_ms);
    PRISM_RETURN_IF_ERROR(q.Run());
    created.trials_created += static_cast<int>(c->changes());
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return created;
}

absl::StatusOr<v1::Experiment> SqliteStore::GetExperiment(int64_t id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  return ReadExperiment(r.get(), id);
}

absl::StatusOr<ExperimentPage> SqliteStore::ListExperiments(
    const std::string& owner, int limit, int64_t after_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  std::vector<int64_t> ids;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, r->Prepare("SELECT id FROM experiments WHERE (?1 = '' OR "
                            "owner = ?1) AND id > ?2 ORDER BY id LIMIT ?3"));
    q.BindText(1, owner);
    q.Bind(2, after_id);
    q.Bind(3, static_cast<int64_t>(limit) + 1);
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      ids.push_back(q.Int(0));
    }
  }
  ExperimentPage page;
  if (ids.size() > static_cast<size_t>(limit)) {
    ids.pop_back();
    page.next_after_id = ids.back();
  }
  for (int64_t id : ids) {
    PRISM_ASSIGN_OR_RETURN(v1::Experiment e, ReadExperiment(r.get(), id));
    page.experiments.push_back(std::move(e));
  }
  return page;
}

absl::StatusOr<v1::Experiment> SqliteStore::SetExperimentState(
    int64_t id, v1::ExperimentState state, int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e, ReadExperiment(c, id));
  if (e.state() == v1::EXPERIMENT_CANCELLED ||
      e.state() == v1::EXPERIMENT_DONE) {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", id, " is ",
                     e.state() == v1::EXPERIMENT_DONE ? "done" : "cancelled"));
  }
  if (e.state() != state) {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE experiments SET state = ?, updated_ms = ? "
                            "WHERE id = ?"));
    q.Bind(1, static_cast<int64_t>(state));
    q.Bind(2, now_ms);
    q.Bind(3, id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_ASSIGN_OR_RETURN(e, ReadExperiment(c, id));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return e;
}

absl::StatusOr<v1::Experiment> SqliteStore::CancelExperiment(int64_t id,
                                                             int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e, ReadExperiment(c, id));
  if (e.state() == v1::EXPERIMENT_CANCELLED ||
      e.state() == v1::EXPERIMENT_DONE) {
    return e;
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trial_attempts SET ended_ms = ?1, outcome "
                            "= ?2, message = 'experiment cancelled' WHERE "
                            "ended_ms = 0 AND trial_id IN (SELECT id FROM "
                            "trials WHERE experiment_id = ?3 AND state IN "
                            "(?4, ?5))"));
    q.Bind(1, now_ms);
    q.Bind(2, static_cast<int64_t>(v1::TRIAL_CANCELLED));
    q.Bind(3, id);
    q.Bind(4, kLeased);
    q.Bind(5, kRunning);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trials SET state = ?1, finished_ms = ?2, "
                            "lease_deadline_ms = 0 WHERE experiment_id = ?3 "
                            "AND state IN (?4, ?5, ?6)"));
    q.Bind(1, static_cast<int64_t>(v1::TRIAL_CANCELLED));
    q.Bind(2, now_ms);
    q.Bind(3, id);
    q.Bind(4, kQueued);
    q.Bind(5, kLeased);
    q.Bind(6, kRunning);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE experiments SET state = ?, updated_ms = ? "
                            "WHERE id = ?"));
    q.Bind(1, static_cast<int64_t>(v1::EXPERIMENT_CANCELLED));
    q.Bind(2, now_ms);
    q.Bind(3, id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_ASSIGN_OR_RETURN(e, ReadExperiment(c, id));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return e;
}

absl::StatusOr<v1::Experiment> SqliteStore::SetExperimentPriority(
    int64_t id, int priority, int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE experiments SET priority = ?, updated_ms = "
                            "? WHERE id = ?"));
    q.Bind(1, static_cast<int64_t>(priority));
    q.Bind(2, now_ms);
    q.Bind(3, id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e, ReadExperiment(c, id));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return e;
}

// --- trials -----------------------------------------------------------------

absl::StatusOr<TrialPage> SqliteStore::ListTrials(int64_t experiment_id,
                                                  v1::TrialState state,
                                                  int limit, int64_t after_id) {
  static const std::string list_sql = absl::StrCat(
      "SELECT ", kTrialColumns,
      " FROM trials WHERE experiment_id = ?1 AND (?2 = 0 OR state = ?2) AND "
      "id > ?3 ORDER BY id LIMIT ?4");
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  TrialPage page;
  {
    PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare(list_sql.c_str()));
    q.Bind(1, experiment_id);
    q.Bind(2, static_cast<int64_t>(state));
    q.Bind(3, after_id);
    q.Bind(4, static_cast<int64_t>(limit) + 1);
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      page.trials.push_back(TrialFromRow(q));
    }
  }
  if (page.trials.size() > static_cast<size_t>(limit)) {
    page.trials.pop_back();
    page.next_after_id = page.trials.back().id();
  }
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT COUNT(*) FROM trials WHERE experiment_id = "
                          "?1 AND (?2 = 0 OR state = ?2)"));
  q.Bind(1, experiment_id);
  q.Bind(2, static_cast<int64_t>(state));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  page.total = row ? static_cast<int>(q.Int(0)) : 0;
  return page;
}

absl::StatusOr<v1::Trial> SqliteStore::GetTrial(int64_t trial_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  return ReadTrial(r.get(), trial_id, /*with_attempts=*/true);
}

absl::StatusOr<v1::Trial> SqliteStore::FindBaselineTrial(int64_t experiment_id,
                                                         int64_t seed) {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  int64_t id = 0;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q,
        r->Prepare("SELECT id FROM trials WHERE experiment_id = ? AND "
                   "seed = ? AND is_baseline = 1 ORDER BY id LIMIT 1"));
    q.Bind(1, experiment_id);
    q.Bind(2, seed);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) {
      return absl::NotFoundError(absl::StrCat(
          "experiment ", experiment_id, " has no baseline for seed ", seed));
    }
    id = q.Int(0);
  }
  return ReadTrial(r.get(), id, /*with_attempts=*/true);
}

absl::StatusOr<std::vector<v1::LossPoint>> SqliteStore::GetPoints(
    int64_t trial_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT split, step, loss, learning_rate, "
                          "tokens_per_second, elapsed_seconds FROM points "
                          "WHERE trial_id = ? ORDER BY split, step"));
  q.Bind(1, trial_id);
  std::vector<v1::LossPoint> points;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    v1::LossPoint& p = points.emplace_back();
    p.set_split(static_cast<v1::Split>(q.Int(0)));
    p.set_step(q.Int(1));
    p.set_loss(static_cast<float>(q.Double(2)));
    p.set_learning_rate(static_cast<float>(q.Double(3)));
    p.set_tokens_per_second(q.Double(4));
    p.set_elapsed_seconds(q.Double(5));
  }
  return points;
}

absl::StatusOr<std::vector<TrialOutcome>> SqliteStore::ListCompletedOutcomes(
    int64_t experiment_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT id, schedule, seed, is_baseline, metrics, "
                          "val_curve FROM trials WHERE experiment_id = ? AND "
                          "state = ? ORDER BY id"));
  q.Bind(1, experiment_id);
  q.Bind(2, static_cast<int64_t>(v1::TRIAL_COMPLETED));
  std::vector<TrialOutcome> outcomes;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    TrialOutcome& o = outcomes.emplace_back();
    o.trial_id = q.Int(0);
    o.schedule = q.Text(1);
    o.seed = q.Int(2);
    o.is_baseline = q.Int(3) != 0;
    if (!ReadRankingMetrics(q.BlobView(4), &o)) {
      return absl::DataLossError(
          absl::StrCat("trial ", o.trial_id, ": stored metrics do not parse"));
    }
    DecodeCurve(q.BlobView(5), &o);
  }
  return outcomes;
}

absl::StatusOr<LastStored> SqliteStore::LastStoredSteps(int64_t trial_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  // From the trial's row, so a missing trial is NotFound rather than -1.
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      r->Prepare("SELECT (SELECT MAX(step) FROM points WHERE trial_id = ?1 AND "
                 "split = ?2), (SELECT MAX(step) FROM points WHERE trial_id = "
                 "?1 AND split = ?3) FROM trials WHERE id = ?1"));
  q.Bind(1, trial_id);
  q.Bind(2, static_cast<int64_t>(v1::SPLIT_TRAIN));
  q.Bind(3, static_cast<int64_t>(v1::SPLIT_VAL));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("no trial ", trial_id));
  }
  LastStored last;
  if (!q.IsNull(0)) last.train = q.Int(0);
  if (!q.IsNull(1)) last.val = q.Int(1);
  return last;
}

absl::StatusOr<int64_t> SqliteStore::CountCompleted(int64_t experiment_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT COUNT(*) FROM trials WHERE experiment_id = ? "
                          "AND state = ?"));
  q.Bind(1, experiment_id);
  q.Bind(2, static_cast<int64_t>(v1::TRIAL_COMPLETED));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

absl::StatusOr<std::map<v1::TrialState, int64_t>>
SqliteStore::CountTrialsByState() {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT state, COUNT(*) FROM trials GROUP BY state"));
  std::map<v1::TrialState, int64_t> counts;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    counts[static_cast<v1::TrialState>(q.Int(0))] = q.Int(1);
  }
  return counts;
}

// --- the queue --------------------------------------------------------------

absl::StatusOr<std::vector<LeaseCandidate>> SqliteStore::ListLeaseCandidates() {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT e.id, e.owner, e.priority, e.created_ms FROM "
                          "experiments e WHERE e.state = ? AND EXISTS (SELECT "
                          "1 FROM trials t WHERE t.experiment_id = e.id AND "
                          "t.state = ?)"));
  q.Bind(1, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
  q.Bind(2, kQueued);
  std::vector<LeaseCandidate> candidates;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    candidates.push_back(LeaseCandidate{q.Int(0), q.Text(1),
                                        static_cast<int>(q.Int(2)), q.Int(3)});
  }
  return candidates;
}

absl::StatusOr<std::map<std::string, int>>
SqliteStore::CountLiveTrialsByUser() {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT e.owner, COUNT(*) FROM trials t JOIN "
                          "experiments e ON e.id = t.experiment_id WHERE "
                          "t.state IN (?, ?) GROUP BY e.owner"));
  q.Bind(1, kLeased);
  q.Bind(2, kRunning);
  std::map<std::string, int> counts;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    counts[q.Text(0)] = static_cast<int>(q.Int(1));
  }
  return counts;
}

absl::StatusOr<std::optional<v1::Trial>> SqliteStore::LeaseNextTrial(
    int64_t experiment_id, const std::string& worker_id, int64_t now_ms,
    int64_t deadline_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
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

absl::StatusOr<HeartbeatResult> SqliteStore::Heartbeat(const AttemptRef& ref,
                                                       int64_t step,
                                                       int64_t now_ms,
                                                       int64_t deadline_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(LiveTrial t, ReadLiveTrial(c, ref.trial_id));
  HeartbeatResult result;
  result.experiment_id = t.experiment_id;
  if (!HoldsLease(t, ref)) {
    result.stop = true;
    return result;
  }
  PRISM_ASSIGN_OR_RETURN(
      result.lease_deadline_ms,
      RenewRunning(c, ref.trial_id, step, now_ms, deadline_ms));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return result;
}

absl::StatusOr<int64_t> SqliteStore::StartAttempt(const AttemptRef& ref,
                                                  int64_t resumed_from_step,
                                                  int64_t now_ms,
                                                  int64_t deadline_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(LiveTrial t, ReadLiveTrial(c, ref.trial_id));
  if (!HoldsLease(t, ref)) return StaleAttempt(t, ref);
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

absl::StatusOr<std::vector<ReportOutcome>> SqliteStore::WriteReports(
    const std::vector<const ReportWrite*>& reports) {
  std::vector<ReportOutcome> outcomes(reports.size());
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
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

absl::StatusOr<v1::Trial> SqliteStore::CompleteTrial(
    const AttemptRef& ref, const v1::TrialMetrics& metrics,
    const std::vector<v1::LossPoint>& points, int64_t now_ms) {
  std::string metrics_blob;
  if (!metrics.SerializeToString(&metrics_blob)) {
    return absl::InternalError("cannot serialize trial metrics");
  }
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(LiveTrial t, ReadLiveTrial(c, ref.trial_id));
  const bool finished_by_this_attempt =
      (t.state == v1::TRIAL_COMPLETED || t.state == v1::TRIAL_DIVERGED) &&
      t.attempt == ref.attempt && t.worker_id == ref.worker_id;
  if (finished_by_this_attempt) {
    // A re-sent Complete whose first acknowledgement was lost.
    return ReadTrial(c, ref.trial_id, /*with_attempts=*/true);
  }
  if (!HoldsLease(t, ref)) return StaleAttempt(t, ref);

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
  const v1::TrialState state =
      metrics.diverged() ? v1::TRIAL_DIVERGED : v1::TRIAL_COMPLETED;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE trials SET state = ?1, metrics = ?2, "
                            "val_curve = ?3, last_step = MAX(last_step, ?4), "
                            "started_ms = CASE WHEN started_ms = 0 THEN ?5 "
                            "ELSE started_ms END, finished_ms = ?5, "
                            "lease_deadline_ms = 0 WHERE id = ?6"));
    q.Bind(1, static_cast<int64_t>(state));
    q.BindBlob(2, metrics_blob);
    q.BindBlob(3, curve);
    q.Bind(4, max_step);
    q.Bind(5, now_ms);
    q.Bind(6, ref.trial_id);
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

absl::StatusOr<v1::Trial> SqliteStore::FailTrial(const AttemptRef& ref,
                                                 const std::string& message,
                                                 bool retryable,
                                                 int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
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

absl::StatusOr<v1::Trial> SqliteStore::ReleaseTrial(const AttemptRef& ref,
                                                    const std::string& message,
                                                    int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
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

absl::StatusOr<std::vector<ExpiredLease>> SqliteStore::ExpireLeases(
    int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
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

absl::StatusOr<int> SqliteStore::ExtendLiveLeases(int64_t deadline_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
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

absl::StatusOr<int64_t> SqliteStore::CountQueued() {
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT COUNT(*) FROM trials t JOIN experiments e ON "
                          "e.id = t.experiment_id WHERE t.state = ? AND "
                          "e.state = ?"));
  q.Bind(1, kQueued);
  q.Bind(2, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

// --- workers ----------------------------------------------------------------

absl::StatusOr<v1::Worker> SqliteStore::UpsertWorker(const v1::Worker& w,
                                                     int64_t now_ms) {
  static const std::string select_sql =
      absl::StrCat("SELECT ", kWorkerColumns, " FROM workers WHERE id = ?");
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q,
        c->Prepare("INSERT INTO workers (id, host, device, threads, user, "
                   "registered_ms, last_heartbeat_ms) VALUES (?1, ?2, ?3, ?4, "
                   "?5, ?6, ?6) ON CONFLICT (id) DO UPDATE SET host = "
                   "excluded.host, device = excluded.device, threads = "
                   "excluded.threads, user = excluded.user, "
                   "last_heartbeat_ms = excluded.last_heartbeat_ms, "
                   "stopped_ms = 0"));
    q.BindText(1, w.id());
    q.BindText(2, w.host());
    q.BindText(3, w.device());
    q.Bind(4, static_cast<int64_t>(w.threads()));
    q.BindText(5, w.user());
    q.Bind(6, now_ms);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  v1::Worker stored;
  {
    PRISM_ASSIGN_OR_RETURN(Query q, c->Prepare(select_sql.c_str()));
    q.BindText(1, w.id());
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return absl::InternalError("worker vanished after upsert");
    stored = WorkerFromRow(q);
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

absl::StatusOr<v1::Worker> SqliteStore::GetWorker(const std::string& id) {
  static const std::string sql =
      absl::StrCat("SELECT ", kWorkerColumns, " FROM workers WHERE id = ?");
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare(sql.c_str()));
  q.BindText(1, id);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row)
    return absl::NotFoundError(absl::StrCat("worker '", id, "' not found"));
  return WorkerFromRow(q);
}

absl::Status SqliteStore::TouchWorker(const WorkerUpdate& u) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(
      Query q, c->Prepare("UPDATE workers SET last_heartbeat_ms = ?, "
                          "current_trial_id = ?, tokens_per_second = ?, "
                          "stopped_ms = 0 WHERE id = ?"));
  q.Bind(1, u.now_ms);
  q.Bind(2, u.trial_id);
  q.Bind(3, u.tokens_per_second);
  q.BindText(4, u.worker_id);
  PRISM_RETURN_IF_ERROR(q.Run());
  return WorkerChanged(*c, u.worker_id);
}

absl::Status SqliteStore::StopWorker(const std::string& id, int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(
      Query q, c->Prepare("UPDATE workers SET stopped_ms = ?, "
                          "current_trial_id = 0, tokens_per_second = 0 "
                          "WHERE id = ?"));
  q.Bind(1, now_ms);
  q.BindText(2, id);
  PRISM_RETURN_IF_ERROR(q.Run());
  return WorkerChanged(*c, id);
}

absl::StatusOr<std::vector<v1::Worker>> SqliteStore::ListWorkers() {
  static const std::string sql =
      absl::StrCat("SELECT ", kWorkerColumns, " FROM workers ORDER BY id");
  PRISM_ASSIGN_OR_RETURN(Reader r, AcquireReader());
  PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare(sql.c_str()));
  std::vector<v1::Worker> workers;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    workers.push_back(WorkerFromRow(q));
  }
  return workers;
}

}  // namespace prism::storage
