// HTTP API requests: the routing and query parsing of HttpServer's JSON API
// as a pure function of the decoded path and query parameters (what httplib
// hands a handler), so tests and fuzz/http_query_fuzzer.cc reach it without
// a socket; likewise the state-changing POST routes from their path and
// body. The routes are listed in http_server.h.
//
//   absl::StatusOr<ApiRequest> r = ParseApiRequest(
//       "/api/v1/experiments/7/trials", {{"state", "queued"}});
//   std::get<v1::ListTrialsRequest>(*r).experiment_id();   // 7
//   absl::StatusOr<ActionRequest> a = ParseActionRequest(
//       "/api/v1/experiments/7/priority", R"({"priority": 3})");
//   std::get<v1::SetPriorityRequest>(*a).priority();         // 3
//
// Thread-safety: pure functions.
#ifndef PRISM_SERVER_HTTP_HTTP_API_H_
#define PRISM_SERVER_HTTP_HTTP_API_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/v1/prism.pb.h"

namespace prism::server {

// ApiParams are decoded query parameters; the type of httplib::Params. A
// repeated name counts by its first value.
using ApiParams = std::multimap<std::string, std::string>;

// EventStreamRequest is GET /api/v1/events?experiment={id}.
struct EventStreamRequest {
  int64_t experiment_id = 0;
};

// ApiRequest is one API call, as the RPC request it is answered by.
using ApiRequest =
    std::variant<v1::WhoAmIRequest, v1::ListExperimentsRequest,
                 v1::GetExperimentRequest, v1::RankRequest,
                 v1::ListTrialsRequest, v1::GetTrialRequest,
                 v1::ListWorkersRequest, EventStreamRequest, v1::SuggestRequest,
                 v1::LadderTransferRequest, v1::CompareRequest>;

// The suggestions GET /api/v1/experiments/{id}/suggest returns without n=.
inline constexpr int kDefaultApiSuggestions = 10;

// ParseApiRequest returns the call that `path` and `params` make. NotFound
// "no such path: PATH" when the path is no API route; InvalidArgument naming
// the value for an id that is not a positive integer, a page_size or n that
// is not an integer, or an unknown sort, state or principle.
absl::StatusOr<ApiRequest> ParseApiRequest(absl::string_view path,
                                           const ApiParams& params);

// ExperimentAction is a POST /api/v1/experiments/{id}/{verb} without a body:
// the ExperimentService call of that name on ExperimentRef{id}.
struct ExperimentAction {
  enum class Verb { kCancel, kPause, kResume, kDelete };
  Verb verb = Verb::kCancel;
  int64_t id = 0;
};

// ActionRequest is one state-changing API call, as the RPC request it is
// answered by: SetPriorityRequest for .../{id}/priority, ExtendRequest for
// .../{id}/extend, SubmitRequest (dry_run for /api/v1/plan) for
// /api/v1/plan and /api/v1/submit.
using ActionRequest = std::variant<ExperimentAction, v1::SetPriorityRequest,
                                   v1::ExtendRequest, v1::SubmitRequest>;

// ParseActionRequest returns the call a POST to `path` with `body` makes.
// The experiment routes' bodies are protobuf's JSON mapping of the request
// (the id is the path's; a body naming another id is refused), none for
// cancel, pause, resume and delete; plan's and submit's body is the spec as
// textproto (SubmitRequest.spec_text, so the coordinator reports a parse
// error with its line and column). NotFound "no such path: PATH" for any
// other path; InvalidArgument for an id that is not a positive integer, a
// body on a route that takes none, a body that is not the request's JSON
// (naming the parser's complaint), or an empty spec.
absl::StatusOr<ActionRequest> ParseActionRequest(absl::string_view path,
                                                 absl::string_view body);

}  // namespace prism::server

#endif  // PRISM_SERVER_HTTP_HTTP_API_H_
