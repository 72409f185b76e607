// DelayRelay: a userspace TCP relay on 127.0.0.1 that forwards every
// connection to a target and holds each chunk it reads for a fixed delay in
// each direction, standing in for `tc netem delay` where the kernel has no
// sch_netem module. To stand in for loss it stalls a random fraction of the
// chunks by an extra time drawn uniformly from [stall_min, stall_max] (what
// a TCP retransmission timeout costs the stream); chunks stay in order, so a
// stalled chunk holds back those behind it, as a retransmission does. With
// no delay and no stalls it is a plain relay (the baseline to compare with).
//
//   DelayRelay::Options o;
//   o.delay = absl::Milliseconds(100);   // each way: 200 ms round trip
//   o.stall_fraction = 0.05;
//   DelayRelay relay("127.0.0.1", 50051, o);
//   worker --coordinator 127.0.0.1:<relay.port()>
//
// It is not netem: it reads what the kernel already delivered, so TCP's own
// loss recovery, windows and congestion control never see a loss; only the
// delays reach the application.
//
// Thread-safety: port() and stats() from any thread; the destructor stops
// accepting, closes every connection and joins its threads.
#ifndef PRISM_TESTS_TESTING_DELAY_RELAY_H_
#define PRISM_TESTS_TESTING_DELAY_RELAY_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace prism::testing {

class DelayRelay {
 public:
  struct Options {
    absl::Duration delay = absl::ZeroDuration();  // each way
    double stall_fraction = 0;                    // of chunks, each way
    absl::Duration stall_min = absl::Milliseconds(200);
    absl::Duration stall_max = absl::Milliseconds(1000);
    uint64_t seed = 1;
  };
  struct Stats {
    int64_t connections = 0;
    int64_t chunks = 0;
    int64_t stalled = 0;
  };

  DelayRelay(std::string target_host, int target_port, Options options)
      : target_host_(std::move(target_host)),
        target_port_(target_port),
        options_(options),
        random_(options.seed) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 ||
        bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listen_fd_, 64) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) !=
            0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~DelayRelay() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      for (const auto& c : connections_) {
        shutdown(c->client_fd, SHUT_RDWR);
        shutdown(c->target_fd, SHUT_RDWR);
        c->client_to_target.Close();
        c->target_to_client.Close();
      }
    }
    if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
    if (accept_thread_.joinable()) accept_thread_.join();
    std::vector<std::thread> threads;
    {
      absl::MutexLock lock(&mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
    absl::MutexLock lock(&mu_);
    for (const auto& c : connections_) {
      close(c->client_fd);
      close(c->target_fd);
    }
    if (listen_fd_ >= 0) close(listen_fd_);
  }

  DelayRelay(const DelayRelay&) = delete;
  DelayRelay& operator=(const DelayRelay&) = delete;

  // port is where it listens on 127.0.0.1; 0 when it could not listen.
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  Stats stats() const {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  struct Chunk {
    std::string bytes;  // empty: the sender closed its side
    absl::Time due;
  };

  // Pipe holds one direction's chunks until they are due, in order.
  class Pipe {
   public:
    void Push(Chunk chunk) {
      absl::MutexLock lock(&mu_);
      chunks_.push_back(std::move(chunk));
    }
    void Close() {
      absl::MutexLock lock(&mu_);
      closed_ = true;
    }
    // Pop waits for the next chunk; false once closed.
    bool Pop(Chunk* out) {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Pipe::HasChunkOrClosed));
      if (closed_) return false;
      *out = std::move(chunks_.front());
      chunks_.pop_front();
      return true;
    }

   private:
    bool HasChunkOrClosed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return closed_ || !chunks_.empty();
    }
    absl::Mutex mu_;
    std::deque<Chunk> chunks_ ABSL_GUARDED_BY(mu_);
    bool closed_ ABSL_GUARDED_BY(mu_) = false;
  };

  struct Connection {
    int client_fd = -1;
    int target_fd = -1;
    Pipe client_to_target;
    Pipe target_to_client;
  };

  int ConnectTarget() const {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(target_port_));
    inet_pton(AF_INET, target_host_.c_str(), &addr.sin_addr);
    if (fd < 0 ||
        connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      if (fd >= 0) close(fd);
      return -1;
    }
    return fd;
  }

  void AcceptLoop() {
    while (true) {
      const int client = accept(listen_fd_, nullptr, nullptr);
      if (client < 0) return;  // shut down
      const int target = ConnectTarget();
      if (target < 0) {
        close(client);
        continue;
      }
      const int one = 1;
      setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setsockopt(target, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      absl::MutexLock lock(&mu_);
      if (stopping_) {
        close(client);
        close(target);
        return;
      }
      ++stats_.connections;
      auto c = std::make_unique<Connection>();
      c->client_fd = client;
      c->target_fd = target;
      Connection* raw = c.get();
      connections_.push_back(std::move(c));
      threads_.emplace_back(
          [this, raw] { Read(raw->client_fd, &raw->client_to_target); });
      threads_.emplace_back(
          [this, raw] { Write(&raw->client_to_target, raw->target_fd); });
      threads_.emplace_back(
          [this, raw] { Read(raw->target_fd, &raw->target_to_client); });
      threads_.emplace_back(
          [this, raw] { Write(&raw->target_to_client, raw->client_fd); });
    }
  }

  // Read stamps each chunk from `fd` with when it is due and queues it; a
  // chunk is never due before the one ahead of it.
  void Read(int fd, Pipe* pipe) {
    absl::Time last_due = absl::InfinitePast();
    char buffer[64 * 1024];
    while (true) {
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      absl::Time due = absl::Now() + options_.delay;
      if (n > 0) {
        absl::MutexLock lock(&mu_);
        ++stats_.chunks;
        if (std::uniform_real_distribution<double>(0, 1)(random_) <
            options_.stall_fraction) {
          ++stats_.stalled;
          due += options_.stall_min +
                 (options_.stall_max - options_.stall_min) *
                     std::uniform_real_distribution<double>(0, 1)(random_);
        }
      }
      due = std::max(due, last_due);
      last_due = due;
      if (n <= 0) {
        pipe->Push({"", due});
        return;
      }
      pipe->Push({std::string(buffer, static_cast<size_t>(n)), due});
    }
  }

  // Write sends each chunk to `fd` once it is due; after the sender closed,
  // closes the sending side of `fd` too.
  void Write(Pipe* pipe, int fd) {
    Chunk chunk;
    while (pipe->Pop(&chunk)) {
      // The delay is the point of the relay (the link's latency), not a
      // wait for a state.
      const absl::Duration wait = chunk.due - absl::Now();
      if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
      if (chunk.bytes.empty()) {
        shutdown(fd, SHUT_WR);
        return;
      }
      size_t sent = 0;
      while (sent < chunk.bytes.size()) {
        const ssize_t n = send(fd, chunk.bytes.data() + sent,
                               chunk.bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;
        sent += static_cast<size_t>(n);
      }
    }
  }

  const std::string target_host_;
  const int target_port_;
  const Options options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread accept_thread_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::testing

#endif  // PRISM_TESTS_TESTING_DELAY_RELAY_H_
