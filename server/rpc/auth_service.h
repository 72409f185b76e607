// AuthService over gRPC (sync API): CreateToken (admin only), WhoAmI,
// ListTokens and RevokeToken (any valid token; AuthManager decides whose
// tokens each caller sees and may revoke).
//
// Thread-safety: handlers run concurrently on gRPC's threads.
#ifndef PRISM_SERVER_RPC_AUTH_SERVICE_H_
#define PRISM_SERVER_RPC_AUTH_SERVICE_H_

#include "prism/v1/prism.grpc.pb.h"
#include "server/core/auth/auth.h"

namespace prism::server {

class AuthServiceImpl final : public v1::AuthService::Service {
 public:
  explicit AuthServiceImpl(AuthManager* auth) : auth_(auth) {}

  grpc::Status CreateToken(grpc::ServerContext* ctx,
                           const v1::CreateTokenRequest* req,
                           v1::CreateTokenResponse* resp) override;
  grpc::Status WhoAmI(grpc::ServerContext* ctx, const v1::WhoAmIRequest* req,
                      v1::WhoAmIResponse* resp) override;
  grpc::Status ListTokens(grpc::ServerContext* ctx,
                          const v1::ListTokensRequest* req,
                          v1::ListTokensResponse* resp) override;
  grpc::Status RevokeToken(grpc::ServerContext* ctx,
                           const v1::RevokeTokenRequest* req,
                           v1::RevokeTokenResponse* resp) override;

 private:
  AuthManager* const auth_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_RPC_AUTH_SERVICE_H_
