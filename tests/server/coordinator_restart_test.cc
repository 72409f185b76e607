// Restarts: live leases survive a coordinator restart for the
// restart grace.
// A real coordinator (SQLite file, gRPC on loopback, fake clock)
// driven through the generated stubs (service_fixture.h).
#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/worker_protocol.h"
#include "tests/server/service_fixture.h"

namespace prism::server::testing {
namespace {

TEST_F(ServiceTest, RestartExtendsLiveLeasesSoWorkersCanReconnect) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w = Register(worker_token_);
  const v1::TrialTask task = Lease(worker_token_, w);
  Restart();
  // The coordinator was "down" past the lease; the restart extended it.
  clock_.Advance(25'000);
  Restart();
  clock_.Advance(25'000);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 0);
  v1::ReportResponse r;
  EXPECT_TRUE(Report(worker_token_, w, task.trial(),
                     {Point(v1::SPLIT_TRAIN, 1, 1.0f)}, &r)
                  .ok());
  EXPECT_EQ(r.stored(), 1);
}

TEST_F(ServiceTest, RestartGraceCoversALeaseAHeartbeatAndTheReconnectBound) {
  Submit(alice_, Spec({"4x6"}, {1}));
  const std::string w = Register(worker_token_);
  Lease(worker_token_, w);
  Restart();
  // A worker that heartbeated just before the crash may next get through a
  // heartbeat period plus its reconnect bound after the restart.
  const int64_t grace = v1::RestartGraceMs(30, 5);
  EXPECT_GT(grace, (30 + 5) * 1000);
  clock_.Advance(grace - 1);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 0);
  clock_.Advance(2);
  EXPECT_EQ(*coordinator_->queue()->ExpireLeases(), 1);
}

}  // namespace
}  // namespace prism::server::testing
