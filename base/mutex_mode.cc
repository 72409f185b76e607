#include "base/mutex_mode.h"

#include <cstdlib>
#include <cstring>

#include "absl/synchronization/mutex.h"

namespace prism {

bool ApplyMutexDeadlockDetectionSetting() {
  const char* value = std::getenv("PRISM_MUTEX_DEADLOCK_DETECTION");
  const bool on = value != nullptr && std::strcmp(value, "1") == 0;
  absl::SetMutexDeadlockDetectionMode(on ? absl::OnDeadlockCycle::kAbort
                                         : absl::OnDeadlockCycle::kIgnore);
  return on;
}

}  // namespace prism
