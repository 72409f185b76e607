// Short names for the wire enums, for people: "admin" for v1::ROLE_ADMIN,
// "queued" for v1::TRIAL_QUEUED, "val_loss" for v1::RANK_SORT_VAL_LOSS. The
// short name is the generated one without the prefix all of the enum's values
// share, lowercased, so a new enum value gets its name (and is accepted as
// input) without code here. The coordinator's HTTP API, its metrics and the
// CLI all name enum values this way.
//
//   std::cout << EnumValueName(trial.state());               // "running"
//   absl::StatusOr<v1::Role> r = ParseEnumValue<v1::Role>("viewer", "role");
//
// Thread-safety: pure functions.
#ifndef PRISM_PROTO_ENUM_NAMES_H_
#define PRISM_PROTO_ENUM_NAMES_H_

#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/generated_enum_reflection.h"

namespace prism {

// EnumValueName returns the short name of value `number` of `descriptor`;
// "unknown" for the zero (UNSPECIFIED) value and for a number the enum does
// not define.
std::string EnumValueName(const google::protobuf::EnumDescriptor& descriptor,
                          int number);

// ParseEnumValue returns the number of the value of `descriptor` that `text`
// names, by its short or its generated name, in any case ("viewer",
// "ROLE_VIEWER"). InvalidArgument "unknown <what> '<text>' (use a, b or c)"
// for anything else, the zero (UNSPECIFIED) value included.
absl::StatusOr<int> ParseEnumValue(
    const google::protobuf::EnumDescriptor& descriptor, absl::string_view text,
    absl::string_view what);

// The same for a generated enum type.
template <typename Enum, typename = std::enable_if_t<
                             google::protobuf::is_proto_enum<Enum>::value>>
std::string EnumValueName(Enum value) {
  return EnumValueName(*google::protobuf::GetEnumDescriptor<Enum>(),
                       static_cast<int>(value));
}

template <typename Enum, typename = std::enable_if_t<
                             google::protobuf::is_proto_enum<Enum>::value>>
absl::StatusOr<Enum> ParseEnumValue(absl::string_view text,
                                    absl::string_view what) {
  absl::StatusOr<int> number =
      ParseEnumValue(*google::protobuf::GetEnumDescriptor<Enum>(), text, what);
  if (!number.ok()) return number.status();
  return static_cast<Enum>(*number);
}

}  // namespace prism

#endif  // PRISM_PROTO_ENUM_NAMES_H_
