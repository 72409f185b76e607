// RpcObserver: a gRPC server interceptor that times every RPC from arrival
// to its status, feeds Metrics (count by code, latency histogram by method)
// and writes a debug-level log line per call — one place for all services,
// sync and callback alike.
//
//   Metrics metrics(PrismRpcMethods());
//   builder.experimental().SetInterceptorCreators(MakeRpcObservers(&metrics));
//
// A call to a method the coordinator does not serve (gRPC answers it
// UNIMPLEMENTED without a handler, and so without a token) is observed too:
// Metrics folds its made-up name into one label.
//
// Thread-safety: the factory is thread-safe; each interceptor serves one RPC.
#ifndef PRISM_SERVER_RPC_RPC_OBSERVER_H_
#define PRISM_SERVER_RPC_RPC_OBSERVER_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "server/core/infra/metrics.h"

namespace prism::server {

// PrismRpcMethods returns every method of the services of the wire contract
// (proto/prism/v1/prism.proto, all of which the coordinator serves) as gRPC
// names them: "/prism.v1.AuthService/WhoAmI".
absl::flat_hash_set<std::string> PrismRpcMethods();

// MakeRpcObservers returns the interceptor factories to install.
std::vector<
    std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
MakeRpcObservers(Metrics* metrics);

}  // namespace prism::server

#endif  // PRISM_SERVER_RPC_RPC_OBSERVER_H_
