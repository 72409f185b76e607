#include "storage/sqlite_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/log.h"
#include "base/private_files.h"
#include "base/status_macros.h"
#include "storage/internal/lease.h"
#include "storage/internal/reader_pool.h"
#include "storage/internal/row_codecs.h"
#include "storage/internal/schema.h"
#include "storage/internal/sqlite.h"

namespace prism::storage {

using internal::Connection;
using internal::ExperimentView;
using internal::kLeased;
using internal::kQueued;
using internal::kRunning;
using internal::Query;
using internal::ReadExperiment;
using internal::ReadTrial;
using internal::Transaction;
using Reader = internal::ReaderPool::Reader;

namespace {

// WorkerChanged is NotFound when the UPDATE just run on `c` found no row
// for worker `id`.
absl::Status WorkerChanged(Connection& c, const std::string& id) {
  if (c.changes() != 0) return absl::OkStatus();
  return absl::NotFoundError(
      absl::StrCat("worker '", id, "' is not registered"));
}

// MakeDatabasePrivate gives the database at `path` and the files beside it
// mode 0600 (base/private_files.h) before SQLite opens it. SQLite would
// create a new database 0644 less the umask, and it creates the -wal and
// -shm with the database's mode, so a private database keeps them private.
// A file an older version left open to other users is tightened, with a
// log line; one that is not ours is left to its owner, and one that cannot
// be changed is logged, not fatal (the open itself says whether the file
// can be used).
absl::Status MakeDatabasePrivate(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) {
    const std::string file = absl::StrCat(path, suffix);
    const absl::StatusOr<std::optional<mode_t>> was = TightenToPrivate(file);
    if (!was.ok()) {
      Log(LogLevel::kWarning, "cannot make a database file private")
          .Kv("file", file)
          .Kv("error", was.status().ToString());
    } else if (was->has_value()) {
      Log(LogLevel::kWarning,
          "database file was open to other users; made it private")
          .Kv("file", file)
          .Kv("mode_was", absl::StrFormat("%04o", **was))
          .Kv("mode", absl::StrFormat("%04o", kPrivateFileMode));
    }
  }
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                      kPrivateFileMode);
  if (fd < 0) {
    if (errno == EEXIST) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat("cannot open database ", path,
                                               ": ", std::strerror(errno)));
  }
  absl::Status status = SetPrivateMode(fd, path);
  close(fd);
  return status;
}

}  // namespace

SqliteStore::WriterLock::~WriterLock() {
  if (fd >= 0) close(fd);
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path, const SqliteStoreOptions& options) {
  // One writer per file: a second coordinator on the same database would
  // otherwise fight over the write lock and time out at random.
  const std::string lock_path = absl::StrCat(path, ".lock");
  auto lock = std::make_unique<WriterLock>();
  lock->fd =
      open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, kPrivateFileMode);
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
  PRISM_RETURN_IF_ERROR(MakeDatabasePrivate(path));
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<Connection> writer,
                         Connection::Open(path, Connection::Options{}));
  // Only the writer commits, so only its setting decides what a commit
  // survives (Connection::Open sets NORMAL).
  if (options.durability == SqliteStoreOptions::Durability::kFull) {
    PRISM_RETURN_IF_ERROR(writer->Exec("PRAGMA synchronous=FULL"));
  }
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
    : lock_(std::move(lock)),
      writer_(std::move(writer)),
      readers_(std::make_unique<internal::ReaderPool>(std::move(path))),
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
  readers_.reset();
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

void SqliteStore::SetWriteObserver(WriteObserver* observer) {
  absl::MutexLock lock(&write_mu_);
  writer_->set_write_observer(observer);
}

absl::StatusOr<int> SqliteStore::SchemaVersion() {
  absl::MutexLock lock(&write_mu_);
  return internal::SchemaVersion(writer_.get());
}

// --- users and tokens -------------------------------------------------------

namespace {

constexpr char kTokenColumns[] =
    "id, user, role, created_ms, expires_ms, last_used_ms, revoked_ms";

// TokenRow reads kTokenColumns, from column 0.
v1::TokenInfo TokenRow(const Query& q) {
  v1::TokenInfo t;
  t.set_id(q.Text(0));
  t.set_user(q.Text(1));
  t.set_role(static_cast<v1::Role>(q.Int(2)));
  t.set_created_unix_ms(q.Int(3));
  t.set_expires_unix_ms(q.Int(4));
  t.set_last_used_unix_ms(q.Int(5));
  t.set_revoked_unix_ms(q.Int(6));
  return t;
}

absl::StatusOr<v1::TokenInfo> ReadToken(Connection* c, const std::string& id) {
  static const std::string sql =
      absl::StrCat("SELECT ", kTokenColumns, " FROM tokens WHERE id = ?");
  PRISM_ASSIGN_OR_RETURN(Query q, c->Prepare(sql.c_str()));
  q.BindText(1, id);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("no token with id ", id));
  return TokenRow(q);
}

}  // namespace

