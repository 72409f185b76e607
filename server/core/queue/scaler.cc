#include "server/core/queue/scaler.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "server/core/auth/auth.h"
#include "server/core/queue/queue.h"

namespace prism::server {

absl::StatusOr<QueueSnapshot> SnapshotOf(QueueManager* queue) {
  QueueSnapshot snapshot;
  PRISM_ASSIGN_OR_RETURN(snapshot.waiting, queue->CountQueued());
  PRISM_ASSIGN_OR_RETURN(v1::ListWorkersResponse workers, queue->ListWorkers());
  for (const v1::Worker& w : workers.workers()) {
    snapshot.workers[w.id()] = w.state();
  }
  return snapshot;
}

absl::Status ValidateScalerOptions(const ScalerOptions& o) {
  if (o.max_workers < 1) {
    return absl::InvalidArgumentError("--max-workers must be at least 1");
  }
  if (o.interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--scale-interval-seconds must be positive");
  }
  if (o.idle_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--scale-idle-seconds must not be negative");
  }
  return absl::OkStatus();
}

Scaler::Scaler(const ScalerOptions& options, JobBackend* backend,
               storage::WorkerStore* workers, SnapshotFn snapshot,
               const Clock* clock)
    : options_(options),
      backend_(backend),
      workers_(workers),
      snapshot_(std::move(snapshot)),
      clock_(clock) {}

Scaler::~Scaler() { Stop(); }

absl::Status Scaler::Init() {
  PRISM_ASSIGN_OR_RETURN(std::string fresh, GenerateToken());
  // Eight hex digits tell one database's jobs from another's on a shared
  // scheduler; the name stays short in squeue's columns.
  PRISM_ASSIGN_OR_RETURN(
      std::string tag,
      workers_->ScalerTag(backend_->name(), fresh.substr(fresh.size() - 8),
                          clock_->NowMs()));
  job_name_ = absl::StrCat("prism-worker-", tag);
  return absl::OkStatus();
}

absl::Status Scaler::Reconcile(const std::vector<BatchJob>& jobs,
                               int64_t now_ms) {
  PRISM_ASSIGN_OR_RETURN(std::vector<std::string> open,
                         workers_->ListOpenScalerJobs(backend_->name()));
  const std::set<std::string> known(open.begin(), open.end());
  std::set<std::string> listed;
  for (const BatchJob& job : jobs) {
    listed.insert(job.id);
    if (known.count(job.id) > 0) continue;
    // Submitted by an earlier run of this coordinator (or lost between its
    // sbatch and its write): ours all the same.
    PRISM_RETURN_IF_ERROR(
        workers_->RecordScalerJob(backend_->name(), job.id, now_ms));
    Log(LogLevel::kInfo, "scaler adopted worker job")
        .Kv("backend", backend_->name())
        .Kv("job", job.id);
  }
  for (const std::string& id : open) {
    if (listed.count(id) > 0) continue;
    PRISM_RETURN_IF_ERROR(workers_->EndScalerJob(backend_->name(), id, now_ms));
    idle_since_ms_.erase(id);
    Log(LogLevel::kInfo, "worker job ended")
        .Kv("backend", backend_->name())
        .Kv("job", id);
  }
  return absl::OkStatus();
}

void Scaler::Submit(int count, int64_t now_ms) {
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<std::string> id =
        backend_->Submit(job_name_, coordinator_address_);
    if (!id.ok()) {
      backoff_ = backoff_ == absl::ZeroDuration()
                     ? options_.initial_backoff
                     : std::min(2 * backoff_, options_.max_backoff);
      next_submit_ms_ = now_ms + absl::ToInt64Milliseconds(backoff_);
      Log(LogLevel::kError, "worker job submission failed; backing off")
          .Kv("backend", backend_->name())
          .Kv("retry_in", absl::FormatDuration(backoff_))
          .Kv("error", id.status().message());
      return;
    }
    backoff_ = absl::ZeroDuration();
    next_submit_ms_ = 0;
    Log(LogLevel::kInfo, "submitted worker job")
        .Kv("backend", backend_->name())
        .Kv("job", *id)
        .Kv("name", job_name_);
    if (absl::Status s =
            workers_->RecordScalerJob(backend_->name(), *id, now_ms);
        !s.ok()) {
      // The next listing adopts it.
      Log(LogLevel::kWarning, "cannot record worker job")
          .Kv("job", *id)
          .Kv("error", s.ToString());
    }
  }
}

