#include "storage/backup.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/private_files.h"
#include "base/status_macros.h"
#include "storage/internal/sqlite.h"

namespace prism::storage {
namespace {

using internal::Connection;
using internal::Query;
using internal::SqliteError;
using internal::Transaction;

// Pages per backup step: 1 MiB at SQLite's default 4 KiB page.
constexpr int kPagesPerStep = 256;
// How long a busy or locked database may hold the copy up before it fails.
constexpr absl::Duration kBusyLimit = absl::Seconds(30);
constexpr int kBusyRetryMs = 10;
// The first bytes of every SQLite database file, NUL included.
constexpr char kSqliteHeader[] = "SQLite format 3";

// FileError is the status for errno `error` from a file operation.
absl::Status FileError(int error, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  switch (error) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    default:
      return absl::UnavailableError(message);
  }
}

// CheckSource is OK when `path` is a file that may be a SQLite database.
absl::Status CheckSource(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("backup source path is empty");
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return absl::NotFoundError(
          absl::StrCat("backup source ", path, " does not exist"));
    }
    return FileError(errno, absl::StrCat("cannot read backup source ", path));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backup source ", path, " is a directory"));
  }
  // SQLite's own answer for a foreign file is a DataLoss-like "file is not
  // a database" from deep inside the copy; say it plainly up front. (An
  // empty file is an empty database to SQLite.)
  if (st.st_size > 0) {
    char header[sizeof(kSqliteHeader)] = {};
    std::ifstream in(path, std::ios::binary);
    in.read(header, sizeof(header));
    if (std::memcmp(header, kSqliteHeader, sizeof(header)) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("backup source ", path, " is not a SQLite database"));
    }
  }
  return absl::OkStatus();
}

// CheckDest returns the directory that will hold `path`.
absl::StatusOr<std::string> CheckDest(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("backup destination path is empty");
  }
  struct stat st;
  if (path.back() == '/' ||
      (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
    return absl::InvalidArgumentError(
        absl::StrCat("backup destination ", path, " is a directory"));
  }
  if (lstat(path.c_str(), &st) == 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("backup destination ", path, " already exists"));
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(
        absl::StrCat("backup destination directory ", dir, " does not exist"));
  }
  return dir;
}

// RemoveDatabaseFiles removes `path` and the journal SQLite may leave
// beside it, ignoring files that are not there.
void RemoveDatabaseFiles(const std::string& path) {
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) {
    unlink(absl::StrCat(path, suffix).c_str());
  }
}

absl::Status SyncPath(const std::string& path, int flags) {
  const int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return FileError(errno, absl::StrCat("cannot open ", path));
  const int rc = fsync(fd);
  const int error = errno;
  close(fd);
  if (rc != 0) return FileError(error, absl::StrCat("cannot sync ", path));
  return absl::OkStatus();
}

// RenameNoReplace moves `from` to `to` unless `to` exists.
absl::Status RenameNoReplace(const std::string& from, const std::string& to) {
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(),
                RENAME_NOREPLACE) == 0) {
    return absl::OkStatus();
  }
  int error = errno;
  if (error == EINVAL || error == ENOSYS) {
    // A filesystem without RENAME_NOREPLACE: a hard link refuses to replace
    // as well, and the caller removes `from`.
    if (link(from.c_str(), to.c_str()) == 0) return absl::OkStatus();
    error = errno;
  }
  if (error == EEXIST) {
    return absl::AlreadyExistsError(
        absl::StrCat("backup destination ", to, " already exists"));
  }
  return FileError(error, absl::StrCat("cannot move the backup to ", to));
}

