// BoundedHttpServer / BoundedHttpsServer: cpp-httplib servers whose
// connections are read by the coordinator, within bounds, instead of by
// httplib. httplib 0.11 (Debian 12's) buffers a request line or header line
// until it ends, however long, and parses an unread GET body as the next
// request: a client without a token could fill the coordinator's memory.
// Here each connection
//   - is admitted only while its peer address holds fewer than
//     max_connections_per_peer and the server fewer than max_connections
//     (else 503 and closed, read nothing);
//   - has each request's head scanned as it arrives (http_head.h): a line
//     over max_line_bytes or a head over max_head_bytes is answered (414,
//     431) and the connection closed, the rest never read; a body over
//     max_body_bytes (413) or a Transfer-Encoding (411) likewise, unread;
//   - must deliver a request's head and body within header_timeout_ms
//     (408 and closed otherwise), and start its next request within
//     httplib's keep-alive timeout;
// and only then does httplib parse the request, from memory, and answer it
// on the connection. A body a route does not read (a GET's) is discarded.
// A connection so holds at most max_head_bytes + max_body_bytes of input.
//
// Thread-safety: as httplib::Server; the counters are internally locked.
#ifndef PRISM_SERVER_HTTP_HTTP_CONNECTION_H_
#define PRISM_SERVER_HTTP_HTTP_CONNECTION_H_

#include <httplib.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "server/http/http_head.h"

namespace prism::server {

struct HttpConnectionLimits {
  HttpHeadLimits head;
  int max_connections = 512;
  int max_connections_per_peer = 64;
  int header_timeout_ms = 10000;
};

// ConnectionAdmission counts open connections in total and per peer.
class ConnectionAdmission {
 public:
  ConnectionAdmission(int max_total, int max_per_peer)
      : max_total_(max_total), max_per_peer_(max_per_peer) {}
  // Admit returns "" and counts the connection, or the reason it is
  // refused (a limit and its flag).
  std::string Admit(const std::string& peer);
  void Release(const std::string& peer);
  int open() const;

 private:
  const int max_total_;
  const int max_per_peer_;
  mutable absl::Mutex mu_;
  int total_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int> per_peer_ ABSL_GUARDED_BY(mu_);
};

// RefusalCounter is told the HTTP status of each request or connection the
// bounded reader refused (for metrics); may be empty.
using RefusalCounter = std::function<void(int status)>;

// ServeBoundedConnection serves one accepted socket through `process`
// (httplib's Server::process_request) as described above; `ssl_ctx`
// non-null: TLS. Closes the socket.
using ProcessRequest = std::function<bool(
    httplib::Stream& stream, bool close_connection, bool& connection_closed)>;
void ServeBoundedConnection(int sock, void* ssl_ctx,
                            const HttpConnectionLimits& limits,
                            ConnectionAdmission* admission,
                            const RefusalCounter& refused, int keep_alive_max,
                            int keep_alive_timeout_ms, int write_timeout_ms,
                            const std::function<bool()>& stopping,
                            const ProcessRequest& process);

// RefuseConnectionsOnThisThread makes ServeBoundedConnection close sockets
// at once, reading and writing nothing, on the calling thread while `on`:
// the pool runs a connection so on the accepting thread when its backlog is
// full.
void RefuseConnectionsOnThisThread(bool on);

class BoundedHttpServer final : public httplib::Server {
 public:
  BoundedHttpServer(HttpConnectionLimits limits, RefusalCounter refused);

 private:
  bool process_and_close_socket(socket_t sock) override;
  const HttpConnectionLimits limits_;
  const RefusalCounter refused_;
  ConnectionAdmission admission_;
};

class BoundedHttpsServer final : public httplib::SSLServer {
 public:
  BoundedHttpsServer(const char* cert_file, const char* key_file,
                     HttpConnectionLimits limits, RefusalCounter refused);

 private:
  bool process_and_close_socket(socket_t sock) override;
  const HttpConnectionLimits limits_;
  const RefusalCounter refused_;
  ConnectionAdmission admission_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_HTTP_HTTP_CONNECTION_H_
