#include "server/core/queue/ingest.h"

#include <utility>
#include <vector>

#include "base/failpoint.h"
#include "base/log.h"

namespace prism::server {

IngestWriter::IngestWriter(storage::CurveStore* curves, IngestOptions options)
    : curves_(curves), options_(options), thread_([this] { Run(); }) {}

IngestWriter::~IngestWriter() { Shutdown(); }

void IngestWriter::Enqueue(storage::ReportWrite write, Done done) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back(Pending{std::move(write), std::move(done)});
      return;
    }
  }
  storage::ReportOutcome outcome;
  outcome.status = absl::UnavailableError("the coordinator is shutting down");
  done(outcome);
}

void IngestWriter::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

IngestStats IngestWriter::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

bool IngestWriter::HasWorkOrStopping() const {
  return !queue_.empty() || stopping_;
}

void IngestWriter::Run() {
  std::vector<Pending> batch;
  std::vector<const storage::ReportWrite*> writes;
  while (true) {
    batch.clear();
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &IngestWriter::HasWorkOrStopping));
      if (queue_.empty()) return;  // stopping, and drained
      int64_t points = 0;
      while (
          !queue_.empty() &&
          static_cast<int>(batch.size()) < options_.max_batch_reports &&
          (batch.empty() ||
           points + static_cast<int64_t>(queue_.front().write.points.size()) <=
               options_.max_batch_points)) {
        points += static_cast<int64_t>(queue_.front().write.points.size());
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    writes.clear();
    for (const Pending& p : batch) writes.push_back(&p.write);
    absl::StatusOr<std::vector<storage::ReportOutcome>> outcomes =
        curves_->WriteReports(writes);
    if (!outcomes.ok()) {
      // A storage fault (Unavailable) is logged once per change by the
      // store's observer (server/core/infra/storage_health.h), not once per
      // batch.
      Log(outcomes.status().code() == absl::StatusCode::kUnavailable
              ? LogLevel::kDebug
              : LogLevel::kError,
          "report batch failed")
          .Kv("reports", static_cast<int64_t>(batch.size()))
          .Kv("error", outcomes.status().ToString());
      storage::ReportOutcome failed;
      failed.status =
          absl::UnavailableError(std::string("could not store the report: ") +
                                 std::string(outcomes.status().message()));
      for (Pending& p : batch) p.done(failed);
      continue;
    }
    Failpoint("ingest.committed");
    IngestStats delta;
    delta.batches = 1;
    delta.reports = static_cast<int64_t>(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      delta.points_stored += (*outcomes)[i].stored;
      delta.points_duplicate += (*outcomes)[i].duplicates;
    }
    {
      absl::MutexLock lock(&mu_);
      stats_.batches += delta.batches;
      stats_.reports += delta.reports;
      stats_.points_stored += delta.points_stored;
      stats_.points_duplicate += delta.points_duplicate;
    }
    for (size_t i = 0; i < batch.size(); ++i) batch[i].done((*outcomes)[i]);
  }
}

}  // namespace prism::server
