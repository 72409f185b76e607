#include "server/http/http_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/json.h"

namespace prism::server {
namespace {

using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;

constexpr size_t kReadChunk = 16 << 10;
// After a refusal the connection is drained this long, this much, so the
// answer is not lost to a reset, then closed whatever the client sends.
constexpr auto kDrainTime = std::chrono::milliseconds(200);
constexpr size_t kDrainBytes = 1 << 20;

Deadline After(int ms) {
  return SteadyClock::now() + std::chrono::milliseconds(ms);
}

int MsUntil(Deadline deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - SteadyClock::now())
                      .count();
  return ms < 0 ? 0 : static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

// WaitFor polls `fd` for `events` until the deadline; false on timeout.
bool WaitFor(int fd, short events, Deadline deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, MsUntil(deadline));
    if (r > 0) return true;  // an error or hang-up: the next call says so
    if (r == 0 || errno != EINTR) return false;
  }
}

void Endpoint(const sockaddr_storage& addr, std::string* ip, int* port) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    *port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    *port = ntohs(a->sin6_port);
  }
  *ip = text;
}

// Transport is a non-blocking socket, plain or TLS, read and written by
// deadline.
class Transport {
 public:
  static constexpr ssize_t kTimeout = -2;

  Transport(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~Transport() {
    if (ssl_ != nullptr) {
      SSL_shutdown(ssl_);  // best effort: the socket is non-blocking
      SSL_free(ssl_);
    }
  }
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int fd() const { return fd_; }
  bool tls() const { return ssl_ != nullptr; }

  // Handshake completes a TLS handshake by the deadline.
  bool Handshake(Deadline deadline) {
    while (true) {
      ERR_clear_error();
      const int r = SSL_accept(ssl_);
      if (r == 1) return true;
      if (!WaitForSsl(r, deadline)) return false;
    }
  }

  // Read returns the bytes read (> 0), 0 at the end of the stream, -1 on an
  // error, kTimeout when nothing arrived by the deadline.
  ssize_t Read(char* buf, size_t n, Deadline deadline) {
    while (true) {
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int r = SSL_read(ssl_, buf, static_cast<int>(n));
        if (r > 0) return r;
        if (SSL_get_error(ssl_, r) == SSL_ERROR_ZERO_RETURN) return 0;
        if (!WaitForSsl(r, deadline)) return Timeout(deadline);
        continue;
      }
      const ssize_t r = recv(fd_, buf, n, 0);
      if (r >= 0) return r;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!WaitFor(fd_, POLLIN, deadline)) return kTimeout;
    }
  }

  // Write writes all of `data` by the deadline; false otherwise.
  bool Write(const char* data, size_t n, Deadline deadline) {
    size_t done = 0;
    while (done < n) {
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int r = SSL_write(ssl_, data + done, static_cast<int>(n - done));
        if (r > 0) {
          done += static_cast<size_t>(r);
        } else if (!WaitForSsl(r, deadline)) {
          return false;
        }
        continue;
      }
      const ssize_t r = send(fd_, data + done, n - done, MSG_NOSIGNAL);
      if (r >= 0) {
        done += static_cast<size_t>(r);
      } else if (errno == EINTR) {
        continue;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        return false;
      } else if (!WaitFor(fd_, POLLOUT, deadline)) {
        return false;
      }
    }
    return true;
  }

 private:
  // WaitForSsl waits for what a failed SSL call wants; false on an error or
  // timeout.
  bool WaitForSsl(int r, Deadline deadline) {
    switch (SSL_get_error(ssl_, r)) {
      case SSL_ERROR_WANT_READ:
        return WaitFor(fd_, POLLIN, deadline);
      case SSL_ERROR_WANT_WRITE:
        return WaitFor(fd_, POLLOUT, deadline);
      default:
        return false;
    }
  }
  ssize_t Timeout(Deadline deadline) const {
    return SteadyClock::now() >= deadline ? kTimeout : -1;
  }

  const int fd_;
  SSL* const ssl_;
};

// BufferedRequest is the httplib::Stream a request is parsed from: reads
// come from the bytes the bounded reader took in, writes go to the client.
class BufferedRequest final : public httplib::Stream {
 public:
  BufferedRequest(absl::string_view request, Transport* transport,
                  int write_timeout_ms, const std::string& remote_ip,
                  int remote_port, const std::string& local_ip, int local_port)
      : request_(request),
        transport_(transport),
        write_timeout_ms_(write_timeout_ms),
        remote_ip_(remote_ip),
        remote_port_(remote_port),
        local_ip_(local_ip),
        local_port_(local_port) {}

