// The gRPC edge: where a call's bearer token becomes a Caller and a manager's
// absl::Status becomes the call's grpc::Status (through the one conversion
// pair in proto/grpc_status.h). Service handlers are thin: authenticate +
// authorize, call a manager, convert, return.
//
//   grpc::Status Get(grpc::ServerContext* ctx, const Req* req, Resp* resp) {
//     return Serve(auth_, ctx, Permission::kRead, [&](const Caller&) {
//       return Assign(experiments_->Get(req->id()), resp);
//     });
//   }
//
// Thread-safety: pure functions.
#ifndef PRISM_SERVER_RPC_GRPC_EDGE_H_
#define PRISM_SERVER_RPC_GRPC_EDGE_H_

#include <grpcpp/grpcpp.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/grpc_status.h"
#include "server/core/auth/auth.h"
#include "server/core/infra/read_gate.h"

namespace prism::server {

// AuthenticateCall reads the call's `authorization` metadata; failures count
// against the call's peer address (auth_throttle.h).
absl::StatusOr<Caller> AuthenticateCall(AuthManager* auth,
                                        const grpc::ServerContextBase* ctx);

// Assign moves a manager's result into the response message.
template <typename T>
absl::Status Assign(absl::StatusOr<T> result, T* out) {
  if (!result.ok()) return result.status();
  *out = std::move(*result);
  return absl::OkStatus();
}

// Serve authenticates the call, checks `permission`, runs fn(caller) and
// converts its status.
template <typename Fn>
grpc::Status Serve(AuthManager* auth, const grpc::ServerContextBase* ctx,
                   Permission permission, Fn&& fn) {
  absl::StatusOr<Caller> caller = AuthenticateCall(auth, ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  absl::Status allowed = Authorize(*caller, permission);
  if (!allowed.ok()) return ToGrpcStatus(allowed);
  return ToGrpcStatus(fn(*caller));
}

// ReadDeadline is how long an expensive read may wait for the read gate:
// the call's own deadline, at most a minute from now.
absl::Time ReadDeadline(const grpc::ServerContextBase* ctx);

// ServeRead is Serve for an expensive read (Permission::kRead): fn runs on
// one of the gate's lanes, in turn (read_gate.h), while the gRPC thread
// waits.
template <typename Fn>
grpc::Status ServeRead(AuthManager* auth, ReadGate* gate,
                       const grpc::ServerContextBase* ctx, Fn&& fn) {
  return Serve(auth, ctx, Permission::kRead,
               [&](const Caller& caller) -> absl::Status {
                 return gate->Run(ReadDeadline(ctx),
                                  [&]() -> absl::Status { return fn(caller); });
               });
}

}  // namespace prism::server

#endif  // PRISM_SERVER_RPC_GRPC_EDGE_H_
