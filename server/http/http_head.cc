#include "server/http/http_head.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace prism::server {

void RequestHeadScanner::Reset() {
  scanned_ = 0;
  line_start_ = 0;
  lines_ = 0;
  content_length_seen_ = false;
  result_ = HeadScan();
}

HeadScan RequestHeadScanner::Refuse(int status, std::string reason) {
  result_.state = HeadScan::kRefused;
  result_.status = status;
  result_.reason = std::move(reason);
  return result_;
}

bool RequestHeadScanner::Header(absl::string_view line) {
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return true;  // httplib skips it
  const absl::string_view name = line.substr(0, colon);
  const absl::string_view value =
      absl::StripAsciiWhitespace(line.substr(colon + 1));
  if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
    Refuse(411, "Transfer-Encoding is not accepted; send a Content-Length");
    return false;
  }
  if (!absl::EqualsIgnoreCase(name, "Content-Length")) return true;
  // One decimal number; 18 digits cannot overflow int64.
  if (value.empty() || value.size() > 18 ||
      !std::all_of(value.begin(), value.end(), absl::ascii_isdigit)) {
    Refuse(400, "Content-Length is not a number");
    return false;
  }
  int64_t length = 0;
  for (char c : value) length = length * 10 + (c - '0');
  if (content_length_seen_ && length != result_.content_length) {
    Refuse(400, "conflicting Content-Length headers");
    return false;
  }
  content_length_seen_ = true;
  result_.content_length = length;
  if (length > limits_.max_body_bytes) {
    Refuse(413, absl::StrCat("a request body of ", length,
                             " bytes is over the limit of ",
                             limits_.max_body_bytes));
    return false;
  }
  return true;
}

HeadScan RequestHeadScanner::Scan(absl::string_view buffer) {
  if (result_.state != HeadScan::kNeedMore) return result_;
  const size_t limit = static_cast<size_t>(limits_.max_head_bytes);
  while (scanned_ < buffer.size()) {
    const size_t end =
        buffer.find('\n', scanned_);  // within what arrived so far
    if (end == absl::string_view::npos || end >= limit) {
      scanned_ = std::min(buffer.size(), limit);
      break;
    }
    absl::string_view line = buffer.substr(line_start_, end - line_start_);
    if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
    scanned_ = end + 1;
    line_start_ = scanned_;
    if (static_cast<int64_t>(line.size()) > limits_.max_line_bytes) {
      return lines_ == 0 ? Refuse(414, "the request line is too long")
                         : Refuse(431, "a header line is too long");
    }
    if (line.empty()) {
      result_.state = HeadScan::kComplete;
      result_.head_bytes = scanned_;
      return result_;
    }
    if (lines_ > 0 && !Header(line)) return result_;
    if (++lines_ > limits_.max_headers + 1) {
      return Refuse(431, "too many header lines");
    }
  }
  // The unfinished line is over its limit already: no need to wait for
  // its end (the point of scanning here rather than in httplib).
  if (static_cast<int64_t>(scanned_ - line_start_) >
      limits_.max_line_bytes + 1) {
    return lines_ == 0 ? Refuse(414, "the request line is too long")
                       : Refuse(431, "a header line is too long");
  }
  if (scanned_ >= limit) return Refuse(431, "the request head is too long");
  return result_;
}

}  // namespace prism::server
