#include "worker/log.h"

#include <unistd.h>

#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace prism::worker {

LogLine::LogLine(absl::string_view level, absl::string_view event) {
  line_ = absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                        absl::UTCTimeZone()),
                       " level=", level, " component=worker event=", event);
}

LogLine& LogLine::Add(absl::string_view key, absl::string_view value) {
  const bool quote = value.empty() ||
                     value.find_first_of(" \"=\t\n") != absl::string_view::npos;
  if (!quote) {
    absl::StrAppend(&line_, " ", key, "=", value);
    return *this;
  }
  const std::string escaped = absl::StrReplaceAll(
      value, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}, {"\t", "\\t"}});
  absl::StrAppend(&line_, " ", key, "=\"", escaped, "\"");
  return *this;
}

LogLine::~LogLine() {
  line_ += '\n';
  // One write(2) per line keeps concurrent lines whole.
  const ssize_t written = write(STDERR_FILENO, line_.data(), line_.size());
  (void)written;
}

}  // namespace prism::worker
