#include "model/internal/heap.h"

#include <climits>
#include <cstddef>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace prism::model::internal {

bool RetainFreedHeapMemory() {
#if defined(__GLIBC__)
  // Setting either value turns off glibc's dynamic threshold, which would
  // otherwise move with whatever the process freed last. The trim threshold
  // is mallopt's largest int: freed memory at the top of a heap stays.
  const bool mmap_set =
      mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapReuseLimitBytes)) == 1;
  const bool trim_set = mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
  return mmap_set && trim_set;
#else
  return false;
#endif
}

}  // namespace prism::model::internal
