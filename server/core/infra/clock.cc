#include "server/core/infra/clock.h"

#include <chrono>
#include <utility>

namespace prism::server {
namespace {

class AnchoredClock final : public Clock {
 public:
  AnchoredClock(std::function<int64_t()> wall_ms,
                std::function<int64_t()> steady_ms)
      : wall_ms_(std::move(wall_ms)),
        steady_ms_(std::move(steady_ms)),
        wall_at_start_(wall_ms_()),
        steady_at_start_(steady_ms_()) {}
  int64_t NowMs() const override { return wall_ms_(); }
  int64_t LeaseMs() const override {
    return wall_at_start_ + (steady_ms_() - steady_at_start_);
  }

 private:
  const std::function<int64_t()> wall_ms_;
  const std::function<int64_t()> steady_ms_;
  const int64_t wall_at_start_;
  const int64_t steady_at_start_;
};

template <typename C>
int64_t MillisecondsOf() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             C::now().time_since_epoch())
      .count();
}

}  // namespace

std::unique_ptr<Clock> MakeAnchoredClock(std::function<int64_t()> wall_ms,
                                         std::function<int64_t()> steady_ms) {
  return std::make_unique<AnchoredClock>(std::move(wall_ms),
                                         std::move(steady_ms));
}

const Clock* SystemClock() {
  static const Clock* clock =
      MakeAnchoredClock(MillisecondsOf<std::chrono::system_clock>,
                        MillisecondsOf<std::chrono::steady_clock>)
          .release();
  return clock;
}

}  // namespace prism::server
