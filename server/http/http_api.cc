#include "server/http/http_api.h"

#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "proto/enum_names.h"
#include "scheduler/space/principles.h"
#include "server/core/infra/convert.h"

namespace prism::server {
namespace {

constexpr absl::string_view kApiPrefix = "/api/v1/";

bool HasParam(const ApiParams& params, const char* name) {
  return params.find(name) != params.end();
}

std::string Param(const ApiParams& params, const char* name) {
  const auto it = params.lower_bound(name);
  return it != params.end() && it->first == name ? it->second : "";
}

absl::StatusOr<int64_t> PathId(absl::string_view text, const char* what) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(text, &id) || id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " id '", text, "' is not a positive integer"));
  }
  return id;
}

absl::StatusOr<int> IntParam(const ApiParams& params, const char* name) {
  if (!HasParam(params, name)) return 0;
  int value = 0;
  const std::string text = Param(params, name);
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", text, "' is not an integer"));
  }
  return value;
}

bool BoolParam(const ApiParams& params, const char* name) {
  const std::string v = absl::AsciiStrToLower(Param(params, name));
  return v == "1" || v == "true" || v == "yes";
}

// ParseSort and ParseState read optional query parameters: empty is the
// default (UNSPECIFIED), anything else must name a value.
absl::StatusOr<v1::RankSort> ParseSort(absl::string_view text) {
  if (text.empty()) return v1::RANK_SORT_UNSPECIFIED;
  return ParseEnumValue<v1::RankSort>(text, "sort");
}

absl::StatusOr<v1::TrialState> ParseState(absl::string_view text) {
  if (text.empty()) return v1::TRIAL_STATE_UNSPECIFIED;
  return ParseEnumValue<v1::TrialState>(text, "state");
}

absl::StatusOr<ApiRequest> ParseRank(int64_t id, const ApiParams& params) {
  v1::RankRequest r;
  r.set_experiment_id(id);
  const std::string require = Param(params, "require");
  if (!require.empty()) {
    PRISM_ASSIGN_OR_RETURN(PrincipleSet set, ParsePrinciples(require));
    for (Principle p : kAllPrinciples) {
      if (set.Has(p)) r.add_require(PrincipleToProto(p));
    }
  }
  PRISM_ASSIGN_OR_RETURN(v1::RankSort sort, ParseSort(Param(params, "sort")));
  r.set_sort(sort);
  r.set_descending(BoolParam(params, "descending"));
  PRISM_ASSIGN_OR_RETURN(int size, IntParam(params, "page_size"));
  r.set_page_size(size);
  r.set_page_token(Param(params, "page_token"));
  return r;
}

absl::StatusOr<ApiRequest> ParseListTrials(int64_t id,
                                           const ApiParams& params) {
  v1::ListTrialsRequest r;
  r.set_experiment_id(id);
  PRISM_ASSIGN_OR_RETURN(v1::TrialState state,
                         ParseState(Param(params, "state")));
  r.set_state(state);
  PRISM_ASSIGN_OR_RETURN(int size, IntParam(params, "page_size"));
  r.set_page_size(size);
  r.set_page_token(Param(params, "page_token"));
  return r;
}

absl::StatusOr<ApiRequest> ParseCompare(int64_t id, const ApiParams& params) {
  v1::CompareRequest r;
  r.set_experiment_id(id);
  r.set_schedule_a(Param(params, "a"));
  r.set_schedule_b(Param(params, "b"));
  if (r.schedule_a().empty() || r.schedule_b().empty()) {
    return absl::InvalidArgumentError(
        "compare needs a=<schedule> and b=<schedule>");
  }
  return r;
}

// ParseJsonBody reads a request's JSON body into `message` (an empty body
// is the empty message) and checks that an id it names is the path's.
template <typename M>
absl::StatusOr<M> ParseJsonBody(absl::string_view body, int64_t id,
                                absl::string_view route) {
  M message;
  if (!absl::StripAsciiWhitespace(body).empty()) {
    auto status = google::protobuf::util::JsonStringToMessage(std::string(body),
                                                              &message);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(route, ": the body is not a ", M::descriptor()->name(),
                       " in JSON: ", std::string(status.message())));
    }
  }
  if (message.id() != 0 && message.id() != id) {
    return absl::InvalidArgumentError(absl::StrCat(
        route, ": the body's id ", message.id(), " is not the path's ", id));
  }
  message.set_id(id);
  return message;
}

