// Structured log lines for the worker, one event per line on stderr in logfmt
// (`key=value`, values quoted when they hold spaces), so a fleet's logs can be
// grepped and parsed:
//
//   2024-05-01T12:00:00.123Z level=info component=worker event=lease trial=3
//
//   LogLine("info", "lease").Add("trial", 3).Add("schedule", "4x6");
//
// The line is written when the LogLine is destroyed, in a single write, so
// lines from different threads never interleave.
//
// Thread-safety: each LogLine is used by one thread; any number may exist.
#ifndef PRISM_WORKER_LOG_H_
#define PRISM_WORKER_LOG_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace prism::worker {

class LogLine {
 public:
  LogLine(absl::string_view level, absl::string_view event);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;

  // Add appends `key=value`; strings are quoted when needed.
  LogLine& Add(absl::string_view key, absl::string_view value);
  LogLine& Add(absl::string_view key, const std::string& value) {
    return Add(key, absl::string_view(value));
  }
  LogLine& Add(absl::string_view key, const char* value) {
    return Add(key, absl::string_view(value));
  }
  template <typename Number>
  LogLine& Add(absl::string_view key, Number value) {
    absl::StrAppend(&line_, " ", key, "=", value);
    return *this;
  }

 private:
  std::string line_;
};

}  // namespace prism::worker

#endif  // PRISM_WORKER_LOG_H_
