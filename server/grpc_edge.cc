#include "server/grpc_edge.h"

#include <string>

namespace prism::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::StatusOr<Caller> AuthenticateCall(AuthManager* auth,
                                        const grpc::ServerContextBase* ctx) {
  const auto& metadata = ctx->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return auth->Authenticate("");
  return auth->Authenticate(
      absl::string_view(it->second.data(), it->second.size()));
}

}  // namespace prism::server
