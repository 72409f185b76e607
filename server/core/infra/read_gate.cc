#include "server/core/infra/read_gate.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/log.h"

namespace prism::server {

ReadGate::ReadGate(int max_concurrent, int max_waiting, int lower_by)
    : max_concurrent_(std::max(1, max_concurrent)),
      max_waiting_(std::max(0, max_waiting)),
      lower_by_(std::clamp(lower_by, 0, 19)) {
  for (int i = 0; i < max_concurrent_; ++i) {
    lanes_.emplace_back([this, i] { Lane(i); });
  }
}

ReadGate::~ReadGate() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& lane : lanes_) lane.join();
}

int ReadGate::DefaultConcurrency() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
}

absl::Status ReadGate::Run(absl::Time deadline,
                           absl::FunctionRef<absl::Status()> fn) {
  Job job(fn);
  absl::MutexLock lock(&mu_);
  // Free lanes take from the line at once, so the line only holds reads
  // that found every lane busy.
  const int free_lanes = max_concurrent_ - running_;
  if (static_cast<int>(line_.size()) - free_lanes >= max_waiting_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the coordinator is busy: ", line_.size(),
        " expensive reads wait; limit --max-waiting-reads=", max_waiting_,
        " (retry later)"));
  }
  line_.push_back(&job);
  if (!mu_.AwaitWithDeadline(absl::Condition(&job.started), deadline)) {
    line_.erase(std::find(line_.begin(), line_.end(), &job));
    return absl::DeadlineExceededError(absl::StrCat(
        "waited too long for one of --max-concurrent-reads=", max_concurrent_,
        " (", running_, " running, ", line_.size(), " waiting)"));
  }
  // Once started it runs to the end: fn refers to this frame.
  mu_.Await(absl::Condition(&job.done));
  return job.result;
}

void ReadGate::Lane(int index) {
  pthread_setname_np(pthread_self(), absl::StrCat("read-lane-", index).c_str());
  if (lower_by_ > 0) {
    // On Linux a nice value is per thread: only this lane is lowered, from
    // the nice value it inherited from the thread that made the gate.
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    errno = 0;
    const int inherited = getpriority(PRIO_PROCESS, tid);
    const int nice = std::min(19, (errno == 0 ? inherited : 0) + lower_by_);
    if (setpriority(PRIO_PROCESS, tid, nice) != 0) {
      Log(LogLevel::kWarning, "cannot lower the read lanes' priority")
          .Kv("nice", nice)
          .Kv("error", std::strerror(errno));
    }
  }
  // The gate is destroyed with nothing in line (see the header).
  auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !line_.empty();
  };
  while (true) {
    Job* job = nullptr;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&has_work));
      if (stopping_) return;
      job = line_.front();
      line_.pop_front();
      job->started = true;
      ++running_;
    }
    absl::Status result = job->fn();
    absl::MutexLock lock(&mu_);
    --running_;
    job->result = std::move(result);
    job->done = true;
  }
}

int ReadGate::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

int ReadGate::waiting() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(line_.size());
}

}  // namespace prism::server
