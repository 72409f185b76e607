// Backup: an online copy of a SQLite database file, taken while a
// SqliteStore keeps writing to it.
//
//   absl::Status s = storage::BackupDatabase("/data/prism.db",
//                                            "/backup/prism-2024-05-01.db");
//
// The copy is one consistent snapshot: every transaction committed before
// the call began is in it, and no part of any later one. It is read through
// a read-only connection inside one read transaction, so the writer is never
// blocked (WAL readers do not block the writer; the WAL just cannot be
// checkpointed past the snapshot until the copy ends), and copied with
// SQLite's online backup API a chunk of pages at a time. The pages go to a
// temp file in the destination's directory, which is synced and then renamed
// to the destination, so the destination never exists half-written. The
// copy is mode 0600 whatever the source's mode or the umask (it holds the
// same secrets; base/private_files.h), is in WAL mode like its source and
// opens with SqliteStore::Open.
// Reading a source that no process has open leaves its (empty) -wal and
// -shm files beside it, as any SQLite reader does.
//
// Thread-safety: any thread may call it, concurrently with a SqliteStore on
// the same source (in this process or another).
#ifndef PRISM_STORAGE_BACKUP_H_
#define PRISM_STORAGE_BACKUP_H_

#include <string>

#include "absl/status/status.h"

namespace prism::storage {

// BackupDatabase copies the database at `source_path` to the new file
// `dest_path`. OK once the copy is complete and durable at `dest_path`.
// InvalidArgument when a path is empty or names a directory, or the source
// is not a SQLite database; NotFound when the source or the destination's
// directory does not exist; AlreadyExists when `dest_path` exists (it is
// never overwritten); PermissionDenied when the destination's directory
// cannot be written; Unavailable when the source stays busy for 30 s or a
// file cannot be read or written; DataLoss when SQLite finds the source
// corrupt. On failure no file is left at or beside `dest_path`.
absl::Status BackupDatabase(const std::string& source_path,
                            const std::string& dest_path);

}  // namespace prism::storage

#endif  // PRISM_STORAGE_BACKUP_H_