absl::Status SqliteStore::CreateToken(const std::string& token_hash,
                                      const std::string& user, v1::Role role,
                                      int64_t now_ms, int64_t expires_ms) {
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
    PRISM_ASSIGN_OR_RETURN(Query q,
                           c->Prepare("INSERT INTO tokens (hash, user, role, "
                                      "created_ms, id, expires_ms) "
                                      "VALUES (?, ?, ?, ?, ?, ?)"));
    q.BindText(1, token_hash);
    q.BindText(2, user);
    q.Bind(3, static_cast<int64_t>(role));
    q.Bind(4, now_ms);
    q.BindText(5, TokenIdOf(token_hash));
    q.Bind(6, expires_ms);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  return txn.Commit();
}

absl::StatusOr<TokenInfo> SqliteStore::LookupToken(
    const std::string& token_hash) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT id, user, role, expires_ms, revoked_ms "
                          "FROM tokens WHERE hash = ?"));
  q.BindText(1, token_hash);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError("unknown token");
  return TokenInfo{q.Text(0), q.Text(1), static_cast<v1::Role>(q.Int(2)),
                   q.Int(3), q.Int(4)};
}

absl::StatusOr<int64_t> SqliteStore::CountTokens() {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare("SELECT COUNT(*) FROM tokens"));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

absl::StatusOr<std::vector<v1::TokenInfo>> SqliteStore::ListTokens(
    const std::string& user) {
  static const std::string sql =
      absl::StrCat("SELECT ", kTokenColumns,
                   " FROM tokens WHERE ? = '' OR user = ? "
                   "ORDER BY created_ms, rowid");
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare(sql.c_str()));
  q.BindText(1, user);
  q.BindText(2, user);
  std::vector<v1::TokenInfo> tokens;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return tokens;
    tokens.push_back(TokenRow(q));
  }
}

absl::StatusOr<v1::TokenInfo> SqliteStore::GetToken(const std::string& id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  return ReadToken(r.get(), id);
}

absl::StatusOr<v1::TokenInfo> SqliteStore::RevokeToken(const std::string& id,
                                                       int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(v1::TokenInfo token, ReadToken(c, id));
  if (token.revoked_unix_ms() != 0) return token;
  const bool usable =
      token.expires_unix_ms() == 0 || token.expires_unix_ms() > now_ms;
  if (token.role() == v1::ROLE_ADMIN && usable) {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("SELECT COUNT(*) FROM tokens WHERE role = ? AND "
                            "revoked_ms = 0 AND (expires_ms = 0 OR "
                            "expires_ms > ?) AND id != ?"));
    q.Bind(1, static_cast<int64_t>(v1::ROLE_ADMIN));
    q.Bind(2, now_ms);
    q.BindText(3, id);
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row || q.Int(0) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "token ", id,
          " is the last usable admin token; create another admin token "
          "before revoking it"));
    }
  }
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE tokens SET revoked_ms = ? WHERE id = ?"));
    q.Bind(1, now_ms);
    q.BindText(2, id);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  token.set_revoked_unix_ms(now_ms);
  return token;
}

