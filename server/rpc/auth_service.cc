#include "server/rpc/auth_service.h"

#include "server/rpc/grpc_edge.h"

namespace prism::server {

grpc::Status AuthServiceImpl::CreateToken(grpc::ServerContext* ctx,
                                          const v1::CreateTokenRequest* req,
                                          v1::CreateTokenResponse* resp) {
  return Serve(auth_, ctx, Permission::kAdmin, [&](const Caller& caller) {
    return Assign(auth_->CreateToken(caller, *req), resp);
  });
}

grpc::Status AuthServiceImpl::WhoAmI(grpc::ServerContext* ctx,
                                     const v1::WhoAmIRequest*,
                                     v1::WhoAmIResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller& caller) {
    *resp = WhoAmIFor(caller);
    return absl::OkStatus();
  });
}

grpc::Status AuthServiceImpl::ListTokens(grpc::ServerContext* ctx,
                                         const v1::ListTokensRequest*,
                                         v1::ListTokensResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller& caller) {
    return Assign(auth_->ListTokens(caller), resp);
  });
}

grpc::Status AuthServiceImpl::RevokeToken(grpc::ServerContext* ctx,
                                          const v1::RevokeTokenRequest* req,
                                          v1::RevokeTokenResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller& caller) {
    return Assign(auth_->RevokeToken(caller, *req), resp);
  });
}

}  // namespace prism::server
