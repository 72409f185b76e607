// Heap settings for the CPU trainer (private to model/; torch-free).
//
// A training step allocates the same few dozen activation and gradient
// tensors of 0.25-8 MiB every step and frees them all by the end of it.
// glibc's malloc serves blocks above its mmap threshold (128 KiB, raised
// step by step as such blocks are freed) with fresh mmap()s and returns
// freed memory at the top of a heap to the kernel, so every step touches
// new pages: on the 2-core VM a `small` shard step took 14,000-19,000 minor
// page faults, how many depending on what the process had allocated
// before (none once this is set).
// RetainFreedHeapMemory makes malloc keep freed blocks for reuse instead.
//
//   RetainFreedHeapMemory();  // once, before the first training step
//
// Thread-safety: may be called from any thread; it changes process-wide
// malloc settings, which only ever keep more memory mapped.
#ifndef PRISM_MODEL_INTERNAL_HEAP_H_
#define PRISM_MODEL_INTERNAL_HEAP_H_

#include <cstddef>

namespace prism::model::internal {

// kHeapReuseLimitBytes is the largest block malloc serves from (and returns
// to) its heaps after RetainFreedHeapMemory: glibc's own upper bound for the
// mmap threshold (half of a thread arena's 64 MiB heap). Larger blocks are
// still mmap()ed and unmapped when freed.
inline constexpr size_t kHeapReuseLimitBytes = size_t{32} << 20;

// RetainFreedHeapMemory fixes glibc malloc's mmap threshold at
// kHeapReuseLimitBytes and stops it from giving freed heap memory back to
// the kernel, so a training step reuses the pages the previous step freed;
// the process keeps its peak heap mapped. Returns true when the settings
// took effect, false where malloc is not glibc's (another C library, or a
// sanitizer's allocator): nothing changes there.
bool RetainFreedHeapMemory();

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_HEAP_H_
