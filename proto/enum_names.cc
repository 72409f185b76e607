#include "proto/enum_names.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"

namespace prism {
namespace {

// SharedPrefix is what every value's generated name starts with, cut back to
// an underscore: "TRIAL_" for TRIAL_STATE_UNSPECIFIED, TRIAL_QUEUED, ...
absl::string_view SharedPrefix(
    const google::protobuf::EnumDescriptor& descriptor) {
  absl::string_view prefix = descriptor.value(0)->name();
  for (int i = 1; i < descriptor.value_count(); ++i) {
    const absl::string_view name = descriptor.value(i)->name();
    size_t n = 0;
    while (n < prefix.size() && n < name.size() && prefix[n] == name[n]) ++n;
    prefix = prefix.substr(0, n);
  }
  const size_t underscore = prefix.rfind('_');
  return underscore == absl::string_view::npos
             ? absl::string_view()
             : prefix.substr(0, underscore + 1);
}

std::string ShortName(const google::protobuf::EnumValueDescriptor& value,
                      absl::string_view prefix) {
  absl::string_view name = value.name();
  absl::ConsumePrefix(&name, prefix);
  return absl::AsciiStrToLower(name);
}

}  // namespace

std::string EnumValueName(const google::protobuf::EnumDescriptor& descriptor,
                          int number) {
  const google::protobuf::EnumValueDescriptor* value =
      descriptor.FindValueByNumber(number);
  if (number == 0 || value == nullptr) return "unknown";
  return ShortName(*value, SharedPrefix(descriptor));
}

absl::StatusOr<int> ParseEnumValue(
    const google::protobuf::EnumDescriptor& descriptor, absl::string_view text,
    absl::string_view what) {
  const absl::string_view prefix = SharedPrefix(descriptor);
  const std::string lower = absl::AsciiStrToLower(text);
  std::vector<std::string> choices;
  for (int i = 0; i < descriptor.value_count(); ++i) {
    const google::protobuf::EnumValueDescriptor& value = *descriptor.value(i);
    if (value.number() == 0) continue;
    const std::string name = ShortName(value, prefix);
    if (lower == name || lower == absl::AsciiStrToLower(value.name())) {
      return value.number();
    }
    choices.push_back(name);
  }
  std::string listed = choices.empty() ? "" : choices.back();
  if (choices.size() > 1) {
    choices.pop_back();
    listed = absl::StrCat(absl::StrJoin(choices, ", "), " or ", listed);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ", what, " '", text, "' (use ", listed, ")"));
}

}  // namespace prism
