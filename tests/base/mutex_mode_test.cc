#include "base/mutex_mode.h"

#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

// Takes a then b, then b then a: a lock-order cycle, but on one thread, so
// nothing waits. Abseil's detector (on in Debian's build, which keeps
// asserts) aborts at the second order; with it off this returns.
void InvertLockOrder() {
  absl::Mutex a, b;
  {
    absl::MutexLock la(&a);
    absl::MutexLock lb(&b);
  }
  {
    absl::MutexLock lb(&b);
    absl::MutexLock la(&a);
  }
}

TEST(MutexModeTest, OffUnlessTheEnvironmentAsks) {
  unsetenv("PRISM_MUTEX_DEADLOCK_DETECTION");
  EXPECT_FALSE(ApplyMutexDeadlockDetectionSetting());
  setenv("PRISM_MUTEX_DEADLOCK_DETECTION", "0", 1);
  EXPECT_FALSE(ApplyMutexDeadlockDetectionSetting());
  setenv("PRISM_MUTEX_DEADLOCK_DETECTION", "1", 1);
  EXPECT_TRUE(ApplyMutexDeadlockDetectionSetting());
  unsetenv("PRISM_MUTEX_DEADLOCK_DETECTION");
}

// Both run in a child process (the mode is process-wide), so an abort fails
// the test instead of killing the suite.
TEST(MutexModeTest, TheDetectorIsOnInThisAbseilAndTheEnvironmentKeepsIt) {
  EXPECT_DEATH(
      {
        setenv("PRISM_MUTEX_DEADLOCK_DETECTION", "1", 1);
        ApplyMutexDeadlockDetectionSetting();
        InvertLockOrder();
      },
      "Potential Mutex deadlock");
}

TEST(MutexModeTest, OffAnInvertedLockOrderDoesNotAbort) {
  EXPECT_EXIT(
      {
        unsetenv("PRISM_MUTEX_DEADLOCK_DETECTION");
        ApplyMutexDeadlockDetectionSetting();
        InvertLockOrder();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace prism
