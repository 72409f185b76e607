// Structured logs: one logfmt line per event on stderr,
//
//   ts=2024-05-01T12:00:00.123Z level=info msg="trial leased" trial=12
//   worker=w-3f
//
// built with a chain of key/values and written when the LogLine dies:
//
//   Log(LogLevel::kInfo, "trial leased").Kv("trial", id).Kv("worker", w);
//
// Lines below the process-wide level are skipped cheaply (LogEnabled()). A
// process may name its role once (SetLogComponent("worker")); every line then
// carries `component=worker` after the level, so a fleet's mixed logs can be
// grepped by role.
//
// Thread-safety: any thread may log; each line is written whole. Set the level
// and component at startup, before other threads log.
#ifndef PRISM_BASE_LOG_H_
#define PRISM_BASE_LOG_H_

#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace prism {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// SetLogLevel sets the lowest level written (default kInfo).
void SetLogLevel(LogLevel level);
// ParseLogLevel accepts debug, info, warning, error (any case) and returns
// true with `*level` set; false, leaving `*level` alone, otherwise.
bool ParseLogLevel(absl::string_view text, LogLevel* level);
// LogEnabled is true when a line at `level` would be written.
bool LogEnabled(LogLevel level);
// SetLogComponent names the process's role on every later line
// (`component=<name>`); empty (the default) leaves the key out.
void SetLogComponent(absl::string_view component);

class LogLine {
 public:
  LogLine(LogLevel level, absl::string_view msg);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;

  // Kv appends ` key=value`; strings are quoted when logfmt needs it (empty,
  // spaces, quotes, '=', backslashes or control characters).
  LogLine& Kv(absl::string_view key, absl::string_view value);
  LogLine& Kv(absl::string_view key, const std::string& value) {
    return Kv(key, absl::string_view(value));
  }
  LogLine& Kv(absl::string_view key, const char* value) {
    return Kv(key, absl::string_view(value));
  }
  LogLine& Kv(absl::string_view key, bool value);
  template <typename Number,
            typename = std::enable_if_t<std::is_arithmetic_v<Number>>>
  LogLine& Kv(absl::string_view key, Number value) {
    if (enabled_) absl::StrAppend(&line_, " ", key, "=", value);
    return *this;
  }

 private:
  bool enabled_;
  std::string line_;
};

// Log starts a line at `level`.
inline LogLine Log(LogLevel level, absl::string_view msg) {
  return LogLine(level, msg);
}

}  // namespace prism

#endif  // PRISM_BASE_LOG_H_
