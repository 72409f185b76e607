#include "server/core/experiments/reconcile.h"

#include "base/log.h"

namespace prism::server {

absl::Status ReconcileAfterRestart(SeedPlanner& seeds, LadderPlanner& ladder,
                                   const StorageHealth& health) {
  // A crash between a trial's finish and its seeds decision left the
  // decision undone; rounds are idempotent, so run every open one again.
  // On a filesystem that refuses writes the rounds wait for the next start
  // (or their experiment's next finished trial); the coordinator serves.
  absl::StatusOr<int> seeds_added = seeds.ReconcileAll();
  if (!seeds_added.ok()) {
    if (health.Ready().ok()) return seeds_added.status();
    Log(LogLevel::kError, "open seeds rounds not run: writes fail")
        .Kv("error", seeds_added.status().ToString());
  } else if (*seeds_added > 0) {
    Log(LogLevel::kInfo, "added seeds after start").Kv("trials", *seeds_added);
  }

  // Likewise a crash between a ladder's rung ending and the next rung being
  // stored: the advance is idempotent, so run it for every done rung.
  absl::StatusOr<int> rungs = ladder.ReconcileAll();
  if (!rungs.ok()) {
    if (health.Ready().ok()) return rungs.status();
    Log(LogLevel::kError, "open ladder advances not run: writes fail")
        .Kv("error", rungs.status().ToString());
  } else if (*rungs > 0) {
    Log(LogLevel::kInfo, "ladder rungs submitted after start")
        .Kv("rungs", *rungs);
  }
  return absl::OkStatus();
}

}  // namespace prism::server