absl::Status SqliteStore::RecordTokensUsed(
    const std::vector<std::pair<std::string, int64_t>>& used) {
  if (used.empty()) return absl::OkStatus();
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  PRISM_ASSIGN_OR_RETURN(
      Query q, c->Prepare("UPDATE tokens SET last_used_ms = ? WHERE hash = ? "
                          "AND last_used_ms < ?"));
  for (const auto& [hash, ms] : used) {
    q.Bind(1, ms);
    q.BindText(2, hash);
    q.Bind(3, ms);
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  return txn.Commit();
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
    static const std::string sql = absl::StrCat(
        "INSERT INTO experiments (id, name, owner, spec, state, priority, "
        "max_attempts, created_ms, updated_ms, adaptive_seeds, strategy, "
        "grid_steps) VALUES (",
        internal::kNextExperimentId, ", ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    PRISM_ASSIGN_OR_RETURN(Query q, c->Prepare(sql.c_str()));
    q.BindText(1, e.name);
    q.BindText(2, e.owner);
    q.BindBlob(3, spec);
    q.Bind(4, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
    q.Bind(5, static_cast<int64_t>(e.priority));
    q.Bind(6, static_cast<int64_t>(e.max_attempts));
    q.Bind(7, e.now_ms);
    q.Bind(8, e.now_ms);
    q.Bind(9, static_cast<int64_t>(DecidedByCoordinator(e.spec) ? 1 : 0));
    q.Bind(10, static_cast<int64_t>(e.spec.strategy()));
    if (e.grid_steps >= 0) {
      q.Bind(11, e.grid_steps);
    } else {
      q.BindNull(11);
    }
    PRISM_RETURN_IF_ERROR(q.Run());
    created.id = c->last_insert_rowid();
  }
  if (e.spec.has_ladder()) {
    // The unique (ladder_id, ladder_rung) index refuses a second copy of a
    // rung: AlreadyExists, with nothing stored.
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE experiments SET ladder_id = ?, "
                            "ladder_rung = ? WHERE id = ? AND NOT EXISTS "
                            "(SELECT 1 FROM experiments WHERE ladder_id = ? "
                            "AND ladder_rung = ?)"));
    const int64_t ladder = e.ladder_id != 0 ? e.ladder_id : created.id;
    q.Bind(1, ladder);
    q.Bind(2, static_cast<int64_t>(e.ladder_rung));
    q.Bind(3, created.id);
    q.Bind(4, ladder);
    q.Bind(5, static_cast<int64_t>(e.ladder_rung));
    PRISM_RETURN_IF_ERROR(q.Run());
    if (c->changes() == 0) {
      return absl::AlreadyExistsError(absl::StrCat(
          "ladder ", ladder, " already has rung ", e.ladder_rung + 1));
    }
  }
  static const std::string insert_trial = absl::StrCat(
      "INSERT OR IGNORE INTO trials (id, experiment_id, schedule, seed, "
      "config_fingerprint, is_baseline, state, total_steps, created_ms, "
      "target_steps) VALUES (",
      internal::kNextTrialId, ", ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  PRISM_ASSIGN_OR_RETURN(Query q, c->Prepare(insert_trial.c_str()));
  for (const NewTrial& t : e.trials) {
    q.Bind(1, created.id);
    q.BindText(2, t.schedule);
    q.Bind(3, t.seed);
    q.BindText(4, e.config_fingerprint);
    q.Bind(5, static_cast<int64_t>(t.is_baseline ? 1 : 0));
    q.Bind(6, kQueued);
    q.Bind(7, e.total_steps);
    q.Bind(8, e.now_ms);
    q.Bind(9, t.target_steps);
    PRISM_RETURN_IF_ERROR(q.Run());
    created.trials_created += static_cast<int>(c->changes());
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return created;
}

absl::StatusOr<int64_t> SqliteStore::FindLadderRung(int64_t ladder_id,
                                                    int rung) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT id FROM experiments WHERE ladder_id = ? AND "
                          "ladder_rung = ?"));
  q.Bind(1, ladder_id);
  q.Bind(2, static_cast<int64_t>(rung));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : int64_t{0};
}

absl::StatusOr<std::vector<v1::Experiment>> SqliteStore::ListLadder(
    int64_t ladder_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  std::vector<int64_t> ids;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, r->Prepare("SELECT id FROM experiments WHERE ladder_id = ? "
                            "AND ladder_id != 0 ORDER BY ladder_rung"));
    q.Bind(1, ladder_id);
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      ids.push_back(q.Int(0));
    }
  }
  std::vector<v1::Experiment> out;
  for (int64_t id : ids) {
    PRISM_ASSIGN_OR_RETURN(v1::Experiment e, ReadExperiment(r.get(), id));
    out.push_back(std::move(e));
  }
  return out;
}

absl::Status SqliteStore::SetLadderNote(int64_t experiment_id,
                                        const std::string& note,
                                        int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  {
    PRISM_ASSIGN_OR_RETURN(Query q,
                           c->Prepare("UPDATE experiments SET ladder_note = ?, "
                                      "updated_ms = ? WHERE id = ?"));
    q.BindText(1, note);
    q.Bind(2, now_ms);
    q.Bind(3, experiment_id);
    PRISM_RETURN_IF_ERROR(q.Run());
    if (c->changes() == 0) {
      return absl::NotFoundError(
          absl::StrCat("experiment ", experiment_id, " not found"));
    }
  }
  return txn.Commit();
}

absl::StatusOr<v1::Experiment> SqliteStore::GetExperiment(int64_t id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  return ReadExperiment(r.get(), id);
}

absl::StatusOr<ExperimentPage> SqliteStore::ListExperiments(
    const std::string& owner, int limit, int64_t after_id) {
  return ListExperimentPage(owner, limit, after_id, /*with_specs=*/true);
}

absl::StatusOr<ExperimentPage> SqliteStore::ListExperimentSummaries(
    const std::string& owner, int limit, int64_t after_id) {
  return ListExperimentPage(owner, limit, after_id, /*with_specs=*/false);
}

