// The one conversion between absl::Status and grpc::Status, used by the
// coordinator's RPC edge (server/grpc_edge.h) and by every client of it (the
// worker, the CLI). The two code enums agree value for value, so a status
// crosses the wire with its code and message intact:
//
//   return ToGrpcStatus(manager->Cancel(id));          // server handler
//   absl::Status s = FromGrpcStatus(stub->Cancel(...));  // client
//
// Payloads (absl) and binary details (gRPC) are not carried.
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

}  // namespace prism

#endif  // PRISM_PROTO_GRPC_STATUS_H_
