#include "proto/tls.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace prism {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

Bio MemoryBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// ReadPem returns the file's content; InvalidArgument naming the flag and
// the file when it cannot be read.
absl::StatusOr<std::string> ReadPem(absl::string_view flag,
                                    const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": cannot read it: it is a directory"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " ", path, ": cannot read it: ", std::strerror(errno)));
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

Cert FirstCertificate(const std::string& pem) {
  Bio bio = MemoryBio(pem);
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

absl::Status NotPem(absl::string_view flag, const std::string& path,
                    absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " ", path, ": holds no PEM ", what));
}

}  // namespace

absl::StatusOr<TlsPem> LoadTlsFiles(const TlsFiles& files,
                                    absl::string_view ca_flag) {
  if (files.cert.empty() != files.key.empty()) {
    return absl::InvalidArgumentError(
        files.cert.empty()
            ? absl::StrCat("--tls-key ", files.key, " needs --tls-cert")
            : absl::StrCat("--tls-cert ", files.cert, " needs --tls-key"));
  }
  TlsPem pem;
  if (!files.cert.empty()) {
    absl::StatusOr<std::string> cert = ReadPem("--tls-cert", files.cert);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem("--tls-key", files.key);
    if (!key.ok()) return key.status();
    Cert parsed_cert = FirstCertificate(*cert);
    if (parsed_cert == nullptr) {
      return NotPem("--tls-cert", files.cert, "certificate");
    }
    Bio key_bio = MemoryBio(*key);
    Key parsed_key(
        PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
    if (parsed_key == nullptr) {
      return NotPem("--tls-key", files.key, "private key (or it is encrypted)");
    }
    if (X509_check_private_key(parsed_cert.get(), parsed_key.get()) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-key ", files.key,
                       ": is not the key of --tls-cert ", files.cert));
    }
    pem.cert = *std::move(cert);
    pem.key = *std::move(key);
  }
  if (!files.ca.empty()) {
    absl::StatusOr<std::string> ca = ReadPem(ca_flag, files.ca);
    if (!ca.ok()) return ca.status();
    if (FirstCertificate(*ca) == nullptr) {
      return NotPem(ca_flag, files.ca, "certificate");
    }
    pem.ca = *std::move(ca);
  }
  return pem;
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(
    const TlsPem& pem) {
  if (pem.cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      pem.ca.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = pem.ca;
  options.pem_key_cert_pairs.push_back({pem.key, pem.cert});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(
    const TlsPem& pem) {
  if (pem.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pem.ca;
  options.pem_private_key = pem.key;
  options.pem_cert_chain = pem.cert;
  return grpc::SslCredentials(options);
}

}  // namespace prism
