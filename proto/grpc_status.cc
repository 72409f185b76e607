#include "proto/grpc_status.h"

#include <string>

namespace prism {
namespace {

constexpr char kCoordinatorMarker[] = "prism";

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()), kCoordinatorMarker);
}

bool IsCoordinatorStatus(const grpc::Status& status) {
  return !status.ok() && status.error_details() == kCoordinatorMarker;
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

}  // namespace prism
