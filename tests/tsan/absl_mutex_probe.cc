// absl_mutex_probe: the evidence behind tests/tsan/build_absl.sh and
// tsan.supp. Two threads bump one counter under an absl::Mutex (no race) and
// one without it (a race). Not part of the CMake build; by hand:
//
//   g++ -std=c++17 -O1 -g -fsanitize=thread tests/tsan/absl_mutex_probe.cc \
//     -o /tmp/absl_mutex_probe -labsl_synchronization
//   /tmp/absl_mutex_probe                     # Debian's Abseil: 2 races, the
//                                             # guarded counter's included
//   LD_LIBRARY_PATH=build-tsan/absl \
//   TSAN_OPTIONS=suppressions=tests/tsan/tsan.supp \
//     /tmp/absl_mutex_probe                   # 1 race: the unguarded counter
#include <thread>

#include "absl/synchronization/mutex.h"

namespace {

absl::Mutex mu;
long guarded ABSL_GUARDED_BY(mu) = 0;
long unguarded = 0;

void Bump() {
  for (int i = 0; i < 100000; ++i) {
    {
      absl::MutexLock lock(&mu);
      ++guarded;  // never a race
    }
    ++unguarded;  // the race TSan must still report
  }
}

}  // namespace

int main() {
  std::thread a(Bump);
  std::thread b(Bump);
  a.join();
  b.join();
  return 0;
}
