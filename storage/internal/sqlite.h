// A thin RAII layer over the SQLite C API for storage/: a Connection owns one
// sqlite3 handle and a cache of its prepared statements, and a Query is a
// borrowed, bound statement that resets itself when it goes out of scope, so
// every statement is prepared once per connection and reused.
//
//   absl::StatusOr<std::unique_ptr<Connection>> c = Connection::Open(path, {});
//   PRISM_ASSIGN_OR_RETURN(Query q, (*c)->Prepare("SELECT x FROM t WHERE
//   id=?")); q.Bind(1, id); PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
//
// Thread-safety: a Connection (and its Queries) must be used by one thread at
// a time; the handle is opened in SQLite's multi-thread mode (no internal
// mutex), which is why storage keeps one connection per thread.
#ifndef PRISM_STORAGE_INTERNAL_SQLITE_H_
#define PRISM_STORAGE_INTERNAL_SQLITE_H_

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "storage/write_observer.h"

namespace prism::storage::internal {

// Query is a prepared statement checked out of a Connection's cache. Columns
// and parameters are numbered as SQLite numbers them (parameters from 1,
// columns from 0). Destroying it resets the statement and clears bindings.
class Query {
 public:
  Query(Query&& other) noexcept;
  Query& operator=(Query&&) = delete;
  ~Query();

  void Bind(int index, int64_t value);
  void Bind(int index, double value);
  void BindText(int index, absl::string_view value);
  void BindBlob(int index, absl::string_view value);
  void BindNull(int index);

  // Step returns true when a row is available, false when done; an error
  // status (with SQLite's message) otherwise.
  absl::StatusOr<bool> Step();
  // Run steps a statement that returns no rows and resets it (bindings are
  // kept), so a loop may rebind and Run again.
  absl::Status Run();

  int64_t Int(int column) const;
  double Double(int column) const;
  std::string Text(int column) const;
  std::string Blob(int column) const;
  // BlobView is the column's bytes without a copy, valid until the next
  // Step or the Query's end.
  absl::string_view BlobView(int column) const;
  bool IsNull(int column) const;

 private:
  friend class Connection;
  Query(sqlite3* db, sqlite3_stmt* stmt, WriteObserver* observer)
      : db_(db), stmt_(stmt), observer_(observer) {}
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  WriteObserver* observer_;
};

class Connection {
 public:
  struct Options {
    bool read_only = false;
    int busy_timeout_ms = 5000;
  };

  // Open opens (creating unless read_only) the database at `path` and sets
  // WAL, synchronous=NORMAL, foreign keys and the busy timeout. Returns
  // Unavailable with SQLite's message when the file cannot be opened.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(
      const std::string& path, const Options& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Exec runs one or more statements without parameters.
  absl::Status Exec(const char* sql);
  // Prepare returns the cached statement for `sql`, preparing it on first
  // use. Internal on a malformed statement (a programming error).
  absl::StatusOr<Query> Prepare(const char* sql);

  // set_write_observer makes this connection report its failed statements
  // that are storage faults, and its committed write transactions, to
  // `observer` (storage/write_observer.h); nullptr stops it.
  void set_write_observer(WriteObserver* observer) { observer_ = observer; }
  WriteObserver* write_observer() const { return observer_; }

  // handle is the sqlite3 handle, for the C API this layer does not wrap
  // (online backup). It stays owned by the Connection.
  sqlite3* handle() const { return db_; }
  int64_t changes() const { return sqlite3_changes64(db_); }
  int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  WriteObserver* observer_ = nullptr;
  std::map<std::string, sqlite3_stmt*> statements_;
};

// Transaction runs BEGIN on construction (IMMEDIATE for writers, so the write
// lock is taken up front and never upgraded mid-transaction) and ROLLBACK in
// the destructor unless Commit succeeded.
class Transaction {
 public:
  enum class Kind { kRead, kWrite };
  // Begin starts a transaction on `conn`; the error when BEGIN fails.
  static absl::StatusOr<Transaction> Begin(Connection* conn, Kind kind);
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  // Commit returns OK once the transaction is durable (per the connection's
  // synchronous setting), or the COMMIT error (the destructor rolls back).
  // A write transaction's COMMIT first passes the stall point
  // "storage.commit" (base/failpoint.h: a slow disk, in tests only).
  absl::Status Commit();

 private:
  // EndWrite tells the observer a write transaction ended.
  void EndWrite();
  Transaction(Connection* conn, Kind kind)
      : conn_(conn),
        kind_(kind),
        begun_(absl::Now()),
        changes_at_begin_(sqlite3_total_changes64(conn->handle())) {}
  Connection* conn_;
  Kind kind_;
  absl::Time begun_;
  // A commit that changed no row wrote nothing: it proves nothing about the
  // disk, so the observer does not hear of it.
  int64_t changes_at_begin_;
};

// kSqliteCodePayload: the payload type under which SqliteError records the
// SQLite result code (decimal), read by storage::StorageFaultOf.
inline constexpr char kSqliteCodePayload[] = "prism.storage/sqlite-result";

// SqliteError returns a status for SQLite result `rc` with the handle's
// message, prefixed by `what`, carrying `rc` as a payload.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what);

// ReportFault tells `observer` (if any) about a failed SQLite call whose
// status (from SqliteError) is a storage fault (full, I/O, busy,
// read-only); other failures are not reported. Returns `status`.
absl::Status ReportFault(WriteObserver* observer, absl::Status status);

}  // namespace prism::storage::internal

#endif  // PRISM_STORAGE_INTERNAL_SQLITE_H_
