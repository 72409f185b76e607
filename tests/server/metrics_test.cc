#include "server/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::server {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, RpcCountsAreLabelledWithTheGrpcCodeName) {
  Metrics metrics;
  metrics.ObserveRpc("/prism.v1.WorkerService/Lease", 0, 0.001);
  metrics.ObserveRpc("/prism.v1.WorkerService/Lease", 0, 0.002);
  metrics.ObserveRpc("/prism.v1.ResultsService/GetTrial", 5, 0.001);
  metrics.ObserveRpc("/prism.v1.AuthService/WhoAmI", 16, 0.001);
  metrics.ObserveRpc("/prism.v1.AuthService/WhoAmI", 99, 0.001);
  const std::string text = metrics.Render({});
  EXPECT_THAT(text, HasSubstr("prism_rpc_requests_total{method=\"/prism.v1."
                              "WorkerService/Lease\",code=\"OK\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("code=\"NOT_FOUND\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("code=\"UNAUTHENTICATED\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("code=\"99\"} 1\n"));
}

}  // namespace
}  // namespace prism::server
