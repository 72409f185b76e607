// JSON text helpers for the places that write JSON by hand (the CLI's
// `--format json` tables, the coordinator's HTTP error bodies); protobuf
// messages go through protobuf's own JSON printer instead.
//
//   JsonString("say \"hi\"\n")  // "\"say \\\"hi\\\"\\n\""
//
// Thread-safety: pure functions.
#ifndef PRISM_BASE_JSON_H_
#define PRISM_BASE_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace prism {

// JsonString returns `text` as a quoted JSON string: quotes and backslashes
// escaped, \n and \t as such, other control characters as \u00XX. Bytes
// from 0x80 up pass through, so UTF-8 stays UTF-8.
std::string JsonString(absl::string_view text);

}  // namespace prism

#endif  // PRISM_BASE_JSON_H_