absl::Status Scaler::Tick() {
  const int64_t now_ms = clock_->NowMs();
  PRISM_ASSIGN_OR_RETURN(std::vector<BatchJob> jobs, backend_->List(job_name_));
  PRISM_RETURN_IF_ERROR(Reconcile(jobs, now_ms));
  PRISM_ASSIGN_OR_RETURN(QueueSnapshot queue, snapshot_());

  // Spare jobs can take a waiting trial: pending ones, running ones whose
  // worker has not registered yet, and running ones whose worker is idle
  // (or lost: it holds no trial either way).
  std::vector<std::string> pending;
  std::vector<std::string> idle;
  int64_t spare = 0;
  for (const BatchJob& job : jobs) {
    if (job.state == JobState::kPending) {
      pending.push_back(job.id);
      ++spare;
    } else if (job.state == JobState::kRunning) {
      auto worker =
          queue.workers.find(absl::StrCat(backend_->name(), "-", job.id));
      if (worker == queue.workers.end()) {
        ++spare;
      } else if (worker->second == v1::WORKER_IDLE ||
                 worker->second == v1::WORKER_LOST) {
        idle.push_back(job.id);
        ++spare;
      }
    }
  }
  for (auto it = idle_since_ms_.begin(); it != idle_since_ms_.end();) {
    const bool still_idle =
        std::find(idle.begin(), idle.end(), it->first) != idle.end();
    it = still_idle ? std::next(it) : idle_since_ms_.erase(it);
  }

  if (queue.waiting > spare) {
    idle_since_ms_.clear();
    const int64_t room =
        options_.max_workers - static_cast<int64_t>(jobs.size());
    const int64_t want = std::min(queue.waiting - spare, room);
    if (want > 0 && now_ms >= next_submit_ms_) {
      Submit(static_cast<int>(want), now_ms);
    }
    return absl::OkStatus();
  }

  // Nothing waits for the surplus: the newest pending jobs go first (they
  // hold nothing), then workers idle for the grace.
  int64_t surplus = spare - queue.waiting;
  auto cancel = [&](const std::string& id, const char* why) {
    idle_since_ms_.erase(id);
    if (absl::Status s = backend_->Cancel(id); !s.ok()) {
      // The next tick lists the jobs again and decides afresh.
      Log(LogLevel::kWarning, "cannot cancel worker job")
          .Kv("backend", backend_->name())
          .Kv("job", id)
          .Kv("error", s.message());
      return;
    }
    --surplus;
    Log(LogLevel::kInfo, "cancelled worker job")
        .Kv("backend", backend_->name())
        .Kv("job", id)
        .Kv("why", why);
  };
  for (auto it = pending.rbegin(); it != pending.rend() && surplus > 0; ++it) {
    cancel(*it, "pending, nothing waits");
  }
  for (const std::string& id : idle) {
    if (surplus <= 0) break;
    const int64_t since = idle_since_ms_.emplace(id, now_ms).first->second;
    if (now_ms - since >= absl::ToInt64Milliseconds(options_.idle_grace)) {
      cancel(id, "worker idle, nothing waits");
    }
  }
  return absl::OkStatus();
}

void Scaler::Start(const std::string& coordinator_address) {
  coordinator_address_ = coordinator_address;
  thread_ = std::thread([this] {
    while (true) {
      if (absl::Status s = Tick(); !s.ok()) {
        Log(LogLevel::kWarning, "scaler tick failed")
            .Kv("backend", backend_->name())
            .Kv("error", s.ToString());
      }
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                               options_.interval)) {
        return;
      }
    }
  });
}

void Scaler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace prism::server
