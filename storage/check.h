// CheckDatabase: the invariants a Prism database must hold, checked from the
// outside. It opens the file read-only, reads everything in one read
// transaction (a consistent snapshot, safe beside a live coordinator: in WAL
// mode a reader never blocks the writer) and reports every broken rule:
//
//   * curves: each (trial, split, step) is stored once; every stored step is
//     on the trial's cadence (train every log_every, val at 0 and every
//     eval_every, both at the last step); a curve is always a prefix of the
//     order the trainer emits points in (no gap, even while running), and a
//     completed trial's curve is complete;
//   * attempts: numbered 1..attempt without holes; a leased or running trial
//     has exactly one open attempt, its current one on its worker, and no
//     other trial has any; a finished trial's last attempt ended the same way;
//   * experiments: every trial's seed has a baseline trial; a done experiment
//     has no unfinished trial, and an active or paused one has some;
//   * tokens (schema v9 on): each id is its hash's first 12 digits, and a
//     database with tokens has an admin token neither revoked nor expired.
//
//   absl::StatusOr<DatabaseCheck> check = CheckDatabase("/data/prism.db");
//   for (const std::string& p : check->problems) std::cout << p << "\n";
//
// Thread-safety: the function shares nothing; call it from any thread.
#ifndef PRISM_STORAGE_CHECK_H_
#define PRISM_STORAGE_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace prism::storage {

struct DatabaseCheck {
  int64_t experiments = 0;
  int64_t trials = 0;
  int64_t points = 0;
  // One line each, naming the experiment or trial; empty when all hold.
  std::vector<std::string> problems;
};

// CheckDatabase checks the database at `path` without changing it. Returns
// NotFound when there is no such file, FailedPrecondition when it is not a
// Prism database (no schema_migrations table), Unavailable / DataLoss when
// SQLite cannot read it.
absl::StatusOr<DatabaseCheck> CheckDatabase(const std::string& path);

}  // namespace prism::storage

#endif  // PRISM_STORAGE_CHECK_H_
