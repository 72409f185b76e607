// Fuzzes the bounded HTTP request-head scanner (server/http/http_head.h) that
// reads every dashboard request before httplib: the input is scanned whole
// and again in two pieces split at its first byte's value (a client's bytes
// arriving in two reads); both must agree, and every answer must respect the
// limits: a complete head within max_head_bytes with a body within
// max_body_bytes, or a refusal with one of the statuses the header lists.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "server/http/http_head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace server = prism::server;
  const std::string input(reinterpret_cast<const char*>(data), size);
  server::HttpHeadLimits limits;
  limits.max_line_bytes = 96;
  limits.max_head_bytes = 512;
  limits.max_headers = 8;
  limits.max_body_bytes = 1000;

  server::RequestHeadScanner whole(limits);
  const server::HeadScan a = whole.Scan(input);
  server::RequestHeadScanner pieces(limits);
  const size_t split = size == 0 ? 0 : data[0] % (size + 1);
  server::HeadScan b = pieces.Scan(absl::string_view(input).substr(0, split));
  if (b.state == server::HeadScan::kNeedMore) b = pieces.Scan(input);

  PRISM_FUZZ_CHECK(a.state == b.state);
  if (a.state == server::HeadScan::kComplete) {
    PRISM_FUZZ_CHECK(a.head_bytes == b.head_bytes);
    PRISM_FUZZ_CHECK(a.content_length == b.content_length);
    PRISM_FUZZ_CHECK(a.head_bytes <= input.size());
    PRISM_FUZZ_CHECK(a.head_bytes <=
                     static_cast<size_t>(limits.max_head_bytes));
    PRISM_FUZZ_CHECK(a.content_length >= 0 &&
                     a.content_length <= limits.max_body_bytes);
    PRISM_FUZZ_CHECK(input[a.head_bytes - 1] == '\n');
  } else if (a.state == server::HeadScan::kRefused) {
    PRISM_FUZZ_CHECK(a.status == b.status);
    PRISM_FUZZ_CHECK(a.status == 400 || a.status == 411 || a.status == 413 ||
                     a.status == 414 || a.status == 431);
    PRISM_FUZZ_CHECK(!a.reason.empty());
  } else {
    // Still waiting: only while the input is within the head's limit.
    PRISM_FUZZ_CHECK(input.size() <
                     static_cast<size_t>(limits.max_head_bytes) + 1);
  }
  return 0;
}
