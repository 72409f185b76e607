// The one conversion between absl::Status and grpc::Status, used by the
// coordinator's RPC edge (server/rpc/grpc_edge.h) and by every client of it
// (the worker, the CLI). The two code enums agree value for value, so a status
// crosses the wire with its code and message intact:
//
//   return ToGrpcStatus(manager->Cancel(id));          // server handler
//   absl::Status s = FromGrpcStatus(stub->Cancel(...));  // client
//
// Payloads (absl) are not carried. The binary details carry one marker, so a
// client can tell the coordinator's own Unavailable ("the database disk is
// full") from the one gRPC makes up when there is no connection at all.
//
// Thread-safety: pure functions.
#ifndef PRISM_PROTO_GRPC_STATUS_H_
#define PRISM_PROTO_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace prism {

// ToGrpcStatus returns grpc::Status::OK for an OK status, else a grpc::Status
// with the same code and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

// FromGrpcStatus returns absl::OkStatus() for an OK status, else an
// absl::Status with the same code and message.
absl::Status FromGrpcStatus(const grpc::Status& status);

// IsCoordinatorStatus is true for a non-OK status that ToGrpcStatus made on
// the coordinator, false for one gRPC made on the client's side (no
// connection, a deadline that passed) or that an older coordinator sent.
bool IsCoordinatorStatus(const grpc::Status& status);

}  // namespace prism

#endif  // PRISM_PROTO_GRPC_STATUS_H_
