// TLS for the gRPC edge, shared by the coordinator, the worker and the CLI:
// PEM files named by flags are read and checked here, so a bad flag fails
// at start-up with one line naming the file instead of a handshake error
// later, and turned into gRPC credentials.
//
//   TlsFiles files;
//   files.cert = "server.pem";  // files.key, files.ca likewise
//   absl::StatusOr<TlsPem> pem = LoadTlsFiles(files, "--tls-client-ca");
//   if (!pem.ok()) return ReportError("coordinator", pem.status());  // exit 2
//   builder.AddListeningPort(address, ServerCredentialsFor(*pem));
//
// Empty files mean insecure, as before TLS existed: a server without a
// certificate serves plaintext, a client without a CA or a certificate
// dials plaintext.
//
// Thread-safety: pure functions.
#ifndef PRISM_PROTO_TLS_H_
#define PRISM_PROTO_TLS_H_

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism {

// TlsFiles names PEM files; "" is not given.
struct TlsFiles {
  std::string cert;  // this side's certificate (chain), --tls-cert
  std::string key;   // its private key, --tls-key
  std::string ca;    // the CA certificates that verify the peer
};

// TlsPem holds the files' contents; "" where the file was not given.
struct TlsPem {
  std::string cert;
  std::string key;
  std::string ca;

  bool empty() const { return cert.empty() && key.empty() && ca.empty(); }
};

// LoadTlsFiles reads and checks `files`. Returns their contents, or
// InvalidArgument naming the flag and the file when a certificate is given
// without its key (or a key without its certificate), a file cannot be
// read, holds no PEM certificate or key, or the key does not belong to the
// certificate. `ca_flag` is how the CA's flag is spelled in messages
// (--tls-ca on a client, --tls-client-ca on the coordinator).
absl::StatusOr<TlsPem> LoadTlsFiles(const TlsFiles& files,
                                    absl::string_view ca_flag);

// ServerCredentialsFor returns insecure credentials without a certificate;
// else TLS with it, and with a CA every client must present a certificate
// that CA signed (mutual TLS).
std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(
    const TlsPem& pem);

// ChannelCredentialsFor returns insecure credentials when `pem` is empty;
// else TLS that verifies the server against the CA (the system's roots
// when none is given) and presents the certificate, if any.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(
    const TlsPem& pem);

}  // namespace prism

#endif  // PRISM_PROTO_TLS_H_
