#include "server/clock.h"

#include <chrono>

namespace prism::server {
namespace {

class WallClock final : public Clock {
 public:
  int64_t NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

const Clock* SystemClock() {
  static const WallClock* clock = new WallClock();
  return clock;
}

}  // namespace prism::server
