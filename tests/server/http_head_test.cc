// The bounded request-head scanner in front of httplib: what it accepts,
// what it refuses and with which status, fed whole and a byte at a time.
#include "server/http/http_head.h"

#include <string>

#include "gtest/gtest.h"

namespace prism::server {
namespace {

HttpHeadLimits Small() {
  HttpHeadLimits limits;
  limits.max_line_bytes = 64;
  limits.max_head_bytes = 256;
  limits.max_headers = 4;
  limits.max_body_bytes = 100;
  return limits;
}

HeadScan ScanAll(const std::string& text, HttpHeadLimits limits = Small()) {
  RequestHeadScanner scanner(limits);
  return scanner.Scan(text);
}

// ScanBytewise feeds one byte more per call, as a dripping client would.
HeadScan ScanBytewise(const std::string& text,
                      HttpHeadLimits limits = Small()) {
  RequestHeadScanner scanner(limits);
  HeadScan scan;
  for (size_t n = 1; n <= text.size(); ++n) {
    scan = scanner.Scan(absl::string_view(text).substr(0, n));
    if (scan.state != HeadScan::kNeedMore) return scan;
  }
  return scan;
}

TEST(RequestHeadScannerTest, CompleteHeadReportsItsLengthAndBody) {
  const std::string head =
      "POST /api/v1/logout HTTP/1.1\r\nHost: x\r\ncontent-length:  12 \r\n\r\n";
  for (const HeadScan& scan :
       {ScanAll(head + "hello world!NEXT"), ScanBytewise(head)}) {
    EXPECT_EQ(scan.state, HeadScan::kComplete);
    EXPECT_EQ(scan.head_bytes, head.size());
    EXPECT_EQ(scan.content_length, 12);
  }
}

TEST(RequestHeadScannerTest, BareLineFeedsEndLinesToo) {
  const HeadScan scan = ScanAll("GET / HTTP/1.1\nHost: x\n\n");
  EXPECT_EQ(scan.state, HeadScan::kComplete);
  EXPECT_EQ(scan.head_bytes, 24u);
  EXPECT_EQ(scan.content_length, 0);
}

TEST(RequestHeadScannerTest, IncompleteHeadNeedsMore) {
  EXPECT_EQ(ScanAll("GET / HTTP/1.1\r\nHost: x\r\n").state,
            HeadScan::kNeedMore);
  EXPECT_EQ(ScanAll("").state, HeadScan::kNeedMore);
}

TEST(RequestHeadScannerTest, LongRequestLineIs414BeforeItEnds) {
  // No line end ever comes: refused once the line is over its limit.
  const std::string line = "GET /" + std::string(200, 'a');
  for (const HeadScan& scan : {ScanAll(line), ScanBytewise(line)}) {
    EXPECT_EQ(scan.state, HeadScan::kRefused);
    EXPECT_EQ(scan.status, 414);
  }
  EXPECT_EQ(ScanAll("GET /" + std::string(59, 'a')).state,
            HeadScan::kNeedMore);  // 64 bytes: still within
}

TEST(RequestHeadScannerTest, LongHeaderLineOrHeadIs431) {
  const HeadScan line =
      ScanAll("GET / HTTP/1.1\r\nX-A: " + std::string(100, 'a'));
  EXPECT_EQ(line.state, HeadScan::kRefused);
  EXPECT_EQ(line.status, 431);
  // Short lines, but too many of them, or too many bytes in all.
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 5; ++i) many += "X-A: 1\r\n";
  EXPECT_EQ(ScanAll(many).status, 431);
  HttpHeadLimits roomy = Small();
  roomy.max_headers = 1000;
  std::string big = "GET / HTTP/1.1\r\n";
  while (big.size() < 300) big += "X-A: " + std::string(40, 'a') + "\r\n";
  const HeadScan head = ScanBytewise(big, roomy);
  EXPECT_EQ(head.state, HeadScan::kRefused);
  EXPECT_EQ(head.status, 431);
}

TEST(RequestHeadScannerTest, BodiesOverTheLimitOrChunkedAreRefused) {
  EXPECT_EQ(ScanAll("GET / HTTP/1.1\r\nContent-Length: 101\r\n\r\n").status,
            413);
  EXPECT_EQ(ScanAll("GET / HTTP/1.1\r\nContent-Length: 100\r\n\r\n").state,
            HeadScan::kComplete);
  EXPECT_EQ(
      ScanAll("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").status,
      411);
  EXPECT_EQ(ScanAll("GET / HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n").status,
            400);
  EXPECT_EQ(ScanAll("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n").status,
            400);
  EXPECT_EQ(ScanAll("GET / HTTP/1.1\r\nContent-Length: "
                    "99999999999999999999999\r\n\r\n")
                .status,
            400);
  EXPECT_EQ(ScanAll("GET / HTTP/1.1\r\nContent-Length: 5\r\n"
                    "Content-Length: 6\r\n\r\n")
                .status,
            400);
}

TEST(RequestHeadScannerTest, ResetScansTheNextRequest) {
  RequestHeadScanner scanner(Small());
  EXPECT_EQ(
      scanner.Scan("GET / HTTP/1.1\r\nContent-Length: 101\r\n\r\n").status,
      413);
  scanner.Reset();
  const HeadScan next = scanner.Scan("GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(next.state, HeadScan::kComplete);
  EXPECT_EQ(next.content_length, 0);
}

}  // namespace
}  // namespace prism::server
