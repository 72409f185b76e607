// Structured logs for the coordinator: one logfmt line per event on stderr,
//
//   ts=2024-05-01T12:00:00.123Z level=info msg="trial leased" trial=12
//   worker=w-3f
//
// built with a chain of key/values and written when the LogLine dies:
//
//   Log(LogLevel::kInfo, "trial leased").Kv("trial", id).Kv("worker", w);
//
// Lines below the process-wide level are skipped cheaply (Enabled()).
//
// Thread-safety: any thread may log; each line is written whole.
#ifndef PRISM_SERVER_LOG_H_
#define PRISM_SERVER_LOG_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace prism::server {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// SetLogLevel sets the lowest level written (default kInfo).
void SetLogLevel(LogLevel level);
// ParseLogLevel accepts debug, info, warning, error; false otherwise.
bool ParseLogLevel(absl::string_view text, LogLevel* level);
bool LogEnabled(LogLevel level);

class LogLine {
 public:
  LogLine(LogLevel level, absl::string_view msg);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;

  LogLine& Kv(absl::string_view key, absl::string_view value);
  LogLine& Kv(absl::string_view key, const std::string& value) {
    return Kv(key, absl::string_view(value));
  }
  LogLine& Kv(absl::string_view key, const char* value) {
    return Kv(key, absl::string_view(value));
  }
  LogLine& Kv(absl::string_view key, int64_t value);
  LogLine& Kv(absl::string_view key, int value) {
    return Kv(key, static_cast<int64_t>(value));
  }
  LogLine& Kv(absl::string_view key, double value);
  LogLine& Kv(absl::string_view key, bool value);

 private:
  bool enabled_;
  std::string line_;
};

// Log starts a line at `level`.
inline LogLine Log(LogLevel level, absl::string_view msg) {
  return LogLine(level, msg);
}

}  // namespace prism::server

#endif  // PRISM_SERVER_LOG_H_
