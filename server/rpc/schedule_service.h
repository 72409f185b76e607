// ScheduleService over gRPC (sync API): Count, List and Check a schedule
// space with the same semantics as `prism schedules count|list|check`
// (scheduler/ does the work). Any role may call it. A List page holds at
// most page_size schedules (up to kMaxSchedulePageSize) and, estimated from
// the space's depth, at most Limits::max_page_bytes: a deep space's page is
// shorter, and next_page_token continues where it stopped.
//
// Thread-safety: handlers run concurrently on gRPC's threads.
#ifndef PRISM_SERVER_RPC_SCHEDULE_SERVICE_H_
#define PRISM_SERVER_RPC_SCHEDULE_SERVICE_H_

#include "prism/v1/prism.grpc.pb.h"
#include "server/core/auth/auth.h"
#include "server/core/experiments/limits.h"
#include "server/core/infra/read_gate.h"

namespace prism::server {

inline constexpr int kDefaultSchedulePageSize = 100;
inline constexpr int kMaxSchedulePageSize = 10000;

class ScheduleServiceImpl final : public v1::ScheduleService::Service {
 public:
  ScheduleServiceImpl(AuthManager* auth, ReadGate* reads, const Limits& limits)
      : auth_(auth), reads_(reads), max_page_bytes_(limits.max_page_bytes) {}

  grpc::Status Count(grpc::ServerContext* ctx,
                     const v1::CountSchedulesRequest* req,
                     v1::CountSchedulesResponse* resp) override;
  grpc::Status List(grpc::ServerContext* ctx,
                    const v1::ListSchedulesRequest* req,
                    v1::ListSchedulesResponse* resp) override;
  grpc::Status Check(grpc::ServerContext* ctx,
                     const v1::CheckScheduleRequest* req,
                     v1::CheckScheduleResponse* resp) override;

 private:
  AuthManager* const auth_;
  ReadGate* const reads_;  // List
  const int64_t max_page_bytes_;
};

// SchedulePageSizeForBytes returns how many schedules of a `layers`-deep
// space fit in `max_page_bytes`, from an upper bound of one PrincipleReport's
// encoded size (at least 1).
int SchedulePageSizeForBytes(int layers, int64_t max_page_bytes);

}  // namespace prism::server

#endif  // PRISM_SERVER_RPC_SCHEDULE_SERVICE_H_