absl::StatusOr<ExperimentPage> SqliteStore::ListExperimentPage(
    const std::string& owner, int limit, int64_t after_id, bool with_specs) {
  const ExperimentView view =
      with_specs ? ExperimentView::kFull : ExperimentView::kSummary;
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
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
    PRISM_ASSIGN_OR_RETURN(v1::Experiment e, ReadExperiment(r.get(), id, view));
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

namespace {

// CountRows runs a `SELECT COUNT(*) ... WHERE ... = ?` for `id`.
absl::StatusOr<int64_t> CountRows(Connection* c, const char* sql, int64_t id) {
  PRISM_ASSIGN_OR_RETURN(Query q, c->Prepare(sql));
  q.Bind(1, id);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

// RunFor runs a write statement whose one parameter is `id`.
absl::Status RunFor(Connection* c, const char* sql, int64_t id) {
  PRISM_ASSIGN_OR_RETURN(Query q, c->Prepare(sql));
  q.Bind(1, id);
  return q.Run();
}

}  // namespace

absl::StatusOr<DeletedExperiment> SqliteStore::DeleteExperiment(int64_t id) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  DeletedExperiment deleted;
  PRISM_ASSIGN_OR_RETURN(deleted.experiment, ReadExperiment(c, id));
  const v1::ExperimentState state = deleted.experiment.state();
  if (state != v1::EXPERIMENT_DONE && state != v1::EXPERIMENT_CANCELLED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "experiment ", id, " is ",
        state == v1::EXPERIMENT_PAUSED ? "paused" : "active",
        ": only a done or cancelled experiment can be deleted (cancel it "
        "first)"));
  }
  PRISM_ASSIGN_OR_RETURN(
      deleted.points,
      CountRows(c,
                "SELECT COUNT(*) FROM points WHERE trial_id IN (SELECT id "
                "FROM trials WHERE experiment_id = ?)",
                id));
  PRISM_ASSIGN_OR_RETURN(
      deleted.attempts,
      CountRows(c,
                "SELECT COUNT(*) FROM trial_attempts WHERE trial_id IN "
                "(SELECT id FROM trials WHERE experiment_id = ?)",
                id));
  PRISM_ASSIGN_OR_RETURN(
      deleted.trials,
      CountRows(c, "SELECT COUNT(*) FROM trials WHERE experiment_id = ?", id));
  // The highest ids go first, into retired_ids, while the rows still exist.
  PRISM_RETURN_IF_ERROR(RunFor(
      c,
      "INSERT INTO retired_ids (name, max_id) SELECT 'trials', MAX(id) FROM "
      "trials WHERE experiment_id = ?1 GROUP BY experiment_id ON CONFLICT "
      "(name) DO UPDATE SET max_id = "
      "MAX(max_id, excluded.max_id)",
      id));
  PRISM_RETURN_IF_ERROR(RunFor(
      c,
      "INSERT INTO retired_ids (name, max_id) VALUES ('experiments', ?1) ON "
      "CONFLICT (name) DO UPDATE SET max_id = MAX(max_id, excluded.max_id)",
      id));
  // Its owner's worker time stays counted for fair share.
  PRISM_RETURN_IF_ERROR(RunFor(
      c,
      "INSERT INTO usage_of_deleted (owner, started_ms, ended_ms) SELECT "
      "e.owner, a.started_ms, CASE WHEN a.ended_ms > 0 THEN a.ended_ms ELSE "
      "MAX(e.updated_ms, a.started_ms) END FROM trial_attempts a JOIN trials "
      "t ON t.id = a.trial_id JOIN experiments e ON e.id = t.experiment_id "
      "WHERE t.experiment_id = ?1",
      id));
  PRISM_RETURN_IF_ERROR(
      RunFor(c,
             "UPDATE workers SET current_trial_id = 0 WHERE current_trial_id "
             "IN (SELECT id FROM trials WHERE experiment_id = ?)",
             id));
  PRISM_RETURN_IF_ERROR(RunFor(c,
                               "DELETE FROM points WHERE trial_id IN (SELECT "
                               "id FROM trials WHERE experiment_id = ?)",
                               id));
  PRISM_RETURN_IF_ERROR(
      RunFor(c,
             "DELETE FROM trial_attempts WHERE trial_id IN (SELECT id FROM "
             "trials WHERE experiment_id = ?)",
             id));
  PRISM_RETURN_IF_ERROR(
      RunFor(c, "DELETE FROM trials WHERE experiment_id = ?", id));
  PRISM_RETURN_IF_ERROR(RunFor(c, "DELETE FROM experiments WHERE id = ?", id));
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return deleted;
}

