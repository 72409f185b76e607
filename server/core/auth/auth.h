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
// Failures are Unauthenticated (no/unknown/expired/revoked token, each with
// its own message), PermissionDenied (the role may not), or
// ResourceExhausted (too many failures from the peer: auth_throttle.h).
//
// Tokens may expire (CreateToken's expires_in_seconds, capped by
// AuthOptions::max_lifetime_seconds) and be revoked. Known tokens are cached
// by hash; expiry is checked against the clock on every call, and
// RevokeToken drops the cache entry in the same call that writes the
// revocation, so the next call with the token is refused (the coordinator
// is the database's only writer, so no revocation happens behind its back).
// A token's last use is kept in memory, moved at most once per
// last_used_interval_ms, and written by FlushLastUsed (the coordinator calls
// it from its lease-expiry loop, every second by default, and at shutdown;
// ListTokens calls it first): the database sees at most one last-use write
// per token per interval, batched, and authenticating a call never writes.
//
//   absl::StatusOr<Caller> caller = auth.Authenticate("Bearer prism_...",
//                                                     "10.0.0.7");
//   PRISM_RETURN_IF_ERROR(Authorize(*caller, Permission::kSubmit));
//
// Thread-safety: AuthManager is thread-safe; the free functions are pure.
#ifndef PRISM_SERVER_CORE_AUTH_AUTH_H_
#define PRISM_SERVER_CORE_AUTH_AUTH_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "prism/v1/prism.pb.h"
#include "server/core/auth/auth_throttle.h"
#include "server/core/infra/clock.h"
#include "storage/token_store.h"

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

inline constexpr int64_t kDefaultLastUsedIntervalMs = 60 * 1000;

struct AuthOptions {
  // The longest lifetime a token may be given, and the lifetime of one
  // created without expires_in_seconds; 0: no limit, no default expiry.
  int64_t max_lifetime_seconds = 0;
  int64_t last_used_interval_ms = kDefaultLastUsedIntervalMs;
  AuthThrottleOptions throttle;
};

class AuthManager {
 public:
  AuthManager(storage::TokenStore* tokens, const Clock* clock,
              AuthOptions options = AuthOptions());

  // Authenticate resolves an authorization value ("Bearer <token>") sent
  // from `peer` (PeerHost form; "" for an in-process caller, never
  // throttled). Unauthenticated when it is missing, malformed, unknown,
  // expired or revoked; ResourceExhausted while the peer is throttled. A
  // presented token that fails counts against the peer; no token does not
  // (a dashboard before login sends none).
  absl::StatusOr<Caller> Authenticate(absl::string_view authorization,
                                      absl::string_view peer = "");
  // AuthenticateToken resolves a bare token, as Authenticate.
  absl::StatusOr<Caller> AuthenticateToken(absl::string_view token,
                                           absl::string_view peer = "");

  // CreateToken issues a token for (user, role). PermissionDenied unless the
  // caller is an admin; InvalidArgument for an empty/odd user name, an
  // unspecified role, or a negative lifetime or one over the maximum.
  absl::StatusOr<v1::CreateTokenResponse> CreateToken(
      const Caller& caller, const v1::CreateTokenRequest& request);
  // ListTokens returns every token for an admin, the caller's own for
  // anyone else (after FlushLastUsed).
  absl::StatusOr<v1::ListTokensResponse> ListTokens(const Caller& caller);
  // RevokeToken revokes the token `id` names, effective on its next use.
  // InvalidArgument unless the id is 12 lowercase hex digits; NotFound when
  // no token has it or (not to reveal ids) it is another user's and the
  // caller is no admin; FailedPrecondition for the last usable admin token.
  absl::StatusOr<v1::RevokeTokenResponse> RevokeToken(
      const Caller& caller, const v1::RevokeTokenRequest& request);
  // FlushLastUsed writes the last uses recorded since the previous flush;
  // on failure they are kept for the next one.
  absl::Status FlushLastUsed();

  // Bootstrap creates the first admin token ("admin", ROLE_ADMIN) when the
  // database has no token yet. InvalidArgument for an empty token file, a
  // blank (whitespace-only) PRISM_ADMIN_TOKEN, a token over 1024 bytes, or a
  // token file to write that is a symbolic link; Unavailable when the token
  // file cannot be written. A generated token is written to a fresh temp
  // file (O_EXCL, mode 0600) renamed over the file.
  absl::StatusOr<BootstrapResult> Bootstrap(const BootstrapOptions& options);

 private:
  struct CachedToken {
    Caller caller;
    std::string id;
    int64_t expires_ms = 0;    // 0: never
    int64_t last_used_ms = 0;  // as last recorded (not every use)
  };
  // Resolve checks `hash` against the cache, else the store (caching a
  // usable token), and records its use.
  absl::StatusOr<Caller> Resolve(const std::string& hash, int64_t now_ms);

  storage::TokenStore* const tokens_;
  const Clock* const clock_;
  const AuthOptions options_;
  AuthThrottle throttle_;
  absl::Mutex mu_;
  // Usable (not revoked) tokens by hash, so the database stays off every
  // RPC's path; RevokeToken erases its entry.
  absl::flat_hash_map<std::string, CachedToken> cache_ ABSL_GUARDED_BY(mu_);
  // Revocations so far: a lookup that raced one reads the row again.
  int64_t revocations_ ABSL_GUARDED_BY(mu_) = 0;
  // Last uses not yet written, by hash.
  absl::flat_hash_map<std::string, int64_t> unflushed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_AUTH_AUTH_H_
