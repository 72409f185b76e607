#include "base/log.h"

#include <atomic>
#include <cstdio>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace prism {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

absl::Mutex g_mu;
// The ` component=NAME` text every line carries, or empty.
std::string* g_component ABSL_GUARDED_BY(g_mu) = new std::string();

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

// Quote wraps values with spaces, quotes or '=' as logfmt requires.
std::string Quote(absl::string_view value) {
  bool plain = !value.empty();
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' ||
        static_cast<unsigned char>(c) < 0x20) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

bool ParseLogLevel(absl::string_view text, LogLevel* level) {
  const std::string t = absl::AsciiStrToLower(text);
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning,
                     LogLevel::kError}) {
    if (t == LevelName(l)) {
      *level = l;
      return true;
    }
  }
  return false;
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void SetLogComponent(absl::string_view component) {
  absl::MutexLock lock(&g_mu);
  *g_component =
      component.empty() ? "" : absl::StrCat(" component=", Quote(component));
}

LogLine::LogLine(LogLevel level, absl::string_view msg)
    : enabled_(LogEnabled(level)) {
  if (!enabled_) return;
  line_ = absl::StrCat("ts=",
                       absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                        absl::UTCTimeZone()),
                       " level=", LevelName(level));
  {
    absl::MutexLock lock(&g_mu);
    line_ += *g_component;
  }
  absl::StrAppend(&line_, " msg=", Quote(msg));
}

LogLine::~LogLine() {
  if (!enabled_) return;
  line_.push_back('\n');
  absl::MutexLock lock(&g_mu);
  std::fwrite(line_.data(), 1, line_.size(), stderr);
  std::fflush(stderr);
}

LogLine& LogLine::Kv(absl::string_view key, absl::string_view value) {
  if (enabled_) absl::StrAppend(&line_, " ", key, "=", Quote(value));
  return *this;
}

LogLine& LogLine::Kv(absl::string_view key, bool value) {
  if (enabled_)
    absl::StrAppend(&line_, " ", key, "=", value ? "true" : "false");
  return *this;
}

}  // namespace prism
