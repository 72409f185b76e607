// Formatting the views share: numbers to fixed decimals, CI half-widths,
// p-values, a principle report's flags and a message's JSON mapping.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_FORMAT_H_
#define PRISM_CLI_VIEWS_FORMAT_H_

#include <string>

#include "google/protobuf/message.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// ProtoJson returns the protobuf JSON mapping of `message` (field names in
// lowerCamelCase, enums by name), pretty-printed, ending in a newline.
std::string ProtoJson(const google::protobuf::Message& message);

// PrincipleFlags returns the satisfied principles ("smooth,baseline,pow2"),
// or "none".
std::string PrincipleFlags(const v1::PrincipleReport& report);

// Fixed renders `value` to `digits` decimals: Fixed(2.61434, 4) is "2.6143".
std::string Fixed(double value, int digits);

// HalfWidth is the 95% CI half-width, "" (missing) when there is no interval
// (fewer than 2 seeds).
std::string HalfWidth(const v1::Interval& interval);

// PValue is "<0.001" below 0.001, else p to 3 decimals.
std::string PValue(double p);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_FORMAT_H_
