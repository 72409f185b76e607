// WorkerService over gRPC, on the callback API: Report's reactor finishes
// only when the group commit holding its points has landed, so no thread
// waits on the disk; the other methods are short single transactions and
// finish inline. Everything but ListWorkers needs the worker or admin role;
// ListWorkers any role.
//
// Thread-safety: reactions run concurrently on gRPC's callback threads.
#ifndef PRISM_SERVER_WORKER_SERVICE_H_
#define PRISM_SERVER_WORKER_SERVICE_H_

#include "prism/v1/prism.grpc.pb.h"
#include "server/auth.h"
#include "server/queue.h"

namespace prism::server {

class WorkerServiceImpl final : public v1::WorkerService::CallbackService {
 public:
  WorkerServiceImpl(AuthManager* auth, QueueManager* queue)
      : auth_(auth), queue_(queue) {}

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* ctx,
                                     const v1::RegisterRequest* req,
                                     v1::RegisterResponse* resp) override;
  grpc::ServerUnaryReactor* Lease(grpc::CallbackServerContext* ctx,
                                  const v1::LeaseRequest* req,
                                  v1::LeaseResponse* resp) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx,
                                      const v1::HeartbeatRequest* req,
                                      v1::HeartbeatResponse* resp) override;
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* ctx,
                                   const v1::ReportRequest* req,
                                   v1::ReportResponse* resp) override;
  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* ctx,
                                     const v1::CompleteRequest* req,
                                     v1::CompleteResponse* resp) override;
  grpc::ServerUnaryReactor* Fail(grpc::CallbackServerContext* ctx,
                                 const v1::FailRequest* req,
                                 v1::FailResponse* resp) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* ctx,
                                        const v1::ListWorkersRequest* req,
                                        v1::ListWorkersResponse* resp) override;
  grpc::ServerUnaryReactor* Start(grpc::CallbackServerContext* ctx,
                                  const v1::StartRequest* req,
                                  v1::StartResponse* resp) override;
  grpc::ServerUnaryReactor* Deregister(grpc::CallbackServerContext* ctx,
                                       const v1::DeregisterRequest* req,
                                       v1::DeregisterResponse* resp) override;

 private:
  AuthManager* const auth_;
  QueueManager* const queue_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_WORKER_SERVICE_H_
