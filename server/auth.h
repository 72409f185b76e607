// Auth: bearer tokens, roles and the one set of rules every RPC and HTTP
// route is checked against.
//
// Tokens are "prism_" + 64 hex digits from OpenSSL's RAND_bytes (32 random
// bytes); only their SHA-256 (hex) is stored. Roles:
//   admin   everything, including CreateToken;
//   user    read, submit, and change (cancel/pause/resume/prioritise) the
//           experiments it owns;
//   worker  read and the WorkerService (register, lease, heartbeat, report,
//           complete, fail);
//   viewer  read only.
// Failures are Unauthenticated (no/unknown token) or PermissionDenied (the
// role may not), each with a message naming what is missing.
//
//   absl::StatusOr<Caller> caller = auth.Authenticate("Bearer prism_...");
//   PRISM_RETURN_IF_ERROR(Authorize(*caller, Permission::kSubmit));
//
// Thread-safety: AuthManager is thread-safe; the free functions are pure.
#ifndef PRISM_SERVER_AUTH_H_
#define PRISM_SERVER_AUTH_H_

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "prism/v1/prism.pb.h"
#include "server/clock.h"
#include "storage/store.h"

namespace prism::server {

struct Caller {
  std::string user;
  v1::Role role = v1::ROLE_UNSPECIFIED;
};

enum class Permission {
  kRead,    // any role
  kSubmit,  // user, admin
  kWork,    // worker, admin
  kAdmin,   // admin
};

// Authorize returns OK when `caller`'s role grants `permission`, else
// PermissionDenied naming the role and what it may not do.
absl::Status Authorize(const Caller& caller, Permission permission);

// AuthorizeOwner returns OK when `caller` may change an experiment owned by
// `owner` (its owner with the submit permission, or an admin).
absl::Status AuthorizeOwner(const Caller& caller, const std::string& owner);

// WhoAmIFor renders a caller as the WhoAmI RPC (and HTTP route) answer.
v1::WhoAmIResponse WhoAmIFor(const Caller& caller);

// Sha256Hex returns the lowercase hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);
// GenerateToken returns a fresh random token; Internal if the system RNG
// fails.
absl::StatusOr<std::string> GenerateToken();

// BootstrapOptions say where the first admin token of a new database comes
// from: the file's content when it exists (a symlink to it is followed:
// secret mounts are links); else env PRISM_ADMIN_TOKEN; else a generated
// token, written to the file (mode 0600, never through a symlink) when one
// was named.
struct BootstrapOptions {
  std::string admin_token_file;
  std::string env_token;  // the value of PRISM_ADMIN_TOKEN, if set
};

struct BootstrapResult {
  bool created = false;  // false: the database already had tokens
  // The generated token when it was neither read nor written to a file: the
  // caller prints it once.
  std::optional<std::string> token_to_print;
  std::string source;  // "file", "env", "generated"
};

class AuthManager {
 public:
  AuthManager(storage::Store* store, const Clock* clock);

  // Authenticate resolves an authorization value ("Bearer <token>").
  // Unauthenticated when it is missing, malformed or unknown.
  absl::StatusOr<Caller> Authenticate(absl::string_view authorization);
  // AuthenticateToken resolves a bare token.
  absl::StatusOr<Caller> AuthenticateToken(absl::string_view token);

  // CreateToken issues a token for (user, role). PermissionDenied unless the
  // caller is an admin; InvalidArgument for an empty/odd user name or an
  // unspecified role.
  absl::StatusOr<v1::CreateTokenResponse> CreateToken(
      const Caller& caller, const v1::CreateTokenRequest& request);

  // Bootstrap creates the first admin token ("admin", ROLE_ADMIN) when the
  // database has no token yet. InvalidArgument for an empty token file, a
  // blank (whitespace-only) PRISM_ADMIN_TOKEN, a token over 1024 bytes, or a
  // token file to write that is a symbolic link; Unavailable when the token
  // file cannot be written. A generated token is written to a fresh temp
  // file (O_EXCL, mode 0600) renamed over the file.
  absl::StatusOr<BootstrapResult> Bootstrap(const BootstrapOptions& options);

 private:
  storage::Store* const store_;
  const Clock* const clock_;
  absl::Mutex mu_;
  // Known token hashes. Tokens cannot be revoked in schema v1, so a positive
  // answer never goes stale; this keeps the database off every RPC's path.
  absl::flat_hash_map<std::string, Caller> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_AUTH_H_
