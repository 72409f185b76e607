// The coordinator's one gRPC threading rule (server/rpc/worker_service.h):
// unary calls that touch the database run on the sync API, and only calls that
// wait for something else (Report, ResultsService.Watch) on the callback
// API, whose reactors must never block on SQLite.
#include "server/rpc/worker_service.h"

#include <type_traits>

#include "gtest/gtest.h"
#include "server/rpc/results_service.h"

namespace prism::server {
namespace {

TEST(GrpcThreadingTest, OnlyReportAndWatchRunOnTheCallbackApi) {
  // Lease, Heartbeat, Complete and the rest override the sync Service's
  // methods: moving one of them onto a callback reactor would stop this
  // from compiling, and the checks below say which API each one is on.
  static_assert(
      std::is_base_of_v<v1::WorkerService::Service, WorkerServiceImpl>);
  WorkerServiceImpl service(/*auth=*/nullptr, /*queue=*/nullptr);
  EXPECT_TRUE(service.has_synchronous_methods());
  EXPECT_TRUE(service.has_callback_methods());
  // gRPC's generated mixin marks Report (and only it) as a callback method.
  using ReportOnCallback =
      v1::WorkerService::WithCallbackMethod_Report<v1::WorkerService::Service>;
  static_assert(std::is_base_of_v<ReportOnCallback, WorkerServiceImpl>);
  // ResultsService: Rank, GetTrial, Compare, Suggest sync; Watch a stream
  // (raw: each round is serialized once for all watchers).
  using WatchOnCallback = v1::ResultsService::WithRawCallbackMethod_Watch<
      v1::ResultsService::Service>;
  static_assert(std::is_base_of_v<WatchOnCallback, ResultsServiceImpl>);
}

}  // namespace
}  // namespace prism::server
