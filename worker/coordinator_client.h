// CoordinatorClient: the worker's view of the coordinator's WorkerService.
//
// The worker's logic (worker.h) talks to this interface only, so unit tests
// drive it with fakes that fail, refuse or go away on cue; the real
// implementation is a thin gRPC edge that adds the bearer token to every call
// and converts grpc::Status to absl::Status with proto/grpc_status.h.
//
//   std::unique_ptr<CoordinatorClient> c =
//       NewGrpcCoordinatorClient("127.0.0.1:50051", token);
//   absl::StatusOr<v1::LeaseResponse> lease = c->Lease(request);
//
// Every method returns the response on success, or the coordinator's status:
// Unavailable / DeadlineExceeded when it cannot be reached (retry later),
// FailedPrecondition when the attempt was superseded or cancelled,
// Unauthenticated / PermissionDenied for a bad token.
//
// Thread-safety: implementations are safe to call from several threads at once
// (the worker reports from one thread and heartbeats from another).
#ifndef PRISM_WORKER_COORDINATOR_CLIENT_H_
#define PRISM_WORKER_COORDINATOR_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "prism/v1/prism.pb.h"
#include "proto/tls.h"

namespace prism::worker {

class CoordinatorClient {
 public:
  virtual ~CoordinatorClient() = default;

  virtual absl::StatusOr<v1::RegisterResponse> Register(
      const v1::RegisterRequest& request) = 0;
  virtual absl::StatusOr<v1::LeaseResponse> Lease(
      const v1::LeaseRequest& request) = 0;
  virtual absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request) = 0;
  virtual absl::StatusOr<v1::ReportResponse> Report(
      const v1::ReportRequest& request) = 0;
  virtual absl::StatusOr<v1::CompleteResponse> Complete(
      const v1::CompleteRequest& request) = 0;
  virtual absl::StatusOr<v1::FailResponse> Fail(
      const v1::FailRequest& request) = 0;
  virtual absl::StatusOr<v1::StartResponse> Start(
      const v1::StartRequest& request) = 0;
  virtual absl::StatusOr<v1::DeregisterResponse> Deregister(
      const v1::DeregisterRequest& request) = 0;
};

// NewGrpcCoordinatorClient returns a client for the coordinator at `address`
// (HOST:PORT) that sends `authorization: Bearer <token>` with every call and
// gives each call `rpc_timeout`, in plaintext or, when `tls` is not empty,
// over TLS (proto/tls.h). The channel connects lazily and reconnects on its
// own after the coordinator restarts.
std::unique_ptr<CoordinatorClient> NewGrpcCoordinatorClient(
    const std::string& address, const std::string& token,
    const TlsPem& tls = {}, absl::Duration rpc_timeout = absl::Seconds(20));

// IsTransient is true for the codes that mean "try again later": Unavailable,
// DeadlineExceeded, Aborted, ResourceExhausted, Internal and Unknown (a
// coordinator crashing mid-call reports the last two), and Cancelled: the
// worker never cancels its own calls, so that is a coordinator shutting
// down (a rolling upgrade) with the call in flight.
bool IsTransient(const absl::Status& status);

}  // namespace prism::worker

#endif  // PRISM_WORKER_COORDINATOR_CLIENT_H_
