// ScheduleService over gRPC (sync API): Count, List and Check a schedule
// space with the same semantics as `prism schedules count|list|check`
// (scheduler/ does the work). Any role may call it.
//
// Thread-safety: handlers run concurrently on gRPC's threads.
#ifndef PRISM_SERVER_SCHEDULE_SERVICE_H_
#define PRISM_SERVER_SCHEDULE_SERVICE_H_

#include "prism/v1/prism.grpc.pb.h"
#include "server/auth.h"

namespace prism::server {

inline constexpr int kDefaultSchedulePageSize = 100;
inline constexpr int kMaxSchedulePageSize = 10000;

class ScheduleServiceImpl final : public v1::ScheduleService::Service {
 public:
  explicit ScheduleServiceImpl(AuthManager* auth) : auth_(auth) {}

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
};

}  // namespace prism::server

#endif  // PRISM_SERVER_SCHEDULE_SERVICE_H_
