// ShardPool: a fixed set of threads that run one function per shard of a
// batch, data-parallel inside one process (private to model/).
//
// On a CPU, splitting each micro-batch across N threads that each run
// forward and backward single-threaded (LibTorch and OpenBLAS set to one
// thread) beats running every operator multi-threaded: no fork/join per
// operator, no OpenMP spin-waiting against OpenBLAS's own threads, and the
// element-wise work is parallel too. Shards combine their gradients in a
// fixed order, so results do not depend on thread timing.
//
//   ShardPool pool(2);
//   pool.Run([&](int shard) { Work(shard); });   // shard 0 on the caller
//
// Thread-safety: Run must be called from one thread at a time.
#ifndef PRISM_MODEL_INTERNAL_SHARD_POOL_H_
#define PRISM_MODEL_INTERNAL_SHARD_POOL_H_

#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace prism::model::internal {

class ShardPool {
 public:
  // ShardPool starts threads - 1 helpers; each limits LibTorch's intra-op
  // parallelism to one thread on itself.
  explicit ShardPool(int threads);
  ~ShardPool();
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  // Run calls fn(i) for every i in [0, size()) concurrently and returns when
  // all calls have returned. The first exception thrown by any call is
  // rethrown here, after every call finished.
  void Run(const std::function<void(int)>& fn);

 private:
  void HelperLoop(int shard);

  std::vector<std::thread> helpers_;
  absl::Mutex mu_;
  const std::function<void(int)>* work_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::exception_ptr error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_SHARD_POOL_H_
