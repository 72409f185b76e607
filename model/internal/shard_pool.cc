#include "model/internal/shard_pool.h"

#include <torch/torch.h>

#include <exception>
#include <functional>

#include "absl/synchronization/mutex.h"

namespace prism::model::internal {

ShardPool::ShardPool(int threads) {
  for (int shard = 1; shard < threads; ++shard) {
    helpers_.emplace_back([this, shard] { HelperLoop(shard); });
  }
}

ShardPool::~ShardPool() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& helper : helpers_) helper.join();
}

void ShardPool::HelperLoop(int shard) {
  // OpenMP's thread count is per thread: limit this one explicitly, or every
  // operator here would fork its own team on top of the other shards.
  at::set_num_threads(1);
  int64_t seen = 0;
  while (true) {
    const std::function<void(int)>* work = nullptr;
    {
      absl::MutexLock lock(&mu_);
      const auto ready = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || generation_ != seen;
      };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      seen = generation_;
      work = work_;
    }
    std::exception_ptr error;
    try {
      (*work)(shard);
    } catch (...) {
      error = std::current_exception();
    }
    absl::MutexLock lock(&mu_);
    if (error && !error_) error_ = error;
    --pending_;
  }
}

void ShardPool::Run(const std::function<void(int)>& fn) {
  if (helpers_.empty()) {
    fn(0);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    work_ = &fn;
    pending_ = static_cast<int>(helpers_.size());
    error_ = nullptr;
    ++generation_;
  }
  std::exception_ptr error;
  try {
    fn(0);
  } catch (...) {
    error = std::current_exception();
  }
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* pending) { return *pending == 0; }, &pending_));
  work_ = nullptr;
  if (!error) error = error_;
  if (error) std::rethrow_exception(error);
}

}  // namespace prism::model::internal
