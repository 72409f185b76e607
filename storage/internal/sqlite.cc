#include "storage/internal/sqlite.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/failpoint.h"

namespace prism::storage::internal {

namespace {

absl::Status SqliteStatus(int rc, const std::string& message) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(message);
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_READONLY:
      return absl::UnavailableError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    default:
      return absl::InternalError(message);
  }
}

// InjectedFault is the SQLite result code a test armed for every write
// (PRISM_FAULTS="storage.write=FILE", base/failpoint.h), or SQLITE_OK.
int InjectedFault() {
  const std::string fault = FaultPoint("storage.write");
  if (fault.empty()) return SQLITE_OK;
  if (fault == "read_only") return SQLITE_READONLY;
  if (fault == "disk_full") return SQLITE_FULL;
  if (fault == "busy") return SQLITE_BUSY;
  return SQLITE_IOERR;
}

}  // namespace

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  absl::Status status = SqliteStatus(
      rc,
      absl::StrCat(what, ": ",
                   db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  status.SetPayload(kSqliteCodePayload, absl::Cord(absl::StrCat(rc)));
  return status;
}

absl::Status ReportFault(WriteObserver* observer, absl::Status status) {
  if (observer == nullptr) return status;
  if (std::optional<StorageFault> fault = StorageFaultOf(status)) {
    observer->WriteFailed(*fault, status);
  }
  return status;
}

Query::Query(Query&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), observer_(other.observer_) {
  other.stmt_ = nullptr;
}

Query::~Query() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

void Query::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
}
void Query::Bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
}
void Query::BindText(int index, absl::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                    SQLITE_TRANSIENT);
}
void Query::BindBlob(int index, absl::string_view value) {
  // A zero-length blob must still bind as a blob, not NULL.
  sqlite3_bind_blob(stmt_, index, value.empty() ? "" : value.data(),
                    static_cast<int>(value.size()), SQLITE_TRANSIENT);
}
void Query::BindNull(int index) { sqlite3_bind_null(stmt_, index); }

absl::StatusOr<bool> Query::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return ReportFault(observer_, SqliteError(db_, rc, sqlite3_sql(stmt_)));
}

absl::Status Query::Run() {
  absl::StatusOr<bool> row = Step();
  sqlite3_reset(stmt_);
  return row.status();
}

int64_t Query::Int(int column) const {
  return sqlite3_column_int64(stmt_, column);
}
double Query::Double(int column) const {
  return sqlite3_column_double(stmt_, column);
}
std::string Query::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     sqlite3_column_bytes(stmt_, column));
}
std::string Query::Blob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  if (blob == nullptr) return "";
  return std::string(static_cast<const char*>(blob),
                     sqlite3_column_bytes(stmt_, column));
}
absl::string_view Query::BlobView(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  if (blob == nullptr) return absl::string_view();
  return absl::string_view(static_cast<const char*>(blob),
                           sqlite3_column_bytes(stmt_, column));
}

bool Query::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(
    const std::string& path, const Options& options) {
  sqlite3* db = nullptr;
  const int flags =
      (options.read_only ? SQLITE_OPEN_READONLY
                         : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
      SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status =
        SqliteError(db, rc, absl::StrCat("cannot open database ", path));
    sqlite3_close(db);
    return status;
  }
  std::unique_ptr<Connection> conn(new Connection(db));
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  sqlite3_extended_result_codes(db, 1);
  // WAL lets readers run beside the single writer; synchronous=NORMAL in WAL
  // mode makes every commit durable against a process crash (the promise we
  // make: nothing acknowledged is lost), syncing the WAL only at checkpoints.
  if (!options.read_only) {
    absl::Status status = conn->Exec("PRAGMA journal_mode=WAL");
    if (!status.ok()) return status;
  }
  // Memory-mapped reads skip a read() copy per page; ranking a large
  // experiment reads tens of MB of trial rows.
  absl::Status status = conn->Exec(
      "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
      "PRAGMA mmap_size=1073741824;");
  if (!status.ok()) return status;
  return conn;
}

Connection::~Connection() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

absl::Status Connection::Exec(const char* sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(
        nullptr, rc, absl::StrCat(sql, ": ", error != nullptr ? error : ""));
    sqlite3_free(error);
    return ReportFault(observer_, std::move(status));
  }
  return absl::OkStatus();
}

absl::StatusOr<Query> Connection::Prepare(const char* sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                      &stmt, nullptr);
    if (rc != SQLITE_OK) {
      absl::Status status =
          SqliteError(db_, rc, absl::StrCat("prepare '", sql, "'"));
      sqlite3_finalize(stmt);
      return status;
    }
    it = statements_.emplace(sql, stmt).first;
  }
  return Query(db_, it->second, observer_);
}

absl::StatusOr<Transaction> Transaction::Begin(Connection* conn, Kind kind) {
  if (kind == Kind::kWrite) {
    if (const int rc = InjectedFault(); rc != SQLITE_OK) {
      return ReportFault(conn->write_observer(),
                         SqliteError(nullptr, rc, "BEGIN IMMEDIATE"));
    }
  }
  absl::Status status =
      conn->Exec(kind == Kind::kWrite ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
  if (!status.ok()) return status;
  if (kind == Kind::kWrite && conn->write_observer() != nullptr) {
    conn->write_observer()->WriteBegun();
  }
  return Transaction(conn, kind);
}

Transaction::Transaction(Transaction&& other) noexcept
    : conn_(other.conn_),
      kind_(other.kind_),
      begun_(other.begun_),
      changes_at_begin_(other.changes_at_begin_) {
  other.conn_ = nullptr;
}

Transaction::~Transaction() {
  if (conn_ == nullptr) return;
  conn_->Exec("ROLLBACK").IgnoreError();
  EndWrite();
}

void Transaction::EndWrite() {
  if (kind_ == Kind::kWrite && conn_->write_observer() != nullptr) {
    conn_->write_observer()->WriteEnded();
  }
}

absl::Status Transaction::Commit() {
  if (kind_ == Kind::kWrite) StallPoint("storage.commit");
  absl::Status status = conn_->Exec("COMMIT");
  if (!status.ok()) return status;
  if (kind_ == Kind::kWrite && conn_->write_observer() != nullptr &&
      sqlite3_total_changes64(conn_->handle()) != changes_at_begin_) {
    conn_->write_observer()->WriteCommitted(absl::Now() - begun_);
  }
  EndWrite();
  conn_ = nullptr;
  return status;
}

}  // namespace prism::storage::internal
