// The SQLite schema as an ordered list of migrations. Migrate applies, in
// one write transaction, every migration newer than the version recorded in
// `schema_migrations` (its SQL, then its C++ step where it has one, e.g.
// v4's backfill from stored protos), recording each; running it again
// changes nothing.
//
// Thread-safety: call with exclusive use of the connection.
#ifndef PRISM_STORAGE_INTERNAL_SCHEMA_H_
#define PRISM_STORAGE_INTERNAL_SCHEMA_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/internal/sqlite.h"

namespace prism::storage::internal {

// kNextExperimentId and kNextTrialId are SQL expressions for a new row's id:
// above every stored row's and every deleted one's (retired_ids, v13), so an
// id is never given twice.
inline constexpr char kNextExperimentId[] =
    "(MAX(COALESCE((SELECT MAX(id) FROM experiments), 0), COALESCE((SELECT "
    "max_id FROM retired_ids WHERE name = 'experiments'), 0)) + 1)";
inline constexpr char kNextTrialId[] =
    "(MAX(COALESCE((SELECT MAX(id) FROM trials), 0), COALESCE((SELECT max_id "
    "FROM retired_ids WHERE name = 'trials'), 0)) + 1)";

// Migrate brings the database to `target_version`. FailedPrecondition when
// the file records a newer version than target (a newer binary wrote it);
// the SQLite error otherwise, with nothing applied.
absl::Status Migrate(Connection* conn, int target_version);

// SchemaVersion returns the highest applied version (0 for a new file).
absl::StatusOr<int> SchemaVersion(Connection* conn);

}  // namespace prism::storage::internal

#endif  // PRISM_STORAGE_INTERNAL_SCHEMA_H_
