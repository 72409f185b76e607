// ExperimentService over gRPC (sync API): thin handlers over
// ExperimentManager. Read methods need any role; Submit needs user or admin;
// Cancel/Pause/Resume/SetPriority/Extend/Delete need the experiment's owner or
// an admin; SetUserPolicy an admin; ListUsers any role.
//
// Thread-safety: handlers run concurrently on gRPC's threads.
#ifndef PRISM_SERVER_RPC_EXPERIMENT_SERVICE_H_
#define PRISM_SERVER_RPC_EXPERIMENT_SERVICE_H_

#include "prism/v1/prism.grpc.pb.h"
#include "server/core/auth/auth.h"
#include "server/core/experiments/experiments.h"
#include "server/core/infra/read_gate.h"
#include "server/core/infra/storage_health.h"

namespace prism::server {

class ExperimentServiceImpl final : public v1::ExperimentService::Service {
 public:
  // `health` fills List's storage_condition for an admin.
  ExperimentServiceImpl(AuthManager* auth, ReadGate* reads,
                        ExperimentManager* experiments,
                        const StorageHealth* health)
      : auth_(auth),
        reads_(reads),
        experiments_(experiments),
        health_(health) {}

  grpc::Status Submit(grpc::ServerContext* ctx, const v1::SubmitRequest* req,
                      v1::SubmitResponse* resp) override;
  grpc::Status Get(grpc::ServerContext* ctx,
                   const v1::GetExperimentRequest* req,
                   v1::Experiment* resp) override;
  grpc::Status List(grpc::ServerContext* ctx,
                    const v1::ListExperimentsRequest* req,
                    v1::ListExperimentsResponse* resp) override;
  grpc::Status Cancel(grpc::ServerContext* ctx, const v1::ExperimentRef* req,
                      v1::Experiment* resp) override;
  grpc::Status Pause(grpc::ServerContext* ctx, const v1::ExperimentRef* req,
                     v1::Experiment* resp) override;
  grpc::Status Resume(grpc::ServerContext* ctx, const v1::ExperimentRef* req,
                      v1::Experiment* resp) override;
  grpc::Status Extend(grpc::ServerContext* ctx, const v1::ExtendRequest* req,
                      v1::ExtendResponse* resp) override;
  grpc::Status Delete(grpc::ServerContext* ctx, const v1::ExperimentRef* req,
                      v1::DeleteExperimentResponse* resp) override;
  grpc::Status SetUserPolicy(grpc::ServerContext* ctx,
                             const v1::SetUserPolicyRequest* req,
                             v1::UserPolicy* resp) override;
  grpc::Status ListUsers(grpc::ServerContext* ctx,
                         const v1::ListUsersRequest* req,
                         v1::ListUsersResponse* resp) override;
  grpc::Status SetPriority(grpc::ServerContext* ctx,
                           const v1::SetPriorityRequest* req,
                           v1::Experiment* resp) override;
  grpc::Status ListTrials(grpc::ServerContext* ctx,
                          const v1::ListTrialsRequest* req,
                          v1::ListTrialsResponse* resp) override;

 private:
  AuthManager* const auth_;
  ReadGate* const reads_;  // ListTrials
  ExperimentManager* const experiments_;
  const StorageHealth* const health_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_RPC_EXPERIMENT_SERVICE_H_