// --- trials -----------------------------------------------------------------

absl::StatusOr<TrialPage> SqliteStore::ListTrials(int64_t experiment_id,
                                                  v1::TrialState state,
                                                  int limit, int64_t after_id) {
  static const std::string list_sql = absl::StrCat(
      "SELECT ", internal::kTrialColumns,
      " FROM trials WHERE experiment_id = ?1 AND (?2 = 0 OR state = ?2) AND "
      "id > ?3 ORDER BY id LIMIT ?4");
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
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
      page.trials.push_back(internal::TrialFromRow(q));
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
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  return ReadTrial(r.get(), trial_id, /*with_attempts=*/true);
}

absl::StatusOr<v1::Trial> SqliteStore::FindBaselineTrial(int64_t experiment_id,
                                                         int64_t seed) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
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
  static const std::string sql =
      absl::StrCat("SELECT ", internal::kPointColumns,
                   " FROM points WHERE trial_id = ? ORDER BY split, step");
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare(sql.c_str()));
  q.Bind(1, trial_id);
  std::vector<v1::LossPoint> points;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    points.push_back(internal::LossPointFromRow(q));
  }
  return points;
}

absl::StatusOr<std::vector<TrialOutcome>> SqliteStore::ListFinishedOutcomes(
    int64_t experiment_id) {
  static const std::string sql = absl::StrCat(
      "SELECT ", internal::kOutcomeColumns,
      " FROM trials WHERE experiment_id = ? AND state IN (?, ?, ?) "
      "ORDER BY id");
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare(sql.c_str()));
  q.Bind(1, experiment_id);
  q.Bind(2, static_cast<int64_t>(v1::TRIAL_COMPLETED));
  q.Bind(3, static_cast<int64_t>(v1::TRIAL_DIVERGED));
  q.Bind(4, static_cast<int64_t>(v1::TRIAL_FAILED));
  std::vector<TrialOutcome> outcomes;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    PRISM_ASSIGN_OR_RETURN(TrialOutcome o, internal::OutcomeFromRow(q));
    outcomes.push_back(std::move(o));
  }
  return outcomes;
}

absl::StatusOr<std::vector<TrialKey>> SqliteStore::ListTrialKeys(
    int64_t experiment_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT schedule, seed, is_baseline, state, "
                          "target_steps FROM trials WHERE experiment_id = ? "
                          "ORDER BY id"));
  q.Bind(1, experiment_id);
  std::vector<TrialKey> keys;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    keys.push_back(TrialKey{q.Text(0), q.Int(1), q.Int(2) != 0,
                            static_cast<v1::TrialState>(q.Int(3)), q.Int(4)});
  }
  return keys;
}

absl::StatusOr<std::vector<ThroughputSample>>
SqliteStore::ListThroughputSamples(int limit) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      r->Prepare("SELECT t.experiment_id, t.tokens_per_second, "
                 "IFNULL(t.device, ''), e.spec FROM trials t JOIN experiments "
                 "e ON e.id = t.experiment_id WHERE t.state = ? AND "
                 "t.tokens_per_second > 0 ORDER BY t.id DESC LIMIT ?"));
  q.Bind(1, static_cast<int64_t>(v1::TRIAL_COMPLETED));
  q.Bind(2, static_cast<int64_t>(limit));
  std::vector<ThroughputSample> samples;
  // Each experiment's spec is parsed once, however many of its trials.
  std::map<int64_t, v1::ExperimentSpec> specs;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    ThroughputSample s;
    s.experiment_id = q.Int(0);
    s.tokens_per_second = q.Double(1);
    s.device = q.Text(2);
    auto [it, inserted] = specs.try_emplace(s.experiment_id);
    if (inserted && !it->second.ParseFromString(q.Blob(3))) {
      return absl::DataLossError(absl::StrCat("experiment ", s.experiment_id,
                                              ": stored spec does not parse"));
    }
    s.model = it->second.model();
    s.budget = it->second.budget();
    samples.push_back(std::move(s));
  }
  return samples;
}

