#include "proto/grpc_status.h"

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

TEST(GrpcStatusTest, OkConvertsToOkBothWays) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(GrpcStatusTest, EveryErrorCodeAndMessageSurvivesTheRoundTrip) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status original(static_cast<absl::StatusCode>(code),
                                "trial 7: no such trial");
    const grpc::Status wire = ToGrpcStatus(original);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(wire.error_message(), "trial 7: no such trial");
    EXPECT_EQ(FromGrpcStatus(wire), original);
  }
}

TEST(GrpcStatusTest, NamedCodesMapToTheirCounterparts) {
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError("bad")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpcStatus(absl::FailedPreconditionError("stale")).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::IsUnavailable(FromGrpcStatus(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused"))));
  EXPECT_TRUE(absl::IsUnauthenticated(FromGrpcStatus(
      grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad token"))));
}

TEST(GrpcStatusTest, TheCoordinatorsStatusesAreToldFromTransportOnes) {
  EXPECT_TRUE(IsCoordinatorStatus(
      ToGrpcStatus(absl::UnavailableError("database or disk is full"))));
  EXPECT_FALSE(IsCoordinatorStatus(grpc::Status(
      grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses")));
  EXPECT_FALSE(IsCoordinatorStatus(grpc::Status::OK));
}

}  // namespace
}  // namespace prism
