#include "cli/client.h"

#include <grpc/support/log.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "proto/grpc_status.h"

namespace prism::cli {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> content = ReadTextFile(path);
  if (!content.ok()) return content.status();
  std::string token(absl::StripAsciiWhitespace(*content));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file ", path, " is empty"));
  }
  return token;
}

}  // namespace

void AddClientOptions(CLI::App* command, ClientOptions* options) {
  command->add_option(
      "--coordinator", options->coordinator,
      absl::StrCat("Coordinator address HOST:PORT (env PRISM_COORDINATOR; "
                   "default ",
                   kDefaultCoordinator, ")"));
  command->add_option("--token", options->token,
                      "Bearer token (env PRISM_TOKEN)");
  command->add_option(
      "--token-file", options->token_file,
      absl::StrCat("File holding the bearer token (env PRISM_TOKEN_FILE; "
                   "default ",
                   kDefaultTokenFile, " when present)"));
  const std::string tls = "TLS";
  command
      ->add_option("--tls-ca", options->tls.ca,
                   "Verify the coordinator's certificate against this CA "
                   "(PEM; env PRISM_TLS_CA); dials TLS")
      ->group(tls);
  command
      ->add_option("--tls-cert", options->tls.cert,
                   "Client certificate (PEM; env PRISM_TLS_CERT) for a "
                   "coordinator that wants one (--tls-client-ca)")
      ->group(tls);
  command
      ->add_option("--tls-key", options->tls.key,
                   "The client certificate's private key (PEM; env "
                   "PRISM_TLS_KEY)")
      ->group(tls);
}

std::string ResolveCoordinator(const ClientOptions& options) {
  if (!options.coordinator.empty()) return options.coordinator;
  return EnvOr("PRISM_COORDINATOR", kDefaultCoordinator);
}

absl::StatusOr<TlsPem> ResolveTls(const ClientOptions& options) {
  auto flag_or_env = [](const std::string& flag, const char* env) {
    return flag.empty() ? EnvOr(env, "") : flag;
  };
  TlsFiles files;
  files.ca = flag_or_env(options.tls.ca, "PRISM_TLS_CA");
  files.cert = flag_or_env(options.tls.cert, "PRISM_TLS_CERT");
  files.key = flag_or_env(options.tls.key, "PRISM_TLS_KEY");
  return LoadTlsFiles(files, "--tls-ca");
}

absl::StatusOr<std::string> ResolveToken(const ClientOptions& options) {
  if (!options.token.empty()) return options.token;
  if (!options.token_file.empty()) return ReadTokenFile(options.token_file);
  if (std::string env = EnvOr("PRISM_TOKEN", ""); !env.empty()) return env;
  if (std::string file = EnvOr("PRISM_TOKEN_FILE", ""); !file.empty()) {
    return ReadTokenFile(file);
  }
  std::error_code error;
  if (std::filesystem::exists(kDefaultTokenFile, error)) {
    return ReadTokenFile(kDefaultTokenFile);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("no token: pass --token or --token-file, or set "
                   "PRISM_TOKEN (",
                   kDefaultTokenFile, " does not exist)"));
}

namespace {

// NewChannel accepts responses of any size: the coordinator bounds what it
// sends (--max-message-bytes, 64 MiB by default), and gRPC's default 4 MiB
// receive limit would refuse a whole curve or a big page it sent.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address,
                                          const TlsPem& tls) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(address, ChannelCredentialsFor(tls), args);
}

}  // namespace

RpcClient::RpcClient(std::string address, std::string token, const TlsPem& tls)
    : address_(std::move(address)),
      authorization_("Bearer " + std::move(token)),
      tls_(!tls.empty()),
      channel_(NewChannel(address_, tls)),
      experiments_(v1::ExperimentService::NewStub(channel_)),
      workers_(v1::WorkerService::NewStub(channel_)),
      results_(v1::ResultsService::NewStub(channel_)),
      auth_(v1::AuthService::NewStub(channel_)),
      schedules_(v1::ScheduleService::NewStub(channel_)) {}

absl::StatusOr<std::unique_ptr<RpcClient>> RpcClient::Connect(
    const ClientOptions& options) {
  absl::StatusOr<std::string> token = ResolveToken(options);
  if (!token.ok()) return token.status();
  absl::StatusOr<TlsPem> tls = ResolveTls(options);
  if (!tls.ok()) return tls.status();
  return std::make_unique<RpcClient>(ResolveCoordinator(options), *token, *tls);
}

std::unique_ptr<grpc::ClientContext> RpcClient::NewContext(
    absl::Duration timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->AddMetadata("authorization", authorization_);
  if (timeout != absl::InfiniteDuration()) {
    context->set_deadline(std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(timeout));
  }
  return context;
}

absl::Status RpcClient::Check(const grpc::Status& status) const {
  const absl::Status converted = FromGrpcStatus(status);
  // gRPC's own words for the two transport failures mean little at a
  // terminal; every status the coordinator sent carries its message as is.
  if (IsCoordinatorStatus(status)) return converted;
  if (absl::IsUnavailable(converted)) {
    // gRPC says why a handshake failed after this marker, as OpenSSL put it
    // ("certificate verify failed"): worth the line, unlike the rest.
    constexpr absl::string_view kHandshake = "handshake failed: ";
    // error_message() returns a temporary std::string: keep it, a view of
    // the temporary would dangle past this statement (clang's -Wdangling).
    const std::string message = status.error_message();
    const absl::string_view grpc_message = message;
    if (const size_t at = grpc_message.find(kHandshake);
        at != grpc_message.npos) {
      absl::string_view why = grpc_message.substr(at + kHandshake.size());
      if (const size_t openssl = why.rfind("::"); openssl != why.npos) {
        why = why.substr(openssl + 2);
      }
      return absl::UnavailableError(absl::StrCat(
          "TLS handshake with coordinator at ", address_, " failed: ", why,
          " (does --tls-ca or PRISM_TLS_CA name the CA that signed its "
          "certificate, for the name dialled? does it want a client "
          "certificate, --tls-cert and --tls-key?)"));
    }
    return absl::UnavailableError(absl::StrCat(
        "cannot reach coordinator at ", address_,
        tls_ ? " over TLS (is it running? does it want a client "
               "certificate: --tls-cert and --tls-key, or PRISM_TLS_CERT and "
               "PRISM_TLS_KEY?)"
             : " (is it running? set --coordinator or PRISM_COORDINATOR; "
               "if it serves TLS, give its CA with --tls-ca or "
               "PRISM_TLS_CA)"));
  }
  if (absl::IsDeadlineExceeded(converted)) {
    return absl::DeadlineExceededError(
        absl::StrCat("coordinator at ", address_, " did not answer in time"));
  }
  return converted;
}

namespace {

std::atomic<LogLevel> g_grpc_errors_at{LogLevel::kDebug};

void ForwardGrpcLog(gpr_log_func_args* args) {
  const LogLevel level = args->severity == GPR_LOG_SEVERITY_ERROR
                             ? g_grpc_errors_at.load()
                             : LogLevel::kDebug;
  if (!LogEnabled(level)) return;
  Log(level, "grpc")
      .Kv("text", args->message)
      .Kv("source", absl::StrCat(args->file, ":", args->line));
}

}  // namespace

void RouteGrpcLogs(LogLevel errors_at) {
  g_grpc_errors_at = errors_at;
  gpr_set_log_function(ForwardGrpcLog);
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ": it is a directory"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  }
  return content.str();
}

}  // namespace prism::cli