absl::StatusOr<std::vector<AshaTrial>> SqliteStore::ListAshaTrials(
    int64_t experiment_id, const std::vector<int64_t>& rungs) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(r.get(), Transaction::Kind::kRead));
  std::vector<AshaTrial> trials;
  std::vector<int64_t> ids;
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, r->Prepare("SELECT id, schedule, seed, is_baseline, state, "
                            "target_steps FROM trials WHERE experiment_id = ? "
                            "ORDER BY id"));
    q.Bind(1, experiment_id);
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      AshaTrial t;
      ids.push_back(q.Int(0));
      t.schedule = q.Text(1);
      t.seed = q.Int(2);
      t.is_baseline = q.Int(3) != 0;
      t.at_rung = q.Int(4) == v1::TRIAL_STOPPED_AT_RUNG;
      t.ended = q.Int(4) == v1::TRIAL_FAILED ||
                q.Int(4) == v1::TRIAL_DIVERGED ||
                q.Int(4) == v1::TRIAL_CANCELLED;
      t.target_steps = q.Int(5);
      trials.push_back(std::move(t));
    }
  }
  // One indexed lookup per (trial, rung): the points key is (trial, split,
  // step).
  for (size_t i = 0; i < trials.size(); ++i) {
    for (int64_t step : rungs) {
      PRISM_ASSIGN_OR_RETURN(
          Query q, r->Prepare("SELECT loss FROM points WHERE trial_id = ? AND "
                              "split = ? AND step = ?"));
      q.Bind(1, ids[i]);
      q.Bind(2, static_cast<int64_t>(v1::SPLIT_VAL));
      q.Bind(3, step);
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (row) trials[i].val_loss[step] = q.Double(0);
    }
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return trials;
}

absl::StatusOr<ExtendedExperiment> SqliteStore::ExtendExperiment(
    const ExperimentExtension& extension) {
  absl::MutexLock lock(&write_mu_);
  return internal::ExtendExperiment(writer_.get(), extension);
}

absl::StatusOr<SeedRoundResult> SqliteStore::ApplySeedRound(
    const SeedRound& round) {
  absl::MutexLock lock(&write_mu_);
  return internal::ApplySeedRound(writer_.get(), round);
}

absl::StatusOr<LastStored> SqliteStore::LastStoredSteps(int64_t trial_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
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

absl::StatusOr<int64_t> SqliteStore::CountFinished(int64_t experiment_id) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT COUNT(*) FROM trials WHERE experiment_id = ? "
                          "AND state IN (?, ?, ?)"));
  q.Bind(1, experiment_id);
  q.Bind(2, static_cast<int64_t>(v1::TRIAL_COMPLETED));
  q.Bind(3, static_cast<int64_t>(v1::TRIAL_DIVERGED));
  q.Bind(4, static_cast<int64_t>(v1::TRIAL_FAILED));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

absl::StatusOr<std::map<v1::TrialState, int64_t>>
SqliteStore::CountTrialsByState() {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
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
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
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

absl::StatusOr<std::vector<UsageSpan>> SqliteStore::ListUsageSpans(
    int64_t ended_since_ms) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  // Three arms so each uses an index: the open attempts of live trials, the
  // attempts that ended recently (trial_attempts_by_ended), and those of
  // deleted experiments (usage_of_deleted_by_ended).
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      r->Prepare("SELECT e.owner, a.started_ms, 0 FROM trials t JOIN "
                 "trial_attempts a ON a.trial_id = t.id AND a.attempt = "
                 "t.attempt JOIN experiments e ON e.id = t.experiment_id "
                 "WHERE t.state IN (?1, ?2) AND a.ended_ms = 0 "
                 "UNION ALL SELECT e.owner, a.started_ms, a.ended_ms FROM "
                 "trial_attempts a JOIN trials t ON t.id = a.trial_id JOIN "
                 "experiments e ON e.id = t.experiment_id WHERE a.ended_ms "
                 ">= ?3 AND a.ended_ms > 0 UNION ALL SELECT owner, "
                 "started_ms, ended_ms FROM usage_of_deleted WHERE ended_ms "
                 ">= ?3"));
  q.Bind(1, kLeased);
  q.Bind(2, kRunning);
  q.Bind(3, ended_since_ms);
  std::vector<UsageSpan> spans;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    spans.push_back(UsageSpan{q.Text(0), q.Int(1), q.Int(2)});
  }
  return spans;
}

absl::StatusOr<int64_t> SqliteStore::CountQueuedTrialsOf(
    const std::string& owner) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT COUNT(*) FROM trials t JOIN experiments e "
                          "ON e.id = t.experiment_id WHERE e.owner = ? AND "
                          "e.state IN (?, ?) AND t.state = ?"));
  q.BindText(1, owner);
  q.Bind(2, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
  q.Bind(3, static_cast<int64_t>(v1::EXPERIMENT_PAUSED));
  q.Bind(4, kQueued);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

absl::Status SqliteStore::SetUserPolicy(const std::string& user,
                                        const UserPolicy& policy,
                                        int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q,
        c->Prepare("INSERT INTO users (name, created_ms, share, max_running, "
                   "max_queued, max_active) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                   "ON CONFLICT (name) DO UPDATE SET share = ?3, "
                   "max_running = ?4, max_queued = ?5, max_active = ?6"));
    q.BindText(1, user);
    q.Bind(2, now_ms);
    q.Bind(3, policy.share);
    q.Bind(4, static_cast<int64_t>(policy.max_running));
    q.Bind(5, static_cast<int64_t>(policy.max_queued));
    q.Bind(6, static_cast<int64_t>(policy.max_active));
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  return txn.Commit();
}

