// The gRPC edge of the worker: one stub, bearer metadata and deadlines; status
// conversion is proto/grpc_status.h's.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "prism/v1/prism.grpc.pb.h"
#include "proto/grpc_status.h"
#include "proto/worker_protocol.h"
#include "worker/coordinator_client.h"

namespace prism::worker {
namespace {

// NewChannel bounds gRPC's reconnect backoff (by default it grows to two
// minutes): a worker must find a restarted coordinator within about a
// second, well inside the grace the coordinator gives its lease. Each
// connection attempt gets kMinConnectTimeoutMs (proto/worker_protocol.h).
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address,
                                          const TlsPem& tls) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, v1::kMinConnectTimeoutMs);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              v1::kMinReconnectBackoffMs);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, v1::kMaxReconnectBackoffMs);
  // The coordinator bounds what it sends (--max-message-bytes).
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(address, ChannelCredentialsFor(tls), args);
}

class GrpcCoordinatorClient final : public CoordinatorClient {
 public:
  GrpcCoordinatorClient(const std::string& address, std::string token,
                        const TlsPem& tls, absl::Duration rpc_timeout)
      : stub_(v1::WorkerService::NewStub(NewChannel(address, tls))),
        authorization_("Bearer " + std::move(token)),
        rpc_timeout_(rpc_timeout) {}

  absl::StatusOr<v1::RegisterResponse> Register(
      const v1::RegisterRequest& request) override {
    return Call(&v1::WorkerService::Stub::Register, request);
  }
  absl::StatusOr<v1::LeaseResponse> Lease(
      const v1::LeaseRequest& request) override {
    return Call(&v1::WorkerService::Stub::Lease, request);
  }
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request) override {
    return Call(&v1::WorkerService::Stub::Heartbeat, request);
  }
  absl::StatusOr<v1::ReportResponse> Report(
      const v1::ReportRequest& request) override {
    return Call(&v1::WorkerService::Stub::Report, request);
  }
  absl::StatusOr<v1::CompleteResponse> Complete(
      const v1::CompleteRequest& request) override {
    return Call(&v1::WorkerService::Stub::Complete, request);
  }
  absl::StatusOr<v1::FailResponse> Fail(
      const v1::FailRequest& request) override {
    return Call(&v1::WorkerService::Stub::Fail, request);
  }
  absl::StatusOr<v1::StartResponse> Start(
      const v1::StartRequest& request) override {
    return Call(&v1::WorkerService::Stub::Start, request);
  }
  absl::StatusOr<v1::DeregisterResponse> Deregister(
      const v1::DeregisterRequest& request) override {
    // A goodbye on the way out: never hold an exiting process for long.
    return Call(&v1::WorkerService::Stub::Deregister, request,
                std::min(rpc_timeout_, absl::Seconds(2)));
  }

 private:
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (v1::WorkerService::Stub::*method)(
                                    grpc::ClientContext*, const Request&,
                                    Response*),
                                const Request& request) {
    return Call(method, request, rpc_timeout_);
  }
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (v1::WorkerService::Stub::*method)(
                                    grpc::ClientContext*, const Request&,
                                    Response*),
                                const Request& request,
                                absl::Duration timeout) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", authorization_);
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoMilliseconds(timeout));
    Response response;
    const grpc::Status status =
        (stub_.get()->*method)(&context, request, &response);
    if (!status.ok()) return FromGrpcStatus(status);
    return response;
  }

  std::unique_ptr<v1::WorkerService::Stub> stub_;
  const std::string authorization_;
  const absl::Duration rpc_timeout_;
};

}  // namespace

std::unique_ptr<CoordinatorClient> NewGrpcCoordinatorClient(
    const std::string& address, const std::string& token, const TlsPem& tls,
    absl::Duration rpc_timeout) {
  return std::make_unique<GrpcCoordinatorClient>(address, token, tls,
                                                 rpc_timeout);
}

bool IsTransient(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
      return true;
    default:
      return false;
  }
}

}  // namespace prism::worker
