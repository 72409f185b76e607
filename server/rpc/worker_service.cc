#include "server/rpc/worker_service.h"

#include "server/rpc/grpc_edge.h"

namespace prism::server {

grpc::Status WorkerServiceImpl::Register(grpc::ServerContext* ctx,
                                         const v1::RegisterRequest* req,
                                         v1::RegisterResponse* resp) {
  return Serve(auth_, ctx, Permission::kWork, [&](const Caller& caller) {
    return Assign(queue_->Register(caller, *req), resp);
  });
}

grpc::Status WorkerServiceImpl::Lease(grpc::ServerContext* ctx,
                                      const v1::LeaseRequest* req,
                                      v1::LeaseResponse* resp) {
  return Serve(auth_, ctx, Permission::kWork, [&](const Caller& caller) {
    return Assign(queue_->Lease(caller, *req), resp);
  });
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext* ctx,
                                          const v1::HeartbeatRequest* req,
                                          v1::HeartbeatResponse* resp) {
  return Serve(auth_, ctx, Permission::kWork, [&](const Caller& caller) {
    return Assign(queue_->Heartbeat(caller, *req), resp);
  });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Report(
    grpc::CallbackServerContext* ctx, const v1::ReportRequest* req,
    v1::ReportResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::StatusOr<Caller> caller = AuthenticateCall(auth_, ctx);
  absl::Status allowed =
      caller.ok() ? Authorize(*caller, Permission::kWork) : caller.status();
  if (!allowed.ok()) {
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  queue_->Report(*caller, *req,
                 [reactor, resp](absl::StatusOr<v1::ReportResponse> result) {
                   if (result.ok()) *resp = *std::move(result);
                   reactor->Finish(ToGrpcStatus(result.status()));
                 });
  return reactor;
}

grpc::Status WorkerServiceImpl::Complete(grpc::ServerContext* ctx,
                                         const v1::CompleteRequest* req,
                                         v1::CompleteResponse* resp) {
  return Serve(auth_, ctx, Permission::kWork, [&](const Caller& caller) {
    return Assign(queue_->Complete(caller, *req), resp);
  });
}

grpc::Status WorkerServiceImpl::Fail(grpc::ServerContext* ctx,
                                     const v1::FailRequest* req,
                                     v1::FailResponse* resp) {
  return Serve(auth_, ctx, Permission::kWork, [&](const Caller& caller) {
    return Assign(queue_->Fail(caller, *req), resp);
  });
}

grpc::Status WorkerServiceImpl::Start(grpc::ServerContext* ctx,
                                      const v1::StartRequest* req,
                                      v1::StartResponse* resp) {
  return Serve(auth_, ctx, Permission::kWork, [&](const Caller& caller) {
    return Assign(queue_->Start(caller, *req), resp);
  });
}

grpc::Status WorkerServiceImpl::Deregister(grpc::ServerContext* ctx,
                                           const v1::DeregisterRequest* req,
                                           v1::DeregisterResponse* resp) {
  return Serve(auth_, ctx, Permission::kWork, [&](const Caller& caller) {
    return Assign(queue_->Deregister(caller, *req), resp);
  });
}

grpc::Status WorkerServiceImpl::ListWorkers(grpc::ServerContext* ctx,
                                            const v1::ListWorkersRequest*,
                                            v1::ListWorkersResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller&) {
    return Assign(queue_->ListWorkers(), resp);
  });
}

}  // namespace prism::server