  bool is_readable() const override { return read_ < request_.size(); }
  bool is_writable() const override {
    return WaitFor(transport_->fd(), POLLOUT, After(write_timeout_ms_));
  }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - read_);
    std::memcpy(ptr, request_.data() + read_, n);
    read_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    return transport_->Write(ptr, size, After(write_timeout_ms_))
               ? static_cast<ssize_t>(size)
               : -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;
    port = local_port_;
  }
  socket_t socket() const override { return transport_->fd(); }

 private:
  const absl::string_view request_;
  size_t read_ = 0;
  Transport* const transport_;
  const int write_timeout_ms_;
  const std::string& remote_ip_;
  const int remote_port_;
  const std::string& local_ip_;
  const int local_port_;
};

const char* Reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Service Unavailable";
  }
}

// Refuse answers `status` with a JSON error, closes the sending side and
// drains briefly (so the answer is read, not lost to a reset).
void Refuse(Transport* t, int status, absl::string_view reason) {
  const std::string body =
      absl::StrCat("{\"error\": ", JsonString(reason), "}");
  const std::string answer = absl::StrCat(
      "HTTP/1.1 ", status, " ", Reason(status),
      "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
      "\r\nConnection: close\r\n\r\n", body);
  if (!t->Write(answer.data(), answer.size(), After(1000))) return;
  if (t->tls()) return;
  shutdown(t->fd(), SHUT_WR);
  const Deadline until = SteadyClock::now() + kDrainTime;
  char sink[kReadChunk];
  size_t drained = 0;
  while (drained < kDrainBytes) {
    const ssize_t n = t->Read(sink, sizeof(sink), until);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
}

// ReadUnlessStopping is Transport::Read that also gives up, as at the end
// of the stream, once the server is stopping: Stop waits for every
// connection's thread, and a quiet client may have seconds left.
ssize_t ReadUnlessStopping(Transport* t, char* buf, size_t n, Deadline deadline,
                           const std::function<bool()>& stopping) {
  constexpr auto kSlice = std::chrono::milliseconds(100);
  while (true) {
    const Deadline slice = std::min(deadline, SteadyClock::now() + kSlice);
    const ssize_t r = t->Read(buf, n, slice);
    if (r != Transport::kTimeout || slice == deadline) return r;
    if (stopping()) return 0;
  }
}

thread_local bool t_refuse_at_once = false;

}  // namespace

std::string ConnectionAdmission::Admit(const std::string& peer) {
  absl::MutexLock lock(&mu_);
  if (total_ >= max_total_) {
    return absl::StrCat(total_,
                        " connections are open; limit "
                        "--http-max-connections=",
                        max_total_);
  }
  int& mine = per_peer_[peer];
  if (mine >= max_per_peer_) {
    return absl::StrCat(
        mine, " connections from ", peer,
        " are open; limit --http-max-connections-per-peer=", max_per_peer_);
  }
  ++mine;
  ++total_;
  return "";
}

void ConnectionAdmission::Release(const std::string& peer) {
  absl::MutexLock lock(&mu_);
  --total_;
  auto it = per_peer_.find(peer);
  if (it != per_peer_.end() && --it->second <= 0) per_peer_.erase(it);
}

int ConnectionAdmission::open() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

void RefuseConnectionsOnThisThread(bool on) { t_refuse_at_once = on; }

