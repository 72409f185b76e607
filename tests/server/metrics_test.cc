#include "server/core/metrics.h"

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

TEST(MetricsTest, StorageHealthIsRenderedWithEveryFaultAndTheFreeBytes) {
  Metrics metrics;
  Metrics::Snapshot gauges;
  gauges.storage_errors = {{"disk_full", 3}, {"read_only", 0}};
  gauges.storage_ready = false;
  gauges.storage_disruptions = 2;
  gauges.db_free_bytes = 1234567;
  const std::string text = metrics.Render(gauges);
  EXPECT_THAT(text, HasSubstr("# TYPE prism_storage_errors_total counter\n"));
  EXPECT_THAT(text,
              HasSubstr("prism_storage_errors_total{fault=\"disk_full\"} 3\n"));
  EXPECT_THAT(text,
              HasSubstr("prism_storage_errors_total{fault=\"read_only\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("prism_storage_ready 0\n"));
  EXPECT_THAT(text, HasSubstr("prism_storage_disruptions_total 2\n"));
  EXPECT_THAT(text, HasSubstr("prism_db_filesystem_free_bytes 1234567\n"));

  // Unmeasured free space is left out rather than shown as a number.
  gauges.db_free_bytes = -1;
  EXPECT_THAT(metrics.Render(gauges),
              ::testing::Not(HasSubstr("prism_db_filesystem_free_bytes")));
}

}  // namespace
}  // namespace prism::server
