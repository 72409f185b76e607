// HTTP API requests: the routing and query parsing of HttpServer's JSON API
// as a pure function of the decoded path and query parameters (what httplib
// hands a handler), so tests and fuzz/http_query_fuzzer.cc reach it without
// a socket. The routes are listed in http_server.h.
//
//   absl::StatusOr<ApiRequest> r = ParseApiRequest(
//       "/api/v1/experiments/7/trials", {{"state", "queued"}});
//   std::get<v1::ListTrialsRequest>(*r).experiment_id();   // 7
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
using ApiRequest = std::variant<v1::WhoAmIRequest, v1::ListExperimentsRequest,
                                v1::GetExperimentRequest, v1::RankRequest,
                                v1::ListTrialsRequest, v1::GetTrialRequest,
                                v1::ListWorkersRequest, EventStreamRequest,
                                v1::SuggestRequest, v1::LadderTransferRequest>;

// The suggestions GET /api/v1/experiments/{id}/suggest returns without n=.
inline constexpr int kDefaultApiSuggestions = 10;

// ParseApiRequest returns the call that `path` and `params` make. NotFound
// "no such path: PATH" when the path is no API route; InvalidArgument naming
// the value for an id that is not a positive integer, a page_size or n that
// is not an integer, or an unknown sort, state or principle.
absl::StatusOr<ApiRequest> ParseApiRequest(absl::string_view path,
                                           const ApiParams& params);

// ParseDeletePath returns the experiment id of the one state-changing API
// route with an id, POST /api/v1/experiments/{id}/delete
// (ExperimentService.Delete). NotFound "no such path: PATH" for any other
// path; InvalidArgument for an id that is not a positive integer.
absl::StatusOr<int64_t> ParseDeletePath(absl::string_view path);

}  // namespace prism::server

#endif  // PRISM_SERVER_HTTP_HTTP_API_H_