absl::StatusOr<std::map<std::string, UserPolicy>>
SqliteStore::ListUserPolicies() {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT name, share, max_running, max_queued, "
                          "max_active FROM users"));
  std::map<std::string, UserPolicy> policies;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    policies[q.Text(0)] =
        UserPolicy{q.Double(1), static_cast<int>(q.Int(2)),
                   static_cast<int>(q.Int(3)), static_cast<int>(q.Int(4))};
  }
  return policies;
}

absl::StatusOr<std::map<std::string, int>>
SqliteStore::CountLiveTrialsByUser() {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
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
  return internal::LeaseNextTrial(writer_.get(), experiment_id, worker_id,
                                  now_ms, deadline_ms);
}

absl::StatusOr<std::optional<v1::Trial>> SqliteStore::RedeliverLease(
    const std::string& worker_id, int64_t now_ms, int64_t deadline_ms) {
  absl::MutexLock lock(&write_mu_);
  return internal::RedeliverLease(writer_.get(), worker_id, now_ms,
                                  deadline_ms);
}

absl::StatusOr<HeartbeatResult> SqliteStore::Heartbeat(const AttemptRef& ref,
                                                       int64_t step,
                                                       int64_t now_ms,
                                                       int64_t deadline_ms) {
  absl::MutexLock lock(&write_mu_);
  return internal::Heartbeat(writer_.get(), ref, step, now_ms, deadline_ms);
}

absl::StatusOr<int64_t> SqliteStore::StartAttempt(const AttemptRef& ref,
                                                  int64_t resumed_from_step,
                                                  int64_t now_ms,
                                                  int64_t deadline_ms) {
  absl::MutexLock lock(&write_mu_);
  return internal::StartAttempt(writer_.get(), ref, resumed_from_step, now_ms,
                                deadline_ms);
}

absl::StatusOr<std::vector<ReportOutcome>> SqliteStore::WriteReports(
    const std::vector<const ReportWrite*>& reports) {
  absl::MutexLock lock(&write_mu_);
  return internal::WriteReports(writer_.get(), reports);
}

absl::StatusOr<v1::Trial> SqliteStore::CompleteTrial(
    const AttemptRef& ref, const v1::TrialMetrics& metrics,
    const std::vector<v1::LossPoint>& points, int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  return internal::CompleteTrial(writer_.get(), ref, metrics, points, now_ms);
}

absl::StatusOr<v1::Trial> SqliteStore::FailTrial(const AttemptRef& ref,
                                                 const std::string& message,
                                                 bool retryable,
                                                 int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  return internal::FailTrial(writer_.get(), ref, message, retryable, now_ms);
}

absl::StatusOr<v1::Trial> SqliteStore::ReleaseTrial(const AttemptRef& ref,
                                                    const std::string& message,
                                                    int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  return internal::ReleaseTrial(writer_.get(), ref, message, now_ms);
}

absl::StatusOr<std::vector<ExpiredLease>> SqliteStore::ExpireLeases(
    int64_t now_ms, const std::function<bool()>& proceed) {
  absl::MutexLock lock(&write_mu_);
  if (proceed && !proceed()) return std::vector<ExpiredLease>{};
  return internal::ExpireLeases(writer_.get(), now_ms);
}

absl::Status SqliteStore::ProbeWrite() {
  absl::MutexLock lock(&write_mu_);
  Connection* c = writer_.get();
  PRISM_ASSIGN_OR_RETURN(Transaction txn,
                         Transaction::Begin(c, Transaction::Kind::kWrite));
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c->Prepare("UPDATE schema_migrations SET name = name WHERE "
                            "version = (SELECT MAX(version) FROM "
                            "schema_migrations)"));
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  return txn.Commit();
}

absl::StatusOr<int> SqliteStore::ExtendLiveLeases(int64_t deadline_ms) {
  absl::MutexLock lock(&write_mu_);
  return internal::ExtendLiveLeases(writer_.get(), deadline_ms);
}

