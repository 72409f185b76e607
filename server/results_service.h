// ResultsService over gRPC: Rank, GetTrial and Compare on the sync API
// (thin handlers over ResultsManager), and Watch on the callback API as a
// ServerWriteReactor fed by the EventBus — it first sends the experiment's
// current state, then every event, and ends when the client cancels or the
// coordinator shuts down. Any role may call these.
//
// Thread-safety: handlers and reactions run concurrently on gRPC's threads.
#ifndef PRISM_SERVER_RESULTS_SERVICE_H_
#define PRISM_SERVER_RESULTS_SERVICE_H_

#include "prism/v1/prism.grpc.pb.h"
#include "server/auth.h"
#include "server/events.h"
#include "server/experiments.h"
#include "server/results.h"

namespace prism::server {

class ResultsServiceImpl final
    : public v1::ResultsService::WithCallbackMethod_Watch<
          v1::ResultsService::Service> {
 public:
  ResultsServiceImpl(AuthManager* auth, ResultsManager* results,
                     ExperimentManager* experiments, EventBus* events)
      : auth_(auth),
        results_(results),
        experiments_(experiments),
        events_(events) {}

  grpc::Status Rank(grpc::ServerContext* ctx, const v1::RankRequest* req,
                    v1::RankResponse* resp) override;
  grpc::Status GetTrial(grpc::ServerContext* ctx,
                        const v1::GetTrialRequest* req,
                        v1::GetTrialResponse* resp) override;
  grpc::Status Compare(grpc::ServerContext* ctx, const v1::CompareRequest* req,
                       v1::CompareResponse* resp) override;
  grpc::ServerWriteReactor<v1::ExperimentEvent>* Watch(
      grpc::CallbackServerContext* ctx, const v1::WatchRequest* req) override;

 private:
  AuthManager* const auth_;
  ResultsManager* const results_;
  ExperimentManager* const experiments_;
  EventBus* const events_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_RESULTS_SERVICE_H_
