// ReconcileAfterRestart: what a coordinator start runs before it serves.
// A crash between a trial's finish and its seeds decision, or between a
// ladder's rung ending and its next rung being stored, left that reaction
// undone (the finish signal fired in the process that died); both are
// idempotent, so every open one runs again.
//
//   PRISM_RETURN_IF_ERROR(ReconcileAfterRestart(seeds, ladder, health));
#ifndef PRISM_SERVER_CORE_EXPERIMENTS_RECONCILE_H_
#define PRISM_SERVER_CORE_EXPERIMENTS_RECONCILE_H_

#include "absl/status/status.h"
#include "server/core/experiments/ladder.h"
#include "server/core/experiments/seeds.h"
#include "server/core/infra/storage_health.h"

namespace prism::server {

// ReconcileAfterRestart runs the seeds rounds and ladder advances a crash
// left undone; with writes already failing it logs and lets the coordinator
// serve, else a failure is returned.
absl::Status ReconcileAfterRestart(SeedPlanner& seeds, LadderPlanner& ladder,
                                   const StorageHealth& health);

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_EXPERIMENTS_RECONCILE_H_
