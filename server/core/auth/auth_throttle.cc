#include "server/core/auth/auth_throttle.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace prism::server {

std::string PeerHost(absl::string_view peer) {
  absl::string_view host = peer;
  if (absl::ConsumePrefix(&host, "ipv4:")) {
    return std::string(host.substr(0, host.rfind(':')));
  }
  if (absl::ConsumePrefix(&host, "ipv6:")) {
    if (absl::ConsumePrefix(&host, "[")) {
      return std::string(host.substr(0, host.find(']')));
    }
    return std::string(host);
  }
  return std::string(peer);
}

AuthThrottle::AuthThrottle(const Clock* clock, AuthThrottleOptions options)
    : clock_(clock), options_(options) {}

absl::Status AuthThrottle::Check(absl::string_view peer) {
  if (peer.empty() || options_.max_failures <= 0) return absl::OkStatus();
  const int64_t now_ms = clock_->NowMs();
  absl::MutexLock lock(&mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return absl::OkStatus();
  const int64_t end_ms = it->second.start_ms + options_.window_ms;
  if (now_ms >= end_ms) {
    peers_.erase(it);
    return absl::OkStatus();
  }
  if (it->second.failures < options_.max_failures) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("too many failed authentications from ", peer, " (",
                   options_.max_failures, " in ", options_.window_ms / 1000,
                   " s); try again in ", (end_ms - now_ms + 999) / 1000, " s"));
}

void AuthThrottle::RecordFailure(absl::string_view peer) {
  if (peer.empty() || options_.max_failures <= 0) return;
  const int64_t now_ms = clock_->NowMs();
  absl::MutexLock lock(&mu_);
  auto it = peers_.find(peer);
  if (it != peers_.end() &&
      now_ms >= it->second.start_ms + options_.window_ms) {
    peers_.erase(it);
    it = peers_.end();
  }
  if (it == peers_.end()) {
    if (static_cast<int>(peers_.size()) >= options_.max_peers) {
      MakeRoom(now_ms);
    }
    it = peers_.emplace(std::string(peer), Window{now_ms, 0}).first;
  }
  ++it->second.failures;
}

int AuthThrottle::tracked_peers() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(peers_.size());
}

void AuthThrottle::MakeRoom(int64_t now_ms) {
  absl::erase_if(peers_, [&](const auto& entry) {
    return now_ms >= entry.second.start_ms + options_.window_ms;
  });
  if (peers_.empty() || static_cast<int>(peers_.size()) < options_.max_peers) {
    return;
  }
  auto oldest = peers_.begin();
  for (auto it = peers_.begin(); it != peers_.end(); ++it) {
    if (it->second.start_ms < oldest->second.start_ms) oldest = it;
  }
  peers_.erase(oldest);
}

}  // namespace prism::server
