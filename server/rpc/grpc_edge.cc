#include "server/rpc/grpc_edge.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace prism::server {

absl::StatusOr<Caller> AuthenticateCall(AuthManager* auth,
                                        const grpc::ServerContextBase* ctx) {
  const auto& metadata = ctx->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return auth->Authenticate("");
  return auth->Authenticate(
      absl::string_view(it->second.data(), it->second.size()),
      PeerHost(ctx->peer()));
}

absl::Time ReadDeadline(const grpc::ServerContextBase* ctx) {
  return std::min(absl::FromChrono(ctx->deadline()),
                  absl::Now() + absl::Minutes(1));
}

}  // namespace prism::server
