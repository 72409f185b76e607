// AuthThrottle: failed-authentication rate limiting per peer, so a client
// cannot guess tokens at line rate over gRPC or HTTP.
//
// A peer is a client's address without its port (gRPC's "ipv4:10.0.0.7:5123"
// and HTTP's remote address both become "10.0.0.7"), so gRPC and HTTP
// failures count together and a new connection does not start afresh. A
// peer's first failure opens a window of window_ms; once max_failures
// failures fall in it, Check refuses the peer (ResourceExhausted) until the
// window ends, even with a good token. Behind a proxy every client shares
// the proxy's address: size max_failures for that.
//
// At most max_peers peers are tracked: a new peer first drops every peer
// whose window ended, then, if still full, the one whose window opened
// first. An attacker with many addresses can therefore unblock an address
// early, but never grow the map.
//
//   AuthThrottle throttle(clock, AuthThrottleOptions{});
//   PRISM_RETURN_IF_ERROR(throttle.Check(peer));
//   if (bad token) throttle.RecordFailure(peer);
//
// Thread-safety: thread-safe.
#ifndef PRISM_SERVER_CORE_AUTH_AUTH_THROTTLE_H_
#define PRISM_SERVER_CORE_AUTH_AUTH_THROTTLE_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/core/infra/clock.h"

namespace prism::server {

inline constexpr int kDefaultAuthMaxFailures = 10;
inline constexpr int64_t kDefaultAuthFailureWindowSeconds = 60;
inline constexpr int kDefaultAuthMaxPeers = 10000;

struct AuthThrottleOptions {
  int max_failures = kDefaultAuthMaxFailures;  // 0: no limit
  int64_t window_ms = kDefaultAuthFailureWindowSeconds * 1000;
  int max_peers = kDefaultAuthMaxPeers;
};

// PeerHost returns the address part of a gRPC peer string ("ipv4:1.2.3.4:5"
// -> "1.2.3.4", "ipv6:[::1]:5" -> "::1") or of an HTTP remote address
// (unchanged); other forms (unix sockets) are returned whole.
std::string PeerHost(absl::string_view peer);

class AuthThrottle {
 public:
  AuthThrottle(const Clock* clock, AuthThrottleOptions options);

  // Check returns OK when `peer` may try to authenticate, else
  // ResourceExhausted saying when it may again. An empty peer (an
  // in-process caller) is never refused.
  absl::Status Check(absl::string_view peer);
  // RecordFailure counts a failed authentication from `peer`.
  void RecordFailure(absl::string_view peer);
  // tracked_peers is how many peers are remembered (at most max_peers).
  int tracked_peers();

 private:
  struct Window {
    int64_t start_ms = 0;
    int failures = 0;
  };
  // MakeRoom evicts so one more peer fits.
  void MakeRoom(int64_t now_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  const AuthThrottleOptions options_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Window> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_AUTH_AUTH_THROTTLE_H_