absl::StatusOr<int64_t> SqliteStore::CountQueued() {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT COUNT(*) FROM trials t JOIN experiments e ON "
                          "e.id = t.experiment_id WHERE t.state = ? AND "
                          "e.state = ?"));
  q.Bind(1, kQueued);
  q.Bind(2, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

absl::StatusOr<int64_t> SqliteStore::CountActiveExperiments(
    const std::string& owner) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT COUNT(*) FROM experiments WHERE owner = ? "
                          "AND state IN (?, ?)"));
  q.BindText(1, owner);
  q.Bind(2, static_cast<int64_t>(v1::EXPERIMENT_ACTIVE));
  q.Bind(3, static_cast<int64_t>(v1::EXPERIMENT_PAUSED));
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

// --- workers ----------------------------------------------------------------

absl::StatusOr<v1::Worker> SqliteStore::UpsertWorker(const v1::Worker& w,
                                                     int64_t now_ms,
                                                     bool take_over) {
  static const std::string select_sql = absl::StrCat(
      "SELECT ", internal::kWorkerColumns, " FROM workers WHERE id = ?");
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
                   "stopped_ms = 0 WHERE workers.user = excluded.user OR ?7"));
    q.BindText(1, w.id());
    q.BindText(2, w.host());
    q.BindText(3, w.device());
    q.Bind(4, static_cast<int64_t>(w.threads()));
    q.BindText(5, w.user());
    q.Bind(6, now_ms);
    q.Bind(7, int64_t{take_over ? 1 : 0});
    PRISM_RETURN_IF_ERROR(q.Run());
  }
  v1::Worker stored;
  {
    PRISM_ASSIGN_OR_RETURN(Query q, c->Prepare(select_sql.c_str()));
    q.BindText(1, w.id());
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return absl::InternalError("worker vanished after upsert");
    stored = internal::WorkerFromRow(q);
  }
  if (stored.user() != w.user()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "worker '", w.id(), "' belongs to user '", stored.user(), "'"));
  }
  PRISM_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

absl::StatusOr<v1::Worker> SqliteStore::GetWorker(const std::string& id) {
  static const std::string sql = absl::StrCat(
      "SELECT ", internal::kWorkerColumns, " FROM workers WHERE id = ?");
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare(sql.c_str()));
  q.BindText(1, id);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row)
    return absl::NotFoundError(absl::StrCat("worker '", id, "' not found"));
  return internal::WorkerFromRow(q);
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
  static const std::string sql = absl::StrCat(
      "SELECT ", internal::kWorkerColumns, " FROM workers ORDER BY id");
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare(sql.c_str()));
  std::vector<v1::Worker> workers;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    workers.push_back(internal::WorkerFromRow(q));
  }
  return workers;
}

absl::StatusOr<std::string> SqliteStore::ScalerTag(const std::string& backend,
                                                   const std::string& proposed,
                                                   int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  // One statement: the stored tag, or `proposed` once stored.
  PRISM_ASSIGN_OR_RETURN(
      Query q, writer_->Prepare("INSERT INTO scalers (backend, tag, "
                                "created_ms) VALUES (?, ?, ?) ON CONFLICT "
                                "(backend) DO UPDATE SET tag = scalers.tag "
                                "RETURNING tag"));
  q.BindText(1, backend);
  q.BindText(2, proposed);
  q.Bind(3, now_ms);
  PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::InternalError("no scaler tag after its upsert");
  return q.Text(0);
}

absl::Status SqliteStore::RecordScalerJob(const std::string& backend,
                                          const std::string& job_id,
                                          int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  PRISM_ASSIGN_OR_RETURN(
      Query q,
      writer_->Prepare("INSERT INTO scaler_jobs (backend, job_id, "
                       "recorded_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"));
  q.BindText(1, backend);
  q.BindText(2, job_id);
  q.Bind(3, now_ms);
  return q.Run();
}

absl::Status SqliteStore::EndScalerJob(const std::string& backend,
                                       const std::string& job_id,
                                       int64_t now_ms) {
  absl::MutexLock lock(&write_mu_);
  PRISM_ASSIGN_OR_RETURN(
      Query q, writer_->Prepare("UPDATE scaler_jobs SET ended_ms = ? WHERE "
                                "backend = ? AND job_id = ? AND ended_ms = 0"));
  q.Bind(1, now_ms);
  q.BindText(2, backend);
  q.BindText(3, job_id);
  return q.Run();
}

absl::StatusOr<std::vector<std::string>> SqliteStore::ListOpenScalerJobs(
    const std::string& backend) {
  PRISM_ASSIGN_OR_RETURN(Reader r, readers_->Acquire());
  PRISM_ASSIGN_OR_RETURN(
      Query q, r->Prepare("SELECT job_id FROM scaler_jobs WHERE backend = ? "
                          "AND ended_ms = 0 ORDER BY job_id"));
  q.BindText(1, backend);
  std::vector<std::string> ids;
  while (true) {
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    ids.push_back(q.Text(0));
  }
  return ids;
}

}  // namespace prism::storage
