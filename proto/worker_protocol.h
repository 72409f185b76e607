// The timing contract between workers and the coordinator that no message
// carries: a worker needs it before it has reached the coordinator at all.
//
// A worker's gRPC channel retries a lost connection at least every
// kMaxReconnectBackoffMs, so it finds a restarted coordinator within about
// that long; one connection attempt may take up to kMinConnectTimeoutMs (a
// loaded host can take longer than a backoff step to answer the HTTP/2
// handshake). A coordinator that starts on a database with live leases
// extends them by RestartGraceMs: a full lease, a heartbeat period, the
// reconnect bound and one attempt, so a restart shorter than a lease
// supersedes no worker.
#ifndef PRISM_PROTO_WORKER_PROTOCOL_H_
#define PRISM_PROTO_WORKER_PROTOCOL_H_

#include <cstdint>

namespace prism::v1 {

inline constexpr int kMinReconnectBackoffMs = 100;
inline constexpr int kMaxReconnectBackoffMs = 1000;
// gRPC reads GRPC_ARG_MIN_RECONNECT_BACKOFF_MS as the shortest time one
// connection attempt gets before it is abandoned (doc/connection-backoff.md),
// not as a backoff: at 100 ms a saturated host's attempts time out before
// the coordinator's SETTINGS frame arrives ("connection attempt timed out
// before receiving SETTINGS frame"), and the worker backs off instead of
// registering. A refused connection still fails at once and is retried
// after the backoff.
inline constexpr int kMinConnectTimeoutMs = 2000;

// RestartGraceMs is how long a restarted coordinator keeps every live lease,
// counted from the moment it serves again.
inline constexpr int64_t RestartGraceMs(int lease_seconds,
                                        int heartbeat_seconds) {
  return (int64_t{lease_seconds} + heartbeat_seconds) * 1000 +
         kMaxReconnectBackoffMs + kMinConnectTimeoutMs;
}

}  // namespace prism::v1

#endif  // PRISM_PROTO_WORKER_PROTOCOL_H_
