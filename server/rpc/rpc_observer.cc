#include "server/rpc/rpc_observer.h"

#include <google/protobuf/descriptor.h>

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "prism/v1/prism.grpc.pb.h"

namespace prism::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class RpcObserver final : public grpc::experimental::Interceptor {
 public:
  RpcObserver(grpc::experimental::ServerRpcInfo* info, Metrics* metrics)
      : metrics_(metrics),
        method_(info->method() != nullptr ? info->method() : "unknown"),
        one_request_(
            info->type() == grpc::experimental::ServerRpcInfo::Type::UNARY ||
            info->type() ==
                grpc::experimental::ServerRpcInfo::Type::SERVER_STREAMING),
        start_(std::chrono::steady_clock::now()) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (one_request_ && methods->QueryInterceptionHookPoint(
                            InterceptionHookPoints::POST_RECV_MESSAGE)) {
      unparsed_ = methods->GetRecvMessage() == nullptr;
    }
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      grpc::Status status = methods->GetSendStatus();
      if (unparsed_ && status.error_code() == grpc::StatusCode::INTERNAL &&
          status.error_message().empty()) {
        // gRPC's own answer to a request it could not parse (bytes that are
        // not the message, or groups nested past protobuf's depth limit):
        // the caller's fault, and said so.
        status = grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("request: not a valid message for ", method_,
                         " (malformed bytes, or fields nested deeper than "
                         "protobuf's limit of 100)"));
        methods->ModifySendStatus(status);
      }
      const double seconds = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start_)
                                 .count();
      metrics_->ObserveRpc(method_, status.error_code(), seconds);
      if (LogEnabled(LogLevel::kDebug)) {
        Log(LogLevel::kDebug, "rpc")
            .Kv("method", method_)
            .Kv("code", static_cast<int>(status.error_code()))
            .Kv("ms", seconds * 1000.0)
            .Kv("error", status.error_message());
      }
    }
    methods->Proceed();
  }

 private:
  Metrics* const metrics_;
  const std::string method_;
  // Unary and server-streaming calls carry one request, which gRPC parses
  // before any handler runs; unparsed_ is whether that failed.
  const bool one_request_;
  bool unparsed_ = false;
  const std::chrono::steady_clock::time_point start_;
};

class RpcObserverFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcObserverFactory(Metrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new RpcObserver(info, metrics_);
  }

 private:
  Metrics* const metrics_;
};

}  // namespace

absl::flat_hash_set<std::string> PrismRpcMethods() {
  const google::protobuf::ServiceDescriptor* any_service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::AuthService::service_full_name());
  const google::protobuf::FileDescriptor* file = any_service->file();
  absl::flat_hash_set<std::string> methods;
  for (int s = 0; s < file->service_count(); ++s) {
    const google::protobuf::ServiceDescriptor* service = file->service(s);
    for (int m = 0; m < service->method_count(); ++m) {
      methods.insert(absl::StrCat("/", service->full_name(), "/",
                                  service->method(m)->name()));
    }
  }
  return methods;
}

std::vector<
    std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
MakeRpcObservers(Metrics* metrics) {
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      factories;
  factories.push_back(std::make_unique<RpcObserverFactory>(metrics));
  return factories;
}

}  // namespace prism::server
