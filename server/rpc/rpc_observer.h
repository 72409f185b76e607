// RpcObserver: a gRPC server interceptor that times every RPC from arrival
// to its status, feeds Metrics (count by code, latency histogram by method)
// and writes a debug-level log line per call — one place for all services,
// sync and callback alike.
//
//   builder.experimental().SetInterceptorCreators(MakeRpcObservers(&metrics));
//
// Thread-safety: the factory is thread-safe; each interceptor serves one RPC.
#ifndef PRISM_SERVER_RPC_RPC_OBSERVER_H_
#define PRISM_SERVER_RPC_RPC_OBSERVER_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <vector>

#include "server/core/metrics.h"

namespace prism::server {

// MakeRpcObservers returns the interceptor factories to install.
std::vector<
    std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
MakeRpcObservers(Metrics* metrics);

}  // namespace prism::server

#endif  // PRISM_SERVER_RPC_RPC_OBSERVER_H_
