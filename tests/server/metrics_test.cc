#include "server/core/infra/metrics.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::server {
namespace {

using ::testing::HasSubstr;

using ::testing::Not;

constexpr char kLease[] = "/prism.v1.WorkerService/Lease";

TEST(MetricsTest, RpcCountsAreLabelledWithTheGrpcCodeName) {
  Metrics metrics({kLease, "/prism.v1.ResultsService/GetTrial",
                   "/prism.v1.AuthService/WhoAmI"});
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
  // A code gRPC does not define folds into one value.
  EXPECT_THAT(text, HasSubstr("code=\"other\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("99")));
}

// Issue #40: made-up method names, however many and however long, add no
// series: they are all "unknown".
TEST(MetricsTest, MethodsNotServedFoldIntoOneLabel) {
  Metrics metrics({kLease});
  metrics.ObserveRpc(kLease, 0, 0.001);
  metrics.ObserveRpc("/made.up/0", 12, 0.001);
  const std::string after_one = metrics.Render({});
  for (int i = 1; i < 10'000; ++i) {
    metrics.ObserveRpc(absl::StrCat("/made.up/", i, std::string(100, 'x')), 12,
                       0.001);
  }
  metrics.ObserveRpc("/prism.v1.WorkerService/Lease2", 12, 0.001);
  const std::string text = metrics.Render({});
  EXPECT_THAT(text, HasSubstr("prism_rpc_requests_total{method=\"/prism.v1."
                              "WorkerService/Lease\",code=\"OK\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("prism_rpc_requests_total{method=\"unknown\","
                              "code=\"UNIMPLEMENTED\"} 10001\n"));
  EXPECT_THAT(text, HasSubstr("prism_rpc_duration_seconds_count{method="
                              "\"unknown\"} 10001\n"));
  EXPECT_THAT(text, Not(HasSubstr("made.up")));
  EXPECT_THAT(text, Not(HasSubstr("Lease2")));
  // Only the counts changed, not the lines.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'),
            std::count(after_one.begin(), after_one.end(), '\n'));
}

TEST(MetricsTest, WithoutMethodsEveryRpcIsUnknown) {
  Metrics metrics;
  metrics.ObserveRpc(kLease, 0, 0.001);
  EXPECT_THAT(metrics.Render({}),
              HasSubstr("prism_rpc_requests_total{method=\"unknown\","
                        "code=\"OK\"} 1\n"));
}

TEST(MetricsTest, HttpStatusesOutsideTheirRangeFoldIntoOther) {
  Metrics metrics;
  metrics.CountHttp("/metrics", 200);
  metrics.CountHttp("/metrics", -1);
  metrics.CountHttp("/metrics", 1000);
  metrics.CountHttp("/metrics", 99);
  const std::string text = metrics.Render({});
  EXPECT_THAT(text, HasSubstr("prism_http_requests_total{route=\"/metrics\","
                              "status=\"200\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("prism_http_requests_total{route=\"/metrics\","
                              "status=\"other\"} 3\n"));
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
