// WorkerService over gRPC. One threading rule for the whole coordinator:
// a unary call that reads or writes the database runs on the sync API, on a
// thread of gRPC's sync pool that may block on SQLite's write lock; the
// callback API is used only where a call waits for something else and a
// reactor must never block: Report (its reactor finishes when the group
// commit holding its points has landed, finished from the ingest thread) and
// ResultsService.Watch (a stream fed by the EventBus). No SQLite write runs
// on a gRPC callback thread. Everything but ListWorkers needs the worker or
// admin role; ListWorkers any role.
//
// Thread-safety: handlers run concurrently on gRPC's sync threads, Report's
// reaction on a callback thread; the managers they call are thread-safe.
#ifndef PRISM_SERVER_RPC_WORKER_SERVICE_H_
#define PRISM_SERVER_RPC_WORKER_SERVICE_H_

#include "prism/v1/prism.grpc.pb.h"
#include "server/core/auth/auth.h"
#include "server/core/queue/queue.h"

namespace prism::server {

class WorkerServiceImpl final
    : public v1::WorkerService::WithCallbackMethod_Report<
          v1::WorkerService::Service> {
 public:
  WorkerServiceImpl(AuthManager* auth, QueueManager* queue)
      : auth_(auth), queue_(queue) {}

  grpc::Status Register(grpc::ServerContext* ctx,
                        const v1::RegisterRequest* req,
                        v1::RegisterResponse* resp) override;
  grpc::Status Lease(grpc::ServerContext* ctx, const v1::LeaseRequest* req,
                     v1::LeaseResponse* resp) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx,
                         const v1::HeartbeatRequest* req,
                         v1::HeartbeatResponse* resp) override;
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* ctx,
                                   const v1::ReportRequest* req,
                                   v1::ReportResponse* resp) override;
  grpc::Status Complete(grpc::ServerContext* ctx,
                        const v1::CompleteRequest* req,
                        v1::CompleteResponse* resp) override;
  grpc::Status Fail(grpc::ServerContext* ctx, const v1::FailRequest* req,
                    v1::FailResponse* resp) override;
  grpc::Status ListWorkers(grpc::ServerContext* ctx,
                           const v1::ListWorkersRequest* req,
                           v1::ListWorkersResponse* resp) override;
  grpc::Status Start(grpc::ServerContext* ctx, const v1::StartRequest* req,
                     v1::StartResponse* resp) override;
  grpc::Status Deregister(grpc::ServerContext* ctx,
                          const v1::DeregisterRequest* req,
                          v1::DeregisterResponse* resp) override;

 private:
  AuthManager* const auth_;
  QueueManager* const queue_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_RPC_WORKER_SERVICE_H_