// CopyPages copies every page of `source` (inside the caller's read
// transaction) into the database `dest`.
absl::Status CopyPages(Connection* source, sqlite3* dest,
                       const std::string& source_path) {
  sqlite3_backup* backup =
      sqlite3_backup_init(dest, "main", source->handle(), "main");
  if (backup == nullptr) {
    return SqliteError(dest, sqlite3_errcode(dest), "cannot start the backup");
  }
  int rc;
  absl::Time busy_since = absl::InfiniteFuture();
  while ((rc = sqlite3_backup_step(backup, kPagesPerStep)) != SQLITE_DONE) {
    const int primary = rc & 0xff;
    if (primary == SQLITE_OK) {
      busy_since = absl::InfiniteFuture();
    } else if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
      const absl::Time now = absl::Now();
      busy_since = std::min(busy_since, now);
      if (now - busy_since > kBusyLimit) break;
      sqlite3_sleep(kBusyRetryMs);
    } else {
      break;
    }
  }
  const int finish_rc = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    const int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
      return absl::UnavailableError(
          absl::StrCat("backup of ", source_path, ": database busy for ",
                       absl::FormatDuration(kBusyLimit)));
    }
    return SqliteError(nullptr, rc, absl::StrCat("backup of ", source_path));
  }
  if (finish_rc != SQLITE_OK) {
    return SqliteError(dest, finish_rc,
                       absl::StrCat("backup of ", source_path));
  }
  return absl::OkStatus();
}

// WriteCopy writes the snapshot of `source_path` into the existing empty
// file `temp_path` and syncs it.
absl::Status WriteCopy(const std::string& source_path,
                       const std::string& temp_path) {
  Connection::Options options;
  options.read_only = true;
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<Connection> source,
                         Connection::Open(source_path, options));
  // One read transaction from the first page to the last: the copy is the
  // snapshot of its start and never restarts, however often the writer
  // commits meanwhile.
  PRISM_ASSIGN_OR_RETURN(
      Transaction snapshot,
      Transaction::Begin(source.get(), Transaction::Kind::kRead));
  {
    PRISM_ASSIGN_OR_RETURN(
        Query q, source->Prepare("SELECT COUNT(*) FROM sqlite_master"));
    PRISM_RETURN_IF_ERROR(q.Step().status());
  }

  sqlite3* dest = nullptr;
  const int rc =
      sqlite3_open_v2(temp_path.c_str(), &dest,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> dest_owner(dest, &sqlite3_close);
  if (rc != SQLITE_OK) {
    return SqliteError(dest, rc, absl::StrCat("cannot open ", temp_path));
  }
  PRISM_RETURN_IF_ERROR(CopyPages(source.get(), dest, source_path));
  const int close_rc = sqlite3_close(dest_owner.release());
  if (close_rc != SQLITE_OK) {
    return SqliteError(nullptr, close_rc,
                       absl::StrCat("cannot close ", temp_path));
  }
  return SyncPath(temp_path, O_RDONLY);
}

}  // namespace

absl::Status BackupDatabase(const std::string& source_path,
                            const std::string& dest_path) {
  PRISM_RETURN_IF_ERROR(CheckSource(source_path));
  PRISM_ASSIGN_OR_RETURN(const std::string dir, CheckDest(dest_path));

  std::string temp_path = absl::StrCat(dest_path, ".tmp-XXXXXX");
  const int fd = mkstemp(temp_path.data());
  if (fd < 0) {
    return FileError(errno, absl::StrCat("cannot create a file in ", dir));
  }
  // The copy holds the same secrets: private, whatever the source's mode
  // or the umask.
  absl::Status made_private = SetPrivateMode(fd, temp_path);
  close(fd);
  // After the rename this finds nothing to remove at temp_path.
  absl::Cleanup remove_temp = [&temp_path] { RemoveDatabaseFiles(temp_path); };
  PRISM_RETURN_IF_ERROR(made_private);

  PRISM_RETURN_IF_ERROR(WriteCopy(source_path, temp_path));
  PRISM_RETURN_IF_ERROR(RenameNoReplace(temp_path, dest_path));
  absl::Status synced = SyncPath(dir, O_RDONLY | O_DIRECTORY);
  if (!synced.ok()) {
    // Not durable, so not done: leave nothing behind, as for any failure.
    unlink(dest_path.c_str());
    return synced;
  }
  return absl::OkStatus();
}

}  // namespace prism::storage
