#include "server/auth.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "proto/enum_names.h"

namespace prism::server {
namespace {

constexpr char kAdminUser[] = "admin";
constexpr size_t kMaxUserLength = 64;
// Generated tokens are 70 bytes; an admin's own (file or env) may be longer.
constexpr size_t kMaxTokenBytes = 1024;

bool Grants(v1::Role role, Permission permission) {
  switch (permission) {
    case Permission::kRead:
      return role == v1::ROLE_ADMIN || role == v1::ROLE_USER ||
             role == v1::ROLE_WORKER || role == v1::ROLE_VIEWER;
    case Permission::kSubmit:
      return role == v1::ROLE_ADMIN || role == v1::ROLE_USER;
    case Permission::kWork:
      return role == v1::ROLE_ADMIN || role == v1::ROLE_WORKER;
    case Permission::kAdmin:
      return role == v1::ROLE_ADMIN;
  }
  return false;
}

const char* Describe(Permission permission) {
  switch (permission) {
    case Permission::kRead:
      return "read";
    case Permission::kSubmit:
      return "submit or change experiments";
    case Permission::kWork:
      return "act as a worker";
    case Permission::kAdmin:
      return "administer tokens";
  }
  return "do this";
}

bool ValidUserName(absl::string_view user) {
  if (user.empty() || user.size() > kMaxUserLength) return false;
  for (char c : user) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.' &&
        c != '@') {
      return false;
    }
  }
  return true;
}

// WriteSecretFile writes `content` to `path` with mode 0600, refusing to
// write through a symlink: the content goes to a fresh temp file (mkstemp:
// O_CREAT | O_EXCL, mode 0600, an unpredictable name, so no planted link is
// followed), which is synced and renamed over `path`.
absl::Status WriteSecretFile(const std::string& path,
                             const std::string& content) {
  auto failed = [&path](absl::string_view why) {
    return absl::UnavailableError(
        absl::StrCat("cannot write admin token file ", path, ": ", why));
  };
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("admin token file ", path,
                     " is a symbolic link; name the file itself"));
  }
  std::string tmp = absl::StrCat(path, ".XXXXXX");
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return failed(std::strerror(errno));
  const std::string line = content + "\n";
  const bool ok = write(fd, line.data(), line.size()) ==
                      static_cast<ssize_t>(line.size()) &&
                  fsync(fd) == 0;
  const int write_errno = errno;
  close(fd);
  if (!ok) {
    unlink(tmp.c_str());
    return failed(std::strerror(write_errno));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    unlink(tmp.c_str());
    return failed(std::strerror(rename_errno));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Authorize(const Caller& caller, Permission permission) {
  if (Grants(caller.role, permission)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "user '", caller.user, "' with role ", EnumValueName(caller.role),
      " may not ", Describe(permission)));
}

absl::Status AuthorizeOwner(const Caller& caller, const std::string& owner) {
  PRISM_RETURN_IF_ERROR(Authorize(caller, Permission::kSubmit));
  if (caller.role == v1::ROLE_ADMIN || caller.user == owner) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("user '", caller.user, "' may not change experiments of '",
                   owner, "' (only their owner or an admin may)"));
}

v1::WhoAmIResponse WhoAmIFor(const Caller& caller) {
  v1::WhoAmIResponse response;
  response.set_user(caller.user);
  response.set_role(caller.role);
  return response;
}

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(),
         digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

absl::StatusOr<std::string> GenerateToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError("the system random generator failed");
  }
  return absl::StrCat(
      "prism_", absl::BytesToHexString(absl::string_view(
                    reinterpret_cast<const char*>(bytes), sizeof(bytes))));
}

AuthManager::AuthManager(storage::Store* store, const Clock* clock)
    : store_(store), clock_(clock) {}

absl::StatusOr<Caller> AuthManager::Authenticate(
    absl::string_view authorization) {
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "missing credentials: send 'authorization: Bearer <token>'");
  }
  absl::string_view value = absl::StripAsciiWhitespace(authorization);
  if (!absl::StartsWithIgnoreCase(value, "bearer ")) {
    return absl::UnauthenticatedError(
        "malformed authorization: expected 'Bearer <token>'");
  }
  value.remove_prefix(7);
  return AuthenticateToken(absl::StripAsciiWhitespace(value));
}

