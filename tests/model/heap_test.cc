#include "model/internal/heap.h"

#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>

#include "gtest/gtest.h"

namespace prism::model::internal {
namespace {

// A sanitizer build (make test-asan, test-tsan) replaces malloc and mallopt.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PRISM_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PRISM_SANITIZER_MALLOC 1
#endif
#endif

#if defined(__GLIBC__)
constexpr size_t kBlockBytes = size_t{16} << 20;  // an 8 MiB tensor, doubled
constexpr size_t kPageBytes = 4096;

int64_t MinorFaults() {
  rusage usage;
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// TouchedFaults returns the minor page faults of allocating a block,
// writing every page of it and freeing it.
int64_t TouchedFaults() {
  const int64_t before = MinorFaults();
  char* block = static_cast<char*>(std::malloc(kBlockBytes));
  EXPECT_NE(block, nullptr);
  for (size_t i = 0; i < kBlockBytes; i += kPageBytes) block[i] = 1;
  // The compiler may not drop the writes: the block is read back.
  volatile char sink = block[kBlockBytes - kPageBytes];
  (void)sink;
  std::free(block);
  return MinorFaults() - before;
}

TEST(RetainFreedHeapMemoryTest, ASecondStepReusesTheFirstStepsPages) {
#ifdef PRISM_SANITIZER_MALLOC
  GTEST_SKIP() << "the sanitizer's allocator ignores glibc's settings";
#endif
  ASSERT_TRUE(RetainFreedHeapMemory());
  TouchedFaults();  // maps the pages once
  // glibc's default: the first block is mmap()ed and unmapped on free,
  // which raises the threshold to just its size, so the second comes from
  // new heap pages and all 4096 fault again.
  EXPECT_LT(TouchedFaults(),
            static_cast<int64_t>(kBlockBytes / kPageBytes / 8));
}
#else
TEST(RetainFreedHeapMemoryTest, ReportsThatItChangesNothingOutsideGlibc) {
  EXPECT_FALSE(RetainFreedHeapMemory());
}
#endif

}  // namespace
}  // namespace prism::model::internal
