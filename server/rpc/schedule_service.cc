#include "server/rpc/schedule_service.h"

#include <algorithm>

#include "base/status_macros.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"
#include "server/core/infra/convert.h"
#include "server/rpc/grpc_edge.h"

namespace prism::server {
namespace {

absl::Status CountSpace(const v1::CountSchedulesRequest& req,
                        v1::CountSchedulesResponse* resp) {
  PRISM_ASSIGN_OR_RETURN(SpaceSpec space, SpaceFromProto(req.space()));
  PRISM_ASSIGN_OR_RETURN(SpaceCount count, CountSchedules(space));
  resp->set_count(count.value);
  resp->set_exceeds_uint64(count.exceeds_uint64);
  return absl::OkStatus();
}

absl::Status ListSpace(const v1::ListSchedulesRequest& req,
                       int64_t max_page_bytes,
                       v1::ListSchedulesResponse* resp) {
  PRISM_ASSIGN_OR_RETURN(SpaceSpec space, SpaceFromProto(req.space()));
  PRISM_ASSIGN_OR_RETURN(
      int size, ClampPageSize(req.page_size(), kDefaultSchedulePageSize,
                              kMaxSchedulePageSize));
  size = std::min(size, SchedulePageSizeForBytes(space.layers, max_page_bytes));
  PRISM_ASSIGN_OR_RETURN(SchedulePage page,
                         ListSchedules(space, size, req.page_token()));
  for (const Schedule& s : page.schedules) {
    *resp->add_schedules() =
        PrincipleReportToProto(s, ReportPrinciples(space, s), space.base_heads);
  }
  resp->set_next_page_token(page.next_page_token);
  return absl::OkStatus();
}

absl::Status CheckOne(const v1::CheckScheduleRequest& req,
                      v1::CheckScheduleResponse* resp) {
  PRISM_ASSIGN_OR_RETURN(Schedule s, ParseSchedule(req.schedule()));
  v1::SpaceSpec proto;
  proto.set_d_model(req.d_model());
  proto.set_layers(s.layers());
  proto.set_base_heads(req.base_heads());
  proto.set_min_run(req.min_run());
  proto.set_max_run(req.max_run());
  PRISM_ASSIGN_OR_RETURN(SpaceSpec space, SpaceFromProto(proto));
  PRISM_RETURN_IF_ERROR(CheckHardConstraints(space, s));
  *resp->mutable_report() =
      PrincipleReportToProto(s, ReportPrinciples(space, s), space.base_heads);
  return absl::OkStatus();
}

}  // namespace

int SchedulePageSizeForBytes(int layers, int64_t max_page_bytes) {
  // Per layer: a head count and a head dim (varints of at most 5 bytes) and
  // at most one "HxL," block of the schedule text (14 bytes); then the
  // scalar fields, tags and the element's own length prefix.
  const int64_t per_schedule = int64_t{24} * std::max(layers, 1) + 96;
  return static_cast<int>(std::clamp<int64_t>(max_page_bytes / per_schedule, 1,
                                              kMaxSchedulePageSize));
}

grpc::Status ScheduleServiceImpl::Count(grpc::ServerContext* ctx,
                                        const v1::CountSchedulesRequest* req,
                                        v1::CountSchedulesResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead,
               [&](const Caller&) { return CountSpace(*req, resp); });
}

grpc::Status ScheduleServiceImpl::List(grpc::ServerContext* ctx,
                                       const v1::ListSchedulesRequest* req,
                                       v1::ListSchedulesResponse* resp) {
  return ServeRead(auth_, reads_, ctx, [&](const Caller&) {
    return ListSpace(*req, max_page_bytes_, resp);
  });
}

grpc::Status ScheduleServiceImpl::Check(grpc::ServerContext* ctx,
                                        const v1::CheckScheduleRequest* req,
                                        v1::CheckScheduleResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead,
               [&](const Caller&) { return CheckOne(*req, resp); });
}

}  // namespace prism::server
