// WorkerStore: the store's role for the registered workers and for the
// scaler's record of the worker jobs it submitted. QueueManager registers
// and heartbeats workers through it, LoadPlanContext counts them for a
// plan, and Scaler (server/core/queue/scaler.h) keeps its tag and open jobs in
// it.
//
// A write is one transaction; thread-safety and time are as storage/store.h
// says for every role.
#ifndef PRISM_STORAGE_WORKER_STORE_H_
#define PRISM_STORAGE_WORKER_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "prism/v1/prism.pb.h"

namespace prism::storage {

struct WorkerUpdate {
  std::string worker_id;
  int64_t trial_id = 0;  // 0 when idle
  int64_t now_ms = 0;
  double tokens_per_second = 0.0;
};

class WorkerStore {
 public:
  virtual ~WorkerStore() = default;

  // UpsertWorker registers or re-registers a worker (keeping registered
  // time on re-registration) and returns it. The ownership check and the
  // write are one statement: PermissionDenied, with nothing changed, when
  // the id belongs to another user and `take_over` is false.
  virtual absl::StatusOr<v1::Worker> UpsertWorker(const v1::Worker& worker,
                                                  int64_t now_ms,
                                                  bool take_over) = 0;
  // GetWorker returns the stored worker; NotFound.
  virtual absl::StatusOr<v1::Worker> GetWorker(const std::string& id) = 0;
  // TouchWorker records a heartbeat (a stopped worker is running again).
  // NotFound for an unknown worker.
  virtual absl::Status TouchWorker(const WorkerUpdate& update) = 0;
  // StopWorker records that the worker process said goodbye: it holds no
  // trial and stopped_unix_ms is now_ms until it registers or heartbeats
  // again. NotFound for an unknown worker.
  virtual absl::Status StopWorker(const std::string& id, int64_t now_ms) = 0;
  // ListWorkers returns every worker (state is left for the caller to
  // derive from last_heartbeat_unix_ms and stopped_unix_ms).
  virtual absl::StatusOr<std::vector<v1::Worker>> ListWorkers() = 0;

  // --- scaler (server/core/queue/scaler.h)
  // ----------------------------------------- ScalerTag returns the tag
  // `backend`'s worker jobs carry for this database, storing `proposed` first
  // when there is none yet.
  virtual absl::StatusOr<std::string> ScalerTag(const std::string& backend,
                                                const std::string& proposed,
                                                int64_t now_ms) = 0;
  // RecordScalerJob records a job (submitted, or adopted from the
  // scheduler's listing) as open; recording an open job again changes
  // nothing.
  virtual absl::Status RecordScalerJob(const std::string& backend,
                                       const std::string& job_id,
                                       int64_t now_ms) = 0;
  // EndScalerJob records that the scheduler no longer lists the job.
  virtual absl::Status EndScalerJob(const std::string& backend,
                                    const std::string& job_id,
                                    int64_t now_ms) = 0;
  // ListOpenScalerJobs returns the ids of `backend`'s jobs not yet ended.
  virtual absl::StatusOr<std::vector<std::string>> ListOpenScalerJobs(
      const std::string& backend) = 0;
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_WORKER_STORE_H_
