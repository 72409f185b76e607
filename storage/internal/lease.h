// The lease state machine on the writer connection: a queued trial is leased
// to a worker (LEASED, attempt + 1), runs (RUNNING, on its first heartbeat,
// Start or report), and ends completed or diverged, failed (requeued while
// attempts remain), released (requeued, not counted as a failure) or expired
// (treated as a failure). An experiment ends done when its last trial
// finishes, or, under a seeds policy, when ApplySeedRound adds no trial to a
// drained queue. Every transition after the lease is a
// compare-and-set on (trial, attempt, worker): a caller that no longer holds
// the lease gets FailedPrecondition and nothing is written.
//
// Each function is the body of the SqliteStore method of the same name (see
// store.h for the contract) and runs as one write transaction on `c`, the
// writer connection.
//
// Thread-safety: the caller must have exclusive use of `c`.
#ifndef PRISM_STORAGE_INTERNAL_LEASE_H_
#define PRISM_STORAGE_INTERNAL_LEASE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "prism/v1/prism.pb.h"
#include "storage/internal/sqlite.h"
#include "storage/store.h"

namespace prism::storage::internal {

absl::StatusOr<std::optional<v1::Trial>> LeaseNextTrial(
    Connection* c, int64_t experiment_id, const std::string& worker_id,
    int64_t now_ms, int64_t deadline_ms);

absl::StatusOr<std::optional<v1::Trial>> RedeliverLease(
    Connection* c, const std::string& worker_id, int64_t now_ms,
    int64_t deadline_ms);

absl::StatusOr<HeartbeatResult> Heartbeat(Connection* c, const AttemptRef& ref,
                                          int64_t step, int64_t now_ms,
                                          int64_t deadline_ms);

absl::StatusOr<int64_t> StartAttempt(Connection* c, const AttemptRef& ref,
                                     int64_t resumed_from_step, int64_t now_ms,
                                     int64_t deadline_ms);

absl::StatusOr<std::vector<ReportOutcome>> WriteReports(
    Connection* c, const std::vector<const ReportWrite*>& reports);

absl::StatusOr<v1::Trial> CompleteTrial(
    Connection* c, const AttemptRef& ref, const v1::TrialMetrics& metrics,
    const std::vector<v1::LossPoint>& points, int64_t now_ms);

absl::StatusOr<v1::Trial> FailTrial(Connection* c, const AttemptRef& ref,
                                    const std::string& message, bool retryable,
                                    int64_t now_ms);

absl::StatusOr<v1::Trial> ReleaseTrial(Connection* c, const AttemptRef& ref,
                                       const std::string& message,
                                       int64_t now_ms);

absl::StatusOr<std::vector<ExpiredLease>> ExpireLeases(Connection* c,
                                                       int64_t now_ms);

absl::StatusOr<ExtendedExperiment> ExtendExperiment(
    Connection* c, const ExperimentExtension& extension);
absl::StatusOr<SeedRoundResult> ApplySeedRound(Connection* c,
                                               const SeedRound& round);

absl::StatusOr<int> ExtendLiveLeases(Connection* c, int64_t deadline_ms);

}  // namespace prism::storage::internal

#endif  // PRISM_STORAGE_INTERNAL_LEASE_H_
