#include "model/internal/cpu_allocator.h"

#include <torch/torch.h>

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace prism::model::internal {
namespace {

class CachingCpuAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!UseCachingCpuAllocator()) GTEST_SKIP() << "not under ASan";
    ReleaseCachedCpuMemory();
  }
};

TEST_F(CachingCpuAllocatorTest, AFreedBlockServesTheNextAllocationOfItsSize) {
  const CpuCacheStats before = CachingCpuAllocatorStats();
  void* first = nullptr;
  {
    torch::Tensor t = torch::empty({1024, 257});
    first = t.data_ptr();
    EXPECT_GE(CachingCpuAllocatorStats().in_use_bytes,
              before.in_use_bytes + 1024 * 257 * 4);
  }
  EXPECT_GE(CachingCpuAllocatorStats().cached_bytes, 1024 * 257 * 4);
  torch::Tensor again = torch::empty({257, 1024});  // same bytes
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_GT(CachingCpuAllocatorStats().reused, before.reused);
}

TEST_F(CachingCpuAllocatorTest, OtherSizesGetNewMemoryAndReleaseFreesTheCache) {
  { torch::Tensor t = torch::ones({4096}); }
  const CpuCacheStats cached = CachingCpuAllocatorStats();
  ASSERT_GE(cached.cached_bytes, 4096 * 4);
  torch::Tensor other = torch::ones({4097});
  EXPECT_GT(CachingCpuAllocatorStats().allocated, cached.allocated);
  EXPECT_EQ(ReleaseCachedCpuMemory(), cached.cached_bytes);
  EXPECT_EQ(CachingCpuAllocatorStats().cached_bytes, 0);
  // Still-live tensors are untouched by the release.
  EXPECT_EQ(other.sum().item<float>(), 4097.0f);
}

TEST_F(CachingCpuAllocatorTest, ThreadsShareTheCacheAndTheValuesStayRight) {
  // Each thread frees its own blocks and takes others' back: a trainer's
  // shard helpers do both.
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([i] {
      for (int step = 0; step < 50; ++step) {
        torch::Tensor a = torch::full({64, 64}, static_cast<float>(i + step));
        torch::Tensor b = a.matmul(torch::eye(64));
        ASSERT_EQ(b[3][5].item<float>(), static_cast<float>(i + step));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const CpuCacheStats stats = CachingCpuAllocatorStats();
  EXPECT_GT(stats.reused, 0);
  EXPECT_GE(stats.cached_bytes, 64 * 64 * 4);
}

}  // namespace
}  // namespace prism::model::internal
