// The timing contract between workers and the coordinator that no message
// carries: a worker needs it before it has reached the coordinator at all.
//
// A worker's gRPC channel retries a lost connection at least every
// kMaxReconnectBackoffMs, so it finds a restarted coordinator within about
// that long. A coordinator that starts on a database with live leases extends
// them by RestartGraceMs: a full lease, a heartbeat period and the reconnect
// bound, so a restart shorter than a lease supersedes no worker.
#ifndef PRISM_PROTO_WORKER_PROTOCOL_H_
#define PRISM_PROTO_WORKER_PROTOCOL_H_

#include <cstdint>

namespace prism::v1 {

inline constexpr int kMinReconnectBackoffMs = 100;
inline constexpr int kMaxReconnectBackoffMs = 1000;

// RestartGraceMs is how long a restarted coordinator keeps every live lease,
// counted from the moment it serves again.
inline constexpr int64_t RestartGraceMs(int lease_seconds,
                                        int heartbeat_seconds) {
  return (int64_t{lease_seconds} + heartbeat_seconds) * 1000 +
         kMaxReconnectBackoffMs;
}

}  // namespace prism::v1

#endif  // PRISM_PROTO_WORKER_PROTOCOL_H_
