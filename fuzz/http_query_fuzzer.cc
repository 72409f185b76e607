// Fuzzes the HTTP API's routing and query parsing (server/http/http_api.h) with
// arbitrary request targets ("PATH?QUERY"), decoded the way httplib 0.11
// decodes a request line: decode_url on the path, parse_query_text on the
// query. A refusal must be NotFound (no route) or InvalidArgument; a parsed
// call must carry positive ids. The same path with the text after '?' as a
// body goes through the POST routes' parser (ParseActionRequest) under the
// same rules.
#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fuzz/fuzz_check.h"
#include "server/http/http_api.h"

namespace {

void CheckAction(const std::string& path, const std::string& body) {
  namespace server = prism::server;
  const absl::StatusOr<server::ActionRequest> action =
      server::ParseActionRequest(path, body);
  if (!action.ok()) {
    PRISM_FUZZ_CHECK(absl::IsNotFound(action.status()) ||
                     absl::IsInvalidArgument(action.status()));
    return;
  }
  if (const auto* a = std::get_if<server::ExperimentAction>(&*action)) {
    PRISM_FUZZ_CHECK(a->id > 0);
  } else if (const auto* r =
                 std::get_if<prism::v1::SetPriorityRequest>(&*action)) {
    PRISM_FUZZ_CHECK(r->id() > 0);
  } else if (const auto* r = std::get_if<prism::v1::ExtendRequest>(&*action)) {
    PRISM_FUZZ_CHECK(r->id() > 0);
  } else if (const auto* r = std::get_if<prism::v1::SubmitRequest>(&*action)) {
    PRISM_FUZZ_CHECK(!r->spec_text().empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace server = prism::server;
  const std::string target(reinterpret_cast<const char*>(data), size);
  const size_t q = target.find('?');
  const std::string path =
      httplib::detail::decode_url(target.substr(0, q), false);
  server::ApiParams params;
  if (q != std::string::npos) {
    httplib::detail::parse_query_text(target.substr(q + 1), params);
  }
  CheckAction(path, q == std::string::npos ? "" : target.substr(q + 1));
  const absl::StatusOr<server::ApiRequest> request =
      server::ParseApiRequest(path, params);
  if (!request.ok()) {
    PRISM_FUZZ_CHECK(absl::IsNotFound(request.status()) ||
                     absl::IsInvalidArgument(request.status()));
    return 0;
  }
  if (const auto* r = std::get_if<prism::v1::GetExperimentRequest>(&*request)) {
    PRISM_FUZZ_CHECK(r->id() > 0);
  } else if (const auto* r = std::get_if<prism::v1::RankRequest>(&*request)) {
    PRISM_FUZZ_CHECK(r->experiment_id() > 0);
  } else if (const auto* r =
                 std::get_if<prism::v1::ListTrialsRequest>(&*request)) {
    PRISM_FUZZ_CHECK(r->experiment_id() > 0);
  } else if (const auto* r =
                 std::get_if<prism::v1::GetTrialRequest>(&*request)) {
    PRISM_FUZZ_CHECK(r->trial_id() > 0);
  } else if (const auto* r =
                 std::get_if<server::EventStreamRequest>(&*request)) {
    PRISM_FUZZ_CHECK(r->experiment_id > 0);
  }
  return 0;
}
