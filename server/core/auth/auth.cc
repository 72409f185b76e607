#include "server/core/auth/auth.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/private_files.h"
#include "base/status_macros.h"
#include "proto/enum_names.h"

namespace prism::server {
namespace {

constexpr char kAdminUser[] = "admin";
constexpr size_t kMaxUserLength = 64;
// Generated tokens are 70 bytes; an admin's own (file or env) may be longer.
constexpr size_t kMaxTokenBytes = 1024;
constexpr size_t kTokenIdLength = 12;

std::string FormatTime(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

bool ValidTokenId(absl::string_view id) {
  if (id.size() != kTokenIdLength) return false;
  for (char c : id) {
    if (!absl::ascii_isdigit(c) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

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
  // mkostemp's 0600 passes through the umask: set it outright.
  const bool ok = fchmod(fd, kPrivateFileMode) == 0 &&
                  write(fd, line.data(), line.size()) ==
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

AuthManager::AuthManager(storage::TokenStore* tokens, const Clock* clock,
                         AuthOptions options)
    : tokens_(tokens),
      clock_(clock),
      options_(options),
      throttle_(clock, options.throttle) {}

absl::StatusOr<Caller> AuthManager::Authenticate(
    absl::string_view authorization, absl::string_view peer) {
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "missing credentials: send 'authorization: Bearer <token>'");
  }
  absl::string_view value = absl::StripAsciiWhitespace(authorization);
  if (!absl::StartsWithIgnoreCase(value, "bearer ")) {
    PRISM_RETURN_IF_ERROR(throttle_.Check(peer));
    throttle_.RecordFailure(peer);
    return absl::UnauthenticatedError(
        "malformed authorization: expected 'Bearer <token>'");
  }
  value.remove_prefix(7);
  return AuthenticateToken(absl::StripAsciiWhitespace(value), peer);
}

absl::StatusOr<Caller> AuthManager::AuthenticateToken(absl::string_view token,
                                                      absl::string_view peer) {
  if (token.empty()) {
    return absl::UnauthenticatedError("missing credentials: empty token");
  }
  PRISM_RETURN_IF_ERROR(throttle_.Check(peer));
  absl::StatusOr<Caller> caller =
      token.size() > kMaxTokenBytes
          ? absl::UnauthenticatedError(
                absl::StrCat("the token is ", token.size(), " bytes; limit ",
                             kMaxTokenBytes))
          : Resolve(Sha256Hex(token), clock_->NowMs());
  if (absl::IsUnauthenticated(caller.status())) throttle_.RecordFailure(peer);
  return caller;
}

absl::StatusOr<Caller> AuthManager::Resolve(const std::string& hash,
                                            int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  auto it = cache_.find(hash);
  while (it == cache_.end()) {
    // The store is read without mu_ (an unknown token must not stall every
    // cached one); a revocation meanwhile may have been read too early, so
    // the row is cached only when none happened, else read again.
    const int64_t revocations = revocations_;
    mu_.Unlock();
    absl::StatusOr<storage::TokenInfo> info = tokens_->LookupToken(hash);
    mu_.Lock();
    if (absl::IsNotFound(info.status())) {
      return absl::UnauthenticatedError("the token is not valid");
    }
    if (!info.ok()) return info.status();
    if (revocations != revocations_) {
      it = cache_.find(hash);
      continue;
    }
    if (info->revoked_ms != 0) {
      return absl::UnauthenticatedError(
          absl::StrCat("token revoked at ", FormatTime(info->revoked_ms),
                       " (id ", info->id, ")"));
    }
    it = cache_
             .emplace(hash, CachedToken{Caller{info->user, info->role},
                                        info->id, info->expires_ms, 0})
             .first;
  }
  CachedToken& cached = it->second;
  if (cached.expires_ms != 0 && now_ms >= cached.expires_ms) {
    return absl::UnauthenticatedError(
        absl::StrCat("token expired at ", FormatTime(cached.expires_ms),
                     " (id ", cached.id, ")"));
  }
  if (now_ms - cached.last_used_ms >= options_.last_used_interval_ms) {
    cached.last_used_ms = now_ms;
    unflushed_[hash] = now_ms;
  }
  return cached.caller;
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
  const int64_t max_lifetime = options_.max_lifetime_seconds;
  int64_t lifetime = request.expires_in_seconds();
  if (lifetime < 0) {
    return absl::InvalidArgumentError(
        "expires_in_seconds must not be negative (0: the default)");
  }
  if (max_lifetime > 0 && lifetime > max_lifetime) {
    return absl::InvalidArgumentError(
        absl::StrCat("a token may live at most ", max_lifetime,
                     " s (--token-max-lifetime); asked for ", lifetime, " s"));
  }
  if (lifetime == 0) lifetime = max_lifetime;
  const int64_t now_ms = clock_->NowMs();
  const int64_t expires_ms = lifetime > 0 ? now_ms + lifetime * 1000 : 0;
  PRISM_ASSIGN_OR_RETURN(std::string token, GenerateToken());
  const std::string hash = Sha256Hex(token);
  PRISM_RETURN_IF_ERROR(tokens_->CreateToken(
      hash, request.user(), request.role(), now_ms, expires_ms));
  v1::CreateTokenResponse response;
  response.set_token(token);
  response.set_user(request.user());
  response.set_role(request.role());
  response.set_id(storage::TokenIdOf(hash));
  response.set_expires_unix_ms(expires_ms);
  return response;
}

absl::StatusOr<v1::ListTokensResponse> AuthManager::ListTokens(
    const Caller& caller) {
  PRISM_RETURN_IF_ERROR(Authorize(caller, Permission::kRead));
  PRISM_RETURN_IF_ERROR(FlushLastUsed());
  PRISM_ASSIGN_OR_RETURN(
      std::vector<v1::TokenInfo> tokens,
      tokens_->ListTokens(caller.role == v1::ROLE_ADMIN ? "" : caller.user));
  v1::ListTokensResponse response;
  for (v1::TokenInfo& t : tokens) *response.add_tokens() = std::move(t);
  return response;
}

absl::StatusOr<v1::RevokeTokenResponse> AuthManager::RevokeToken(
    const Caller& caller, const v1::RevokeTokenRequest& request) {
  PRISM_RETURN_IF_ERROR(Authorize(caller, Permission::kRead));
  const std::string& id = request.id();
  if (!ValidTokenId(id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("token id '", id,
                     "' is not 12 lowercase hex digits (see prism token "
                     "list)"));
  }
  const absl::Status not_found =
      absl::NotFoundError(absl::StrCat("no token with id ", id));
  absl::StatusOr<v1::TokenInfo> token = tokens_->GetToken(id);
  if (absl::IsNotFound(token.status())) return not_found;
  if (!token.ok()) return token.status();
  if (caller.role != v1::ROLE_ADMIN && token->user() != caller.user) {
    return not_found;
  }
  PRISM_ASSIGN_OR_RETURN(v1::TokenInfo revoked,
                         tokens_->RevokeToken(id, clock_->NowMs()));
  {
    absl::MutexLock lock(&mu_);
    absl::erase_if(cache_,
                   [&id](const auto& entry) { return entry.second.id == id; });
    ++revocations_;
  }
  v1::RevokeTokenResponse response;
  *response.mutable_token() = std::move(revoked);
  return response;
}

absl::Status AuthManager::FlushLastUsed() {
  std::vector<std::pair<std::string, int64_t>> used;
  {
    absl::MutexLock lock(&mu_);
    used.assign(unflushed_.begin(), unflushed_.end());
    unflushed_.clear();
  }
  absl::Status status = tokens_->RecordTokensUsed(used);
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    for (const auto& [hash, ms] : used) {
      int64_t& kept = unflushed_[hash];
      kept = std::max(kept, ms);
    }
  }
  return status;
}

absl::StatusOr<BootstrapResult> AuthManager::Bootstrap(
    const BootstrapOptions& options) {
  BootstrapResult result;
  PRISM_ASSIGN_OR_RETURN(int64_t tokens, tokens_->CountTokens());
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
  PRISM_RETURN_IF_ERROR(tokens_->CreateToken(Sha256Hex(token), kAdminUser,
                                             v1::ROLE_ADMIN, clock_->NowMs(),
                                             /*expires_ms=*/0));
  result.created = true;
  return result;
}

}  // namespace prism::server
