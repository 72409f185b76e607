// CurveStore: the store's role for trials' loss curves, the points table:
// the group-committed reports that write them (IngestWriter,
// server/core/queue/ingest.h), a whole curve's read (ResultsManager) and its
// stored prefix, which a lease hands the worker (QueueManager). The curve
// rule that keeps a stored curve without gaps is in storage/store.h.
//
// A write is one transaction; thread-safety and time are as storage/store.h
// says for every role.
#ifndef PRISM_STORAGE_CURVE_STORE_H_
#define PRISM_STORAGE_CURVE_STORE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "prism/v1/prism.pb.h"
#include "storage/records.h"

namespace prism::storage {

// ReportWrite is one Report RPC's points; WriteReports commits many at once.
struct ReportWrite {
  AttemptRef ref;
  std::vector<v1::LossPoint> points;
  int64_t now_ms = 0;
  int64_t lease_deadline_ms = 0;  // a report renews the lease like a heartbeat
};

struct ReportOutcome {
  absl::Status status;  // FailedPrecondition for a stale attempt
  int stored = 0;
  int duplicates = 0;
  int64_t experiment_id = 0;
  bool started = false;  // this report moved the trial leased -> running
};

struct LastStored {
  int64_t train = -1;
  int64_t val = -1;
};

class CurveStore {
 public:
  virtual ~CurveStore() = default;

  // WriteReports applies every report in one transaction (group commit):
  // points INSERT OR IGNORE keyed (trial, split, step). One outcome per
  // report, in order; a stale report's outcome is FailedPrecondition, one
  // with a point outside the trial's budget (0 to total_steps)
  // InvalidArgument (none of its points stored). A non-OK return means
  // nothing was committed.
  virtual absl::StatusOr<std::vector<ReportOutcome>> WriteReports(
      const std::vector<const ReportWrite*>& reports) = 0;
  // GetPoints returns a trial's points ordered by (split, step).
  virtual absl::StatusOr<std::vector<v1::LossPoint>> GetPoints(
      int64_t trial_id) = 0;
  // LastStoredSteps returns the highest stored step of the trial's train and
  // val points (-1 for a split with none). NotFound for no such trial.
  virtual absl::StatusOr<LastStored> LastStoredSteps(int64_t trial_id) = 0;
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_CURVE_STORE_H_
