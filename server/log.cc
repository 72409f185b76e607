#include "server/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace prism::server {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

absl::Mutex g_write_mu;

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

std::string Timestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      now.time_since_epoch())
                      .count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm;
  gmtime_r(&secs, &tm);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec,
                         static_cast<int>(ms % 1000));
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

LogLine::LogLine(LogLevel level, absl::string_view msg)
    : enabled_(LogEnabled(level)) {
  if (enabled_) {
    line_ = absl::StrCat("ts=", Timestamp(), " level=", LevelName(level),
                         " msg=", Quote(msg));
  }
}

LogLine::~LogLine() {
  if (!enabled_) return;
  line_.push_back('\n');
  absl::MutexLock lock(&g_write_mu);
  std::fwrite(line_.data(), 1, line_.size(), stderr);
  std::fflush(stderr);
}

LogLine& LogLine::Kv(absl::string_view key, absl::string_view value) {
  if (enabled_) absl::StrAppend(&line_, " ", key, "=", Quote(value));
  return *this;
}

LogLine& LogLine::Kv(absl::string_view key, int64_t value) {
  if (enabled_) absl::StrAppend(&line_, " ", key, "=", value);
  return *this;
}

LogLine& LogLine::Kv(absl::string_view key, double value) {
  if (enabled_) absl::StrAppend(&line_, " ", key, "=", value);
  return *this;
}

LogLine& LogLine::Kv(absl::string_view key, bool value) {
  if (enabled_)
    absl::StrAppend(&line_, " ", key, "=", value ? "true" : "false");
  return *this;
}

}  // namespace prism::server
