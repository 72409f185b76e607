// RPC client helpers shared by every subcommand that talks to a coordinator
// (`prism submit`, `status`, `results`, `worker`, `run`, ...): the common
// connection flags, token lookup, channel creation with the bearer metadata,
// and the mapping of gRPC errors to one-line messages and exit statuses.
//
//   ClientOptions opts;
//   AddClientOptions(cmd, &opts);  // --coordinator --token --token-file
//                                  // --tls-ca --tls-cert --tls-key
//   ...
//   absl::StatusOr<std::unique_ptr<RpcClient>> c = RpcClient::Connect(opts);
//   v1::Experiment e;
//   absl::Status s = c->Call(&v1::ExperimentService::Stub::Get,
//                            c->experiments(), request, &e);
//   if (!s.ok()) return ReportError("status", s);  // exit 2 or 1
//
// Defaults: the coordinator is --coordinator, else $PRISM_COORDINATOR, else
// 127.0.0.1:50051. The token is --token, else the content of --token-file,
// else $PRISM_TOKEN, else $PRISM_TOKEN_FILE, else ./prism-data/admin.token
// when it exists (what `prism run` and a local coordinator write). TLS:
// --tls-ca, --tls-cert and --tls-key, else $PRISM_TLS_CA, $PRISM_TLS_CERT
// and $PRISM_TLS_KEY; with none of them the channel is plaintext, as a
// coordinator without --tls-cert serves (proto/tls.h).
//
// Error mapping (cli/output.h ExitStatusFor): InvalidArgument, NotFound,
// FailedPrecondition, Unauthenticated, PermissionDenied -> exit 2 with the
// coordinator's message; Unavailable -> exit 1 with "cannot reach
// coordinator at ADDR" with a hint at the TLS flags (a plaintext channel to
// a TLS coordinator fails the same way), or "TLS handshake with coordinator
// at ADDR failed: <OpenSSL's reason>".
//
// Thread-safety: an RpcClient may be shared by threads (gRPC stubs are
// thread-safe); ClientOptions are plain values.
#ifndef PRISM_CLI_CLIENT_H_
#define PRISM_CLI_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/log.h"
#include "prism/v1/prism.grpc.pb.h"
#include "proto/tls.h"

namespace CLI {
class App;
}

namespace prism::cli {

inline constexpr char kDefaultCoordinator[] = "127.0.0.1:50051";
inline constexpr char kDefaultTokenFile[] = "./prism-data/admin.token";
inline constexpr absl::Duration kDefaultRpcTimeout = absl::Seconds(30);

struct ClientOptions {
  std::string coordinator;  // HOST:PORT; "" takes the default
  std::string token;
  std::string token_file;
  TlsFiles tls;  // --tls-ca, --tls-cert, --tls-key
};

// AddClientOptions adds --coordinator, --token, --token-file, --tls-ca,
// --tls-cert and --tls-key to `command`.
void AddClientOptions(CLI::App* command, ClientOptions* options);

// ResolveCoordinator returns the address to dial (see the defaults above).
std::string ResolveCoordinator(const ClientOptions& options);

// ResolveTls returns the TLS files' contents (see the defaults above);
// LoadTlsFiles's errors.
absl::StatusOr<TlsPem> ResolveTls(const ClientOptions& options);

// ResolveToken returns the bearer token (see the defaults above), trimmed.
// InvalidArgument when a named token file cannot be read or is empty, or when
// no token is given anywhere.
absl::StatusOr<std::string> ResolveToken(const ClientOptions& options);

class RpcClient {
 public:
  // RpcClient dials `address` in plaintext, or over TLS when `tls` is not
  // empty.
  RpcClient(std::string address, std::string token, const TlsPem& tls = {});

  // Connect resolves the address, token and TLS files and creates the
  // channel (it connects lazily, on the first call). Returns ResolveToken's
  // and ResolveTls's errors.
  static absl::StatusOr<std::unique_ptr<RpcClient>> Connect(
      const ClientOptions& options);

  const std::string& address() const { return address_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  v1::ExperimentService::Stub* experiments() { return experiments_.get(); }
  v1::WorkerService::Stub* workers() { return workers_.get(); }
  v1::ResultsService::Stub* results() { return results_.get(); }
  v1::AuthService::Stub* auth() { return auth_.get(); }
  v1::ScheduleService::Stub* schedules() { return schedules_.get(); }

  // NewContext returns a context carrying the bearer token and a deadline
  // `timeout` from now (none for an infinite timeout, as Watch needs).
  std::unique_ptr<grpc::ClientContext> NewContext(
      absl::Duration timeout = kDefaultRpcTimeout) const;

  // Check converts a finished call's status (see the error mapping above).
  absl::Status Check(const grpc::Status& status) const;

  // Call makes one unary call with a fresh context; returns Check's status.
  template <typename Stub, typename Request, typename Response>
  absl::Status Call(grpc::Status (Stub::*method)(grpc::ClientContext*,
                                                 const Request&, Response*),
                    Stub* stub, const Request& request, Response* response,
                    absl::Duration timeout = kDefaultRpcTimeout) const {
    std::unique_ptr<grpc::ClientContext> context = NewContext(timeout);
    return Check((stub->*method)(context.get(), request, response));
  }

 private:
  const std::string address_;
  const std::string authorization_;
  const bool tls_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ExperimentService::Stub> experiments_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
  std::unique_ptr<v1::ResultsService::Stub> results_;
  std::unique_ptr<v1::AuthService::Stub> auth_;
  std::unique_ptr<v1::ScheduleService::Stub> schedules_;
};

// RouteGrpcLogs turns gRPC's own stderr lines (its errors, such as a failed
// TLS handshake) into logfmt lines, msg=grpc, at `errors_at`: main sets
// kDebug, as a one-shot command's failure is the one line ReportError
// prints; the coordinator and workers log them as warnings.
void RouteGrpcLogs(LogLevel errors_at);

// ReadTextFile returns a file's content; InvalidArgument naming the file and
// the OS error when it cannot be read.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace prism::cli

#endif  // PRISM_CLI_CLIENT_H_