absl::StatusOr<ActionRequest> ParseExperimentAction(int64_t id,
                                                    absl::string_view verb,
                                                    absl::string_view body) {
  static constexpr std::pair<absl::string_view, ExperimentAction::Verb>
      kBodyless[] = {{"cancel", ExperimentAction::Verb::kCancel},
                     {"pause", ExperimentAction::Verb::kPause},
                     {"resume", ExperimentAction::Verb::kResume},
                     {"delete", ExperimentAction::Verb::kDelete}};
  for (const auto& [name, value] : kBodyless) {
    if (verb != name) continue;
    if (!absl::StripAsciiWhitespace(body).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name, " takes no body"));
    }
    return ExperimentAction{value, id};
  }
  if (verb == "priority") {
    return ParseJsonBody<v1::SetPriorityRequest>(body, id, verb);
  }
  return ParseJsonBody<v1::ExtendRequest>(body, id, verb);
}

}  // namespace

absl::StatusOr<ApiRequest> ParseApiRequest(absl::string_view path,
                                           const ApiParams& params) {
  absl::string_view rest = path;
  // Path segments after /api/v1/; an empty one (a trailing or doubled
  // slash) matches no route, as an id segment must not be empty.
  std::vector<absl::string_view> parts;
  if (absl::ConsumePrefix(&rest, kApiPrefix)) {
    parts = absl::StrSplit(rest, '/');
  }
  const size_t n = parts.size();
  const absl::string_view top = n > 0 ? parts[0] : "";
  const bool has_id = n >= 2 && !parts[1].empty();
  if (n == 1 && top == "whoami") return v1::WhoAmIRequest();
  if (n == 1 && top == "workers") return v1::ListWorkersRequest();
  if (n == 1 && top == "events") {
    int64_t id = 0;
    if (!absl::SimpleAtoi(Param(params, "experiment"), &id) || id <= 0) {
      return absl::InvalidArgumentError("experiment=<id> is required");
    }
    return EventStreamRequest{id};
  }
  if (n == 1 && top == "experiments") {
    v1::ListExperimentsRequest r;
    r.set_owner(Param(params, "owner"));
    PRISM_ASSIGN_OR_RETURN(int size, IntParam(params, "page_size"));
    r.set_page_size(size);
    r.set_page_token(Param(params, "page_token"));
    return r;
  }
  if (top == "experiments" && has_id &&
      (n == 2 || (n == 3 && (parts[2] == "rank" || parts[2] == "trials" ||
                             parts[2] == "suggest" || parts[2] == "ladder" ||
                             parts[2] == "compare")))) {
    PRISM_ASSIGN_OR_RETURN(int64_t id, PathId(parts[1], "experiment"));
    if (n == 2) {
      v1::GetExperimentRequest r;
      r.set_id(id);
      return r;
    }
    if (parts[2] == "compare") return ParseCompare(id, params);
    if (parts[2] == "ladder") {
      v1::LadderTransferRequest r;
      r.set_experiment_id(id);
      return r;
    }
    if (parts[2] == "suggest") {
      v1::SuggestRequest r;
      r.set_experiment_id(id);
      PRISM_ASSIGN_OR_RETURN(int count, IntParam(params, "n"));
      r.set_n(HasParam(params, "n") ? count : kDefaultApiSuggestions);
      return r;
    }
    return parts[2] == "rank" ? ParseRank(id, params)
                              : ParseListTrials(id, params);
  }
  if (top == "trials" && has_id && n == 2) {
    v1::GetTrialRequest r;
    PRISM_ASSIGN_OR_RETURN(int64_t id, PathId(parts[1], "trial"));
    r.set_trial_id(id);
    r.set_with_baseline(BoolParam(params, "with_baseline"));
    return r;
  }
  return absl::NotFoundError(absl::StrCat("no such path: ", path));
}

absl::StatusOr<ActionRequest> ParseActionRequest(absl::string_view path,
                                                 absl::string_view body) {
  absl::string_view rest = path;
  if (absl::ConsumePrefix(&rest, kApiPrefix)) {
    if (rest == "plan" || rest == "submit") {
      if (absl::StripAsciiWhitespace(body).empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(rest,
                         ": the body must be the spec as textproto; it "
                         "is empty"));
      }
      v1::SubmitRequest r;
      r.set_spec_text(std::string(body));
      r.set_dry_run(rest == "plan");
      return r;
    }
    const std::vector<absl::string_view> parts = absl::StrSplit(rest, '/');
    static constexpr absl::string_view kVerbs[] = {
        "cancel", "pause", "resume", "delete", "priority", "extend"};
    if (parts.size() == 3 && parts[0] == "experiments" && !parts[1].empty() &&
        absl::c_linear_search(kVerbs, parts[2])) {
      PRISM_ASSIGN_OR_RETURN(int64_t id, PathId(parts[1], "experiment"));
      return ParseExperimentAction(id, parts[2], body);
    }
  }
  return absl::NotFoundError(absl::StrCat("no such path: ", path));
}

}  // namespace prism::server
