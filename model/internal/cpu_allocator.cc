#include "model/internal/cpu_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace prism::model::internal {
namespace {

// Cache is the allocator's state: sizes of the blocks in use, and the freed
// blocks by size.
class Cache {
 public:
  void* Take(size_t n) {
    if (n == 0) return nullptr;
    {
      absl::MutexLock lock(&mu_);
      auto it = free_.find(n);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= static_cast<int64_t>(n);
        Lend(p, n);
        ++reused_;
        return p;
      }
    }
    void* p = nullptr;
    try {
      p = c10::alloc_cpu(n);
    } catch (const c10::Error&) {
      // Out of memory with blocks of other sizes cached: free them, retry.
      if (Release() == 0) throw;
      p = c10::alloc_cpu(n);
    }
    absl::MutexLock lock(&mu_);
    Lend(p, n);
    ++allocated_;
    return p;
  }

  void Give(void* p) {
    if (p == nullptr) return;
    {
      absl::MutexLock lock(&mu_);
      auto it = in_use_.find(p);
      if (it != in_use_.end()) {
        const size_t n = it->second;
        in_use_.erase(it);
        in_use_bytes_ -= static_cast<int64_t>(n);
        if (cached_bytes_ + static_cast<int64_t>(n) <= kMaxCachedCpuBytes) {
          free_[n].push_back(p);
          cached_bytes_ += static_cast<int64_t>(n);
          return;
        }
      }
    }
    c10::free_cpu(p);
  }

  int64_t Release() {
    std::unordered_map<size_t, std::vector<void*>> blocks;
    int64_t bytes = 0;
    {
      absl::MutexLock lock(&mu_);
      blocks.swap(free_);
      bytes = cached_bytes_;
      cached_bytes_ = 0;
    }
    for (auto& [size, list] : blocks) {
      for (void* p : list) c10::free_cpu(p);
    }
    return bytes;
  }

  CpuCacheStats Stats() {
    absl::MutexLock lock(&mu_);
    return {in_use_bytes_, cached_bytes_, reused_, allocated_};
  }

 private:
  // Lend records block p of n bytes as handed out.
  void Lend(void* p, size_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    in_use_[p] = n;
    in_use_bytes_ += static_cast<int64_t>(n);
  }

  absl::Mutex mu_;
  std::unordered_map<void*, size_t> in_use_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<size_t, std::vector<void*>> free_ ABSL_GUARDED_BY(mu_);
  int64_t in_use_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reused_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t allocated_ ABSL_GUARDED_BY(mu_) = 0;
};

// Never destroyed: tensors may be freed during static destruction.
Cache& TheCache() {
  static auto* cache = new Cache();
  return *cache;
}

void GiveBack(void* p) { TheCache().Give(p); }

class CachingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    void* p = TheCache().Take(n);
    return {p, p, &GiveBack, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &GiveBack; }
};

}  // namespace

bool UseCachingCpuAllocator() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  static const bool installed = [] {
    // c10 keeps the pointer for the life of the process.
    c10::SetCPUAllocator(new CachingCpuAllocator(), /*priority=*/1);
    return true;
  }();
  return installed;
#endif
}

int64_t ReleaseCachedCpuMemory() { return TheCache().Release(); }

CpuCacheStats CachingCpuAllocatorStats() { return TheCache().Stats(); }

}  // namespace prism::model::internal
