#include "cli/views/format.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"

namespace prism::cli {

std::string Fixed(double value, int digits) {
  return fmt::format("{:.{}f}", value, digits);
}

std::string HalfWidth(const v1::Interval& interval) {
  if (!interval.has_high()) return "";
  return Fixed(interval.high() - interval.mean(), 4);
}

std::string PValue(double p) { return p < 0.001 ? "<0.001" : Fixed(p, 3); }

std::string ProtoJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options)
           .ok()) {
    return "{}\n";
  }
  if (json.empty() || json.back() != '\n') json += '\n';
  return json;
}

std::string PrincipleFlags(const v1::PrincipleReport& report) {
  std::vector<std::string> flags;
  if (report.smooth()) flags.push_back("smooth");
  if (report.baseline()) flags.push_back("baseline");
  if (report.pow2()) flags.push_back("pow2");
  return flags.empty() ? "none" : absl::StrJoin(flags, ",");
}

}  // namespace prism::cli
