// RequestHeadScanner: the bounded first look at an HTTP/1.1 request, before
// cpp-httplib sees it. httplib 0.11 (Debian's) reads a request line and each
// header line into a string that grows until the line ends, and parses an
// unread GET body as the next request; so the coordinator reads every
// request's head itself (server/http/http_connection.h), scans it here within
// fixed bounds, and hands httplib only a complete, bounded request.
//
//   RequestHeadScanner scanner(limits);
//   HeadScan scan = scanner.Scan(buffer);      // buffer only grows
//   if (scan.state == HeadScan::kNeedMore) ... read more, Scan again
//   if (scan.state == HeadScan::kRefused) ... answer scan.status, close
//   // kComplete: buffer[0, head_bytes) is the head; content_length follows
//
// The scan is incremental: each call looks only at bytes it has not seen,
// so a client sending a byte at a time costs linear work.
//
// Thread-safety: a scanner is used by one connection at a time.
#ifndef PRISM_SERVER_HTTP_HTTP_HEAD_H_
#define PRISM_SERVER_HTTP_HTTP_HEAD_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace prism::server {

inline constexpr int64_t kDefaultMaxHttpLineBytes = 8 << 10;
inline constexpr int64_t kDefaultMaxHttpHeadBytes = 64 << 10;
inline constexpr int kDefaultMaxHttpHeaders = 100;

struct HttpHeadLimits {
  // The request line, and each header line, without its line end.
  int64_t max_line_bytes = kDefaultMaxHttpLineBytes;
  // The whole head: request line, headers and the blank line.
  int64_t max_head_bytes = kDefaultMaxHttpHeadBytes;
  int max_headers = kDefaultMaxHttpHeaders;
  // The largest Content-Length accepted (the POST routes take small JSON
  // bodies, and the submit page a spec).
  int64_t max_body_bytes = int64_t{64} << 10;
};

struct HeadScan {
  enum State { kNeedMore, kComplete, kRefused };
  State state = kNeedMore;
  // kComplete: the head's length, blank line included, and the body's.
  size_t head_bytes = 0;
  int64_t content_length = 0;
  // kRefused: the HTTP status to answer (400, 411, 413, 414, 431) and why.
  int status = 0;
  std::string reason;
};

class RequestHeadScanner {
 public:
  explicit RequestHeadScanner(HttpHeadLimits limits) : limits_(limits) {}

  // Scan continues over `buffer`, which must start with the bytes given to
  // the previous call. kNeedMore while the head is incomplete and within
  // the limits; kComplete once the blank line arrived (Content-Length
  // parsed: 0 when absent); kRefused for a line over max_line_bytes (414
  // for the request line, 431 for a header), a head over max_head_bytes or
  // with more than max_headers (431), a Transfer-Encoding (411: send a
  // Content-Length), a Content-Length that is not one decimal number (400)
  // or over max_body_bytes (413). A result other than kNeedMore is final
  // until Reset.
  HeadScan Scan(absl::string_view buffer);
  // Reset starts over for the next request on the connection.
  void Reset();

 private:
  HeadScan Refuse(int status, std::string reason);
  // Header checks one complete header line (without its line end).
  bool Header(absl::string_view line);

  const HttpHeadLimits limits_;
  size_t scanned_ = 0;     // bytes of the buffer already looked at
  size_t line_start_ = 0;  // where the current line begins
  int lines_ = 0;          // complete lines (the request line included)
  bool content_length_seen_ = false;
  HeadScan result_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_HTTP_HTTP_HEAD_H_