void ServeBoundedConnection(int sock, void* ssl_ctx,
                            const HttpConnectionLimits& limits,
                            ConnectionAdmission* admission,
                            const RefusalCounter& refused, int keep_alive_max,
                            int keep_alive_timeout_ms, int write_timeout_ms,
                            const std::function<bool()>& stopping,
                            const ProcessRequest& process) {
  auto count = [&refused](int status) {
    if (refused) refused(status);
  };
  if (t_refuse_at_once) {  // the pool's backlog is full: not even a reply
    count(503);
    close(sock);
    return;
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  std::string remote_ip, local_ip;
  int remote_port = 0, local_port = 0;
  if (getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    Endpoint(addr, &remote_ip, &remote_port);
  }
  len = sizeof(addr);
  if (getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    Endpoint(addr, &local_ip, &local_port);
  }
  fcntl(sock, F_SETFL, fcntl(sock, F_GETFL, 0) | O_NONBLOCK);
  const std::string over = admission->Admit(remote_ip);
  {
    SSL* ssl = nullptr;
    if (ssl_ctx != nullptr && over.empty()) {
      ssl = SSL_new(static_cast<SSL_CTX*>(ssl_ctx));
      if (ssl != nullptr) SSL_set_fd(ssl, sock);
    }
    Transport transport(sock, ssl);
    if (!over.empty()) {
      count(503);
      if (ssl_ctx == nullptr) Refuse(&transport, 503, over);
    } else if (ssl_ctx == nullptr ||
               (ssl != nullptr &&
                transport.Handshake(After(limits.header_timeout_ms)))) {
      const HttpHeadLimits& head = limits.head;
      RequestHeadScanner scanner(head);
      std::string buffer;
      for (int served = 0; served < keep_alive_max && !stopping(); ++served) {
        scanner.Reset();
        // The first request has header_timeout_ms from the accept; a later
        // one the keep-alive timeout to begin, then header_timeout_ms.
        Deadline deadline =
            After(served == 0 || !buffer.empty() ? limits.header_timeout_ms
                                                 : keep_alive_timeout_ms);
        bool begun = served == 0 || !buffer.empty();
        HeadScan scan = scanner.Scan(buffer);
        size_t need = 0;
        bool ok = true;
        while (ok) {
          if (scan.state == HeadScan::kRefused) {
            count(scan.status);
            Refuse(&transport, scan.status, scan.reason);
            ok = false;
            break;
          }
          if (scan.state == HeadScan::kComplete) {
            need = scan.head_bytes + static_cast<size_t>(scan.content_length);
            if (buffer.size() >= need) break;
          }
          // Never more than the head's limit, then the announced body.
          const size_t cap = scan.state == HeadScan::kComplete
                                 ? need
                                 : static_cast<size_t>(head.max_head_bytes) + 1;
          const size_t room =
              std::min(kReadChunk, cap - std::min(cap, buffer.size()));
          if (room == 0) {
            ok = false;
            break;
          }
          const size_t old = buffer.size();
          buffer.resize(old + room);
          const ssize_t n = ReadUnlessStopping(&transport, &buffer[old], room,
                                               deadline, stopping);
          buffer.resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
          if (n == Transport::kTimeout && begun) {
            count(408);
            Refuse(&transport, 408,
                   absl::StrCat("the request did not arrive within ",
                                limits.header_timeout_ms, " ms"));
          }
          if (n <= 0) {
            ok = false;
            break;
          }
          if (!begun) {
            begun = true;
            deadline = After(limits.header_timeout_ms);
          }
          if (scan.state == HeadScan::kNeedMore) scan = scanner.Scan(buffer);
        }
        if (!ok) break;
        BufferedRequest request(absl::string_view(buffer).substr(0, need),
                                &transport, write_timeout_ms, remote_ip,
                                remote_port, local_ip, local_port);
        const bool last = served + 1 == keep_alive_max || stopping();
        bool closed = false;
        const bool answered = process(request, last, closed);
        // A body the route did not read (a GET's) is dropped with it.
        buffer.erase(0, need);
        if (!answered || closed) break;
      }
    }
  }
  admission->Release(remote_ip);
  shutdown(sock, SHUT_RDWR);
  close(sock);
}

BoundedHttpServer::BoundedHttpServer(HttpConnectionLimits limits,
                                     RefusalCounter refused)
    : limits_(limits),
      refused_(std::move(refused)),
      admission_(limits_.max_connections, limits_.max_connections_per_peer) {}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  ServeBoundedConnection(
      sock, nullptr, limits_, &admission_, refused_,
      static_cast<int>(keep_alive_max_count_),
      static_cast<int>(keep_alive_timeout_sec_ * 1000),
      static_cast<int>(write_timeout_sec_ * 1000 + write_timeout_usec_ / 1000),
      [this] { return svr_sock_ == INVALID_SOCKET; },
      [this](httplib::Stream& s, bool close, bool& closed) {
        return process_request(s, close, closed, nullptr);
      });
  return true;
}

BoundedHttpsServer::BoundedHttpsServer(const char* cert_file,
                                       const char* key_file,
                                       HttpConnectionLimits limits,
                                       RefusalCounter refused)
    : httplib::SSLServer(cert_file, key_file),
      limits_(limits),
      refused_(std::move(refused)),
      admission_(limits_.max_connections, limits_.max_connections_per_peer) {}

bool BoundedHttpsServer::process_and_close_socket(socket_t sock) {
  ServeBoundedConnection(
      sock, ssl_context(), limits_, &admission_, refused_,
      static_cast<int>(keep_alive_max_count_),
      static_cast<int>(keep_alive_timeout_sec_ * 1000),
      static_cast<int>(write_timeout_sec_ * 1000 + write_timeout_usec_ / 1000),
      [this] { return svr_sock_ == INVALID_SOCKET; },
      [this](httplib::Stream& s, bool close, bool& closed) {
        return process_request(s, close, closed, nullptr);
      });
  return true;
}

}  // namespace prism::server