absl::StatusOr<Caller> AuthManager::AuthenticateToken(absl::string_view token) {
  if (token.empty()) {
    return absl::UnauthenticatedError("missing credentials: empty token");
  }
  if (token.size() > kMaxTokenBytes) {
    return absl::UnauthenticatedError(absl::StrCat(
        "the token is ", token.size(), " bytes; limit ", kMaxTokenBytes));
  }
  const std::string hash = Sha256Hex(token);
  {
    absl::MutexLock lock(&mu_);
    auto it = cache_.find(hash);
    if (it != cache_.end()) return it->second;
  }
  absl::StatusOr<storage::TokenInfo> info = store_->LookupToken(hash);
  if (absl::IsNotFound(info.status())) {
    return absl::UnauthenticatedError("the token is not valid");
  }
  if (!info.ok()) return info.status();
  Caller caller{info->user, info->role};
  absl::MutexLock lock(&mu_);
  cache_.emplace(hash, caller);
  return caller;
}

absl::StatusOr<v1::CreateTokenResponse> AuthManager::CreateToken(
    const Caller& caller, const v1::CreateTokenRequest& request) {
  PRISM_RETURN_IF_ERROR(Authorize(caller, Permission::kAdmin));
  if (!ValidUserName(request.user())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "user '", request.user(),
        "' is not a valid name (1-64 of letters, digits, - _ . @)"));
  }
  if (request.role() == v1::ROLE_UNSPECIFIED ||
      !v1::Role_IsValid(request.role())) {
    return absl::InvalidArgumentError(
        "role is required (admin, user, worker or viewer)");
  }
  PRISM_ASSIGN_OR_RETURN(std::string token, GenerateToken());
  PRISM_RETURN_IF_ERROR(store_->CreateToken(Sha256Hex(token), request.user(),
                                            request.role(), clock_->NowMs()));
  v1::CreateTokenResponse response;
  response.set_token(token);
  response.set_user(request.user());
  response.set_role(request.role());
  return response;
}

absl::StatusOr<BootstrapResult> AuthManager::Bootstrap(
    const BootstrapOptions& options) {
  BootstrapResult result;
  PRISM_ASSIGN_OR_RETURN(int64_t tokens, store_->CountTokens());
  if (tokens > 0) return result;

  std::string token;
  const std::string& file = options.admin_token_file;
  struct stat st;
  if (!file.empty() && stat(file.c_str(), &st) == 0) {
    std::ifstream in(file);
    std::stringstream content;
    content << in.rdbuf();
    token = std::string(absl::StripAsciiWhitespace(content.str()));
    if (token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("admin token file ", file, " is empty"));
    }
    result.source = "file";
  } else if (!options.env_token.empty()) {
    token = std::string(absl::StripAsciiWhitespace(options.env_token));
    if (token.empty()) {
      // Its hash would be the hash of "", which no client can send: the
      // admin would be locked out of the new database.
      return absl::InvalidArgumentError(
          "PRISM_ADMIN_TOKEN is set but blank (only whitespace); set it to "
          "a token, or unset it to generate one");
    }
    result.source = "env";
  } else {
    PRISM_ASSIGN_OR_RETURN(token, GenerateToken());
    result.source = "generated";
    if (!file.empty()) {
      PRISM_RETURN_IF_ERROR(WriteSecretFile(file, token));
    } else {
      result.token_to_print = token;
    }
  }
  if (token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the admin token (from ", result.source, ") is ",
                     token.size(), " bytes; limit ", kMaxTokenBytes));
  }
  PRISM_RETURN_IF_ERROR(store_->CreateToken(Sha256Hex(token), kAdminUser,
                                            v1::ROLE_ADMIN, clock_->NowMs()));
  result.created = true;
  return result;
}

}  // namespace prism::server
