// ResultsService over gRPC: Rank, GetTrial, Compare and Suggest on the sync API
// (thin handlers over ResultsManager), and Watch on the callback API as a
// ServerWriteReactor fed by the EventBus — it first sends the experiment's
// current state, then the bus's paced rounds of events (events.h), and ends
// when the client cancels or the coordinator shuts down. Any role may call
// these. Watch streams are capped in total and per user
// (Limits::max_watch_streams, _per_user: RESOURCE_EXHAUSTED past either), and a
// watcher more than max_stream_buffer_bytes behind is ended with
// RESOURCE_EXHAUSTED.
//
// Thread-safety: handlers and reactions run concurrently on gRPC's threads.
#ifndef PRISM_SERVER_RPC_RESULTS_SERVICE_H_
#define PRISM_SERVER_RPC_RESULTS_SERVICE_H_

#include "prism/v1/prism.grpc.pb.h"
#include "server/core/auth/auth.h"
#include "server/core/experiments/experiments.h"
#include "server/core/experiments/limits.h"
#include "server/core/experiments/results.h"
#include "server/core/infra/events.h"
#include "server/core/infra/read_gate.h"

namespace prism::server {

// Watch is a raw callback method: a round is serialized once by the bus
// (SharedRound::wire) and that one buffer is written to every watcher.
class ResultsServiceImpl final
    : public v1::ResultsService::WithRawCallbackMethod_Watch<
          v1::ResultsService::Service> {
 public:
  ResultsServiceImpl(AuthManager* auth, ResultsManager* results,
                     ExperimentManager* experiments, EventBus* events,
                     ReadGate* reads, const Limits& limits)
      : auth_(auth),
        reads_(reads),
        results_(results),
        experiments_(experiments),
        events_(events),
        max_stream_buffer_bytes_(limits.max_stream_buffer_bytes),
        watch_slots_(limits.max_watch_streams, "max-watch-streams",
                     limits.max_watch_streams_per_user,
                     "max-watch-streams-per-user") {}

  grpc::Status Rank(grpc::ServerContext* ctx, const v1::RankRequest* req,
                    v1::RankResponse* resp) override;
  grpc::Status GetTrial(grpc::ServerContext* ctx,
                        const v1::GetTrialRequest* req,
                        v1::GetTrialResponse* resp) override;
  grpc::Status Compare(grpc::ServerContext* ctx, const v1::CompareRequest* req,
                       v1::CompareResponse* resp) override;
  grpc::Status Suggest(grpc::ServerContext* ctx, const v1::SuggestRequest* req,
                       v1::SuggestResponse* resp) override;
  grpc::Status LadderTransfer(grpc::ServerContext* ctx,
                              const v1::LadderTransferRequest* req,
                              v1::LadderTransferResponse* resp) override;
  // Watch reads a v1::WatchRequest and streams v1::WatchResponse bytes.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Watch(
      grpc::CallbackServerContext* ctx,
      const grpc::ByteBuffer* request) override;

 private:
  AuthManager* const auth_;
  ReadGate* const reads_;  // Rank, GetTrial, Compare, Suggest
  ResultsManager* const results_;
  ExperimentManager* const experiments_;
  EventBus* const events_;
  const int64_t max_stream_buffer_bytes_;
  StreamSlots watch_slots_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_RPC_RESULTS_SERVICE_H_
