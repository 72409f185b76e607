#include "server/rpc/experiment_service.h"

#include "server/rpc/grpc_edge.h"

namespace prism::server {

grpc::Status ExperimentServiceImpl::Submit(grpc::ServerContext* ctx,
                                           const v1::SubmitRequest* req,
                                           v1::SubmitResponse* resp) {
  return Serve(auth_, ctx, Permission::kSubmit, [&](const Caller& caller) {
    return Assign(experiments_->Submit(caller, *req), resp);
  });
}

grpc::Status ExperimentServiceImpl::Get(grpc::ServerContext* ctx,
                                        const v1::GetExperimentRequest* req,
                                        v1::Experiment* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller&) {
    return Assign(experiments_->Get(req->id()), resp);
  });
}

grpc::Status ExperimentServiceImpl::List(grpc::ServerContext* ctx,
                                         const v1::ListExperimentsRequest* req,
                                         v1::ListExperimentsResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller& caller) {
    absl::Status status = Assign(experiments_->List(*req), resp);
    if (status.ok() && caller.role == v1::ROLE_ADMIN) {
      resp->set_storage_condition(health_->Condition());
    }
    return status;
  });
}

grpc::Status ExperimentServiceImpl::Cancel(grpc::ServerContext* ctx,
                                           const v1::ExperimentRef* req,
                                           v1::Experiment* resp) {
  return Serve(auth_, ctx, Permission::kSubmit, [&](const Caller& caller) {
    return Assign(experiments_->Cancel(caller, req->id()), resp);
  });
}

grpc::Status ExperimentServiceImpl::Pause(grpc::ServerContext* ctx,
                                          const v1::ExperimentRef* req,
                                          v1::Experiment* resp) {
  return Serve(auth_, ctx, Permission::kSubmit, [&](const Caller& caller) {
    return Assign(experiments_->Pause(caller, req->id()), resp);
  });
}

grpc::Status ExperimentServiceImpl::Resume(grpc::ServerContext* ctx,
                                           const v1::ExperimentRef* req,
                                           v1::Experiment* resp) {
  return Serve(auth_, ctx, Permission::kSubmit, [&](const Caller& caller) {
    return Assign(experiments_->Resume(caller, req->id()), resp);
  });
}

grpc::Status ExperimentServiceImpl::Extend(grpc::ServerContext* ctx,
                                           const v1::ExtendRequest* req,
                                           v1::ExtendResponse* resp) {
  return Serve(auth_, ctx, Permission::kSubmit, [&](const Caller& caller) {
    return Assign(experiments_->Extend(caller, *req), resp);
  });
}

grpc::Status ExperimentServiceImpl::Delete(grpc::ServerContext* ctx,
                                           const v1::ExperimentRef* req,
                                           v1::DeleteExperimentResponse* resp) {
  return Serve(auth_, ctx, Permission::kSubmit, [&](const Caller& caller) {
    return Assign(experiments_->Delete(caller, req->id()), resp);
  });
}

grpc::Status ExperimentServiceImpl::SetPriority(
    grpc::ServerContext* ctx, const v1::SetPriorityRequest* req,
    v1::Experiment* resp) {
  return Serve(auth_, ctx, Permission::kSubmit, [&](const Caller& caller) {
    return Assign(experiments_->SetPriority(caller, *req), resp);
  });
}

grpc::Status ExperimentServiceImpl::SetUserPolicy(
    grpc::ServerContext* ctx, const v1::SetUserPolicyRequest* req,
    v1::UserPolicy* resp) {
  return Serve(auth_, ctx, Permission::kAdmin, [&](const Caller& caller) {
    return Assign(experiments_->SetUserPolicy(caller, *req), resp);
  });
}

grpc::Status ExperimentServiceImpl::ListUsers(grpc::ServerContext* ctx,
                                              const v1::ListUsersRequest*,
                                              v1::ListUsersResponse* resp) {
  return ServeRead(auth_, reads_, ctx, [&](const Caller&) {
    return Assign(experiments_->ListUsers(), resp);
  });
}

grpc::Status ExperimentServiceImpl::ListTrials(grpc::ServerContext* ctx,
                                               const v1::ListTrialsRequest* req,
                                               v1::ListTrialsResponse* resp) {
  return ServeRead(auth_, reads_, ctx, [&](const Caller&) {
    return Assign(experiments_->ListTrials(*req), resp);
  });
}

}  // namespace prism::server
