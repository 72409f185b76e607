// A caching CPU allocator for LibTorch (private to model/; torch-free
// header).
//
// A training step allocates the same activation and gradient tensors every
// step and frees them all by its end. RetainFreedHeapMemory (heap.h) makes
// glibc's malloc keep such memory, but only in the main thread's arena: in
// the arena of any other thread, a 64 MiB heap that becomes empty is
// unmapped whatever mallopt says, and the next step faults in fresh zeroed
// pages. A worker trains on a thread of its own and shard helpers are
// threads too, so that was every trial: `train_bench --interleave` (each
// schedule on its own thread) took 4.6x the page faults, at about 0.6x the
// tokens/s, of the same run with every thread on the main arena
// (MALLOC_ARENA_MAX=1; bench/RESULTS.md).
//
// UseCachingCpuAllocator installs, for the life of the process, an
// allocator for LibTorch's CPU tensors that keeps each freed block and
// hands it out again for the next allocation of exactly that size, from any
// thread. The blocks themselves come from c10::alloc_cpu (64-byte aligned),
// as with LibTorch's default allocator; the memory is uninitialized either
// way, so results do not change.
//
//   UseCachingCpuAllocator();        // before the first training step
//   ... train ...
//   ReleaseCachedCpuMemory();        // after a run: free what is cached
//
// Thread-safety: every function may be called from any thread.
#ifndef PRISM_MODEL_INTERNAL_CPU_ALLOCATOR_H_
#define PRISM_MODEL_INTERNAL_CPU_ALLOCATOR_H_

#include <cstdint>

namespace prism::model::internal {

// kMaxCachedCpuBytes bounds the freed memory the cache keeps: a block freed
// while the cache holds this much goes back to the C library instead.
inline constexpr int64_t kMaxCachedCpuBytes = int64_t{16} << 30;

// UseCachingCpuAllocator makes the caching allocator LibTorch's CPU
// allocator (c10::SetCPUAllocator); later calls do nothing. Tensors
// allocated before keep their own deleter. Returns whether it is in use:
// not under AddressSanitizer, whose use-after-free checks a cache would
// hide.
bool UseCachingCpuAllocator();

// ReleaseCachedCpuMemory frees every cached (not in use) block and returns
// how many bytes that was.
int64_t ReleaseCachedCpuMemory();

struct CpuCacheStats {
  int64_t in_use_bytes = 0;  // handed out, not yet freed
  int64_t cached_bytes = 0;  // freed, kept for reuse
  int64_t reused = 0;        // allocations served from the cache
  int64_t allocated = 0;     // allocations that needed new memory
};
CpuCacheStats CachingCpuAllocatorStats();

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_CPU_ALLOCATOR_H_
