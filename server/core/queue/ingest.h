// IngestWriter: group commit for loss-point reports. Report handlers enqueue
// their points and return; one writer thread takes everything queued, commits
// it as a single transaction (Store::WriteReports) and only then runs each
// report's completion callback — so an acknowledgement always means
// committed, while the cost of a commit is shared by every report that
// arrived during the previous one.
//
//   writer.Enqueue(std::move(write), [](const storage::ReportOutcome& out) {
//     reactor->Finish(...);   // runs on the writer thread after the commit
//   });
//
// Thread-safety: Enqueue may be called from any thread. Callbacks run on the
// writer thread and must not block.
#ifndef PRISM_SERVER_CORE_QUEUE_INGEST_H_
#define PRISM_SERVER_CORE_QUEUE_INGEST_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/curve_store.h"

namespace prism::server {

struct IngestOptions {
  // Upper bounds of one transaction; a larger backlog commits in several.
  int max_batch_reports = 4096;
  int64_t max_batch_points = 200000;
};

struct IngestStats {
  int64_t batches = 0;
  int64_t reports = 0;
  int64_t points_stored = 0;
  int64_t points_duplicate = 0;
};

class IngestWriter {
 public:
  using Done = std::function<void(const storage::ReportOutcome&)>;

  IngestWriter(storage::CurveStore* curves, IngestOptions options);
  // The destructor drains the queue (as Shutdown).
  ~IngestWriter();
  IngestWriter(const IngestWriter&) = delete;
  IngestWriter& operator=(const IngestWriter&) = delete;

  // Enqueue schedules `write`; `done` runs once it is committed (or with an
  // error status if the transaction failed, or Unavailable after Shutdown).
  void Enqueue(storage::ReportWrite write, Done done);
  // Shutdown commits everything already queued and stops the thread.
  void Shutdown();
  IngestStats stats() const;

 private:
  struct Pending {
    storage::ReportWrite write;
    Done done;
  };
  void Run();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  storage::CurveStore* const curves_;
  const IngestOptions options_;
  mutable absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  IngestStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_QUEUE_INGEST_H_
