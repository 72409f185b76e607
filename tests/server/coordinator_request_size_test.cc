// Request size: the gRPC message limit fits the largest spec and
// report, and oversized calls are refused without being buffered.
// A real coordinator (SQLite file, gRPC on loopback, fake clock)
// driven through the generated stubs (coordinator_fixture.h).
#include <grpcpp/generic/generic_stub.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/experiments/limits.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server::testing {
namespace {

// RssBytes is this process's resident set (the in-process coordinator's).
int64_t RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream in(line.substr(6));
      int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

TEST(MaxRequestBytesTest, FitsTheLargestSpecAndReport) {
  Limits limits;
  EXPECT_GE(MaxRequestBytes(limits),
            limits.max_points_per_report * kMaxLossPointWireBytes);
  EXPECT_GE(MaxRequestBytes(limits), limits.max_spec_bytes);
  EXPECT_LT(MaxRequestBytes(limits), int64_t{8} << 20);
  // A full report of the largest points really is within it.
  v1::ReportRequest report;
  report.set_worker_id(std::string(limits.max_string_bytes, 'w'));
  report.set_trial_id(std::numeric_limits<int64_t>::max());
  report.set_attempt(std::numeric_limits<int32_t>::max());
  for (int i = 0; i < limits.max_points_per_report; ++i) {
    v1::LossPoint* p = report.add_points();
    p->set_split(v1::SPLIT_VAL);
    p->set_step(std::numeric_limits<int64_t>::max());
    p->set_loss(1.5f);
    p->set_learning_rate(1e-3f);
    p->set_tokens_per_second(1e9);
    p->set_elapsed_seconds(1e6);
  }
  EXPECT_LE(static_cast<int64_t>(report.ByteSizeLong()),
            MaxRequestBytes(limits));
  limits.max_message_bytes = 1 << 20;
  EXPECT_EQ(MaxRequestBytes(limits), 1 << 20);
}

// Issue #32: parallel 60 MB Submits without a token, on connections of
// their own and eight on one connection, sent by another process
// (tests/server/grpc_flood.cc), are refused and the coordinator's memory
// stays within its gRPC memory quota.
TEST_F(CoordinatorTest, OversizedRequestsAreRefusedWithoutBeingBuffered) {
  const std::string flood =
      std::string(PRISM_BINARY_DIR) + "/tests/server/grpc_flood";
  const std::string out = dir_.File("flood.out");
  const int64_t before = RssBytes();
  std::atomic<int64_t> peak{before};
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      const int64_t now = RssBytes();
      int64_t seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const std::string command = absl::StrCat(
      flood, " ", coordinator_->grpc_address(), " 9 8 60000000 > ", out);
  const int rc = std::system(command.c_str());
  done = true;
  sampler.join();
  ASSERT_EQ(rc, 0) << command;
  std::ifstream codes(out);
  int code = 0, calls = 0;
  while (codes >> code) {
    ++calls;
    // Over the size limit, or cut off by the memory quota (its connection
    // closed).
    EXPECT_TRUE(code == grpc::StatusCode::RESOURCE_EXHAUSTED ||
                code == grpc::StatusCode::UNAVAILABLE)
        << code;
  }
  EXPECT_EQ(calls, 16);
  const int64_t growth = peak.load() - before;
  std::cout << "RSS before " << before / 1024 << " KiB, peak during " << calls
            << " oversized calls +" << growth / 1024 << " KiB\n";
  // gRPC 1.51 assembles a message before checking its size: what bounds
  // this is the memory quota (--grpc-max-buffered-bytes, 32 MiB), which gRPC
  // enforces after the fact; 16 x 60 MB got through to 550 MB without it.
  EXPECT_LT(growth, int64_t{112} << 20);
  // Still serving.
  v1::ListExperimentsResponse list;
  auto ctx = Ctx(kAdminToken);
  EXPECT_TRUE(
      experiments_->List(ctx.get(), v1::ListExperimentsRequest(), &list).ok());
}

// Issue #40: a request gRPC cannot parse (groups of unknown fields nested
// past protobuf's depth limit, or bytes that are no message) is the caller's
// fault: INVALID_ARGUMENT naming the method, where gRPC itself answers
// INTERNAL with an empty message. Nothing is stored, and the coordinator
// serves the next call.
TEST_F(CoordinatorTest, UnparsableRequestsAreInvalidArguments) {
  // Field 1000 as a group (start tag wire type 3, end tag 4), 200 deep.
  std::string nested;
  const std::string start = "\xc3\x3e", end = "\xc4\x3e";
  for (int i = 0; i < 200; ++i) nested += start;
  for (int i = 0; i < 200; ++i) nested += end;
  v1::ExperimentSpec probe;
  ASSERT_FALSE(probe.ParseFromString(nested));      // the premise
  ASSERT_TRUE(probe.ParseFromString(start + end));  // one level parses

  grpc::GenericStub generic(channel_);
  for (const std::string& bytes : {nested, std::string("\xff\xff\xff")}) {
    SCOPED_TRACE(bytes.size());
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", absl::StrCat("Bearer ", kAdminToken));
    const grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    std::mutex mu;
    std::condition_variable cv;
    std::optional<grpc::Status> status;
    generic.UnaryCall(&ctx, "/prism.v1.ExperimentService/Submit",
                      grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) {
                        std::lock_guard<std::mutex> lock(mu);
                        status = std::move(s);
                        cv.notify_one();
                      });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return status.has_value(); });
    EXPECT_EQ(status->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status->error_message(),
                ::testing::HasSubstr("not a valid message for "
                                     "/prism.v1.ExperimentService/Submit"));
  }
  v1::ListExperimentsResponse list;
  auto ctx = Ctx(kAdminToken);
  ASSERT_TRUE(
      experiments_->List(ctx.get(), v1::ListExperimentsRequest(), &list).ok());
  EXPECT_EQ(list.experiments_size(), 0);
}

}  // namespace
}  // namespace prism::server::testing
