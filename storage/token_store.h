// TokenStore: the store's role for users, their hashed tokens and their
// policies (fair-share weight and quotas). AuthManager
// (server/core/auth/auth.h) authenticates and administers tokens through it;
// ExperimentManager reads tokens and sets and reads policies, and
// QueueManager's fair share reads the policies.
//
// A write is one transaction; thread-safety and time are as storage/store.h
// says for every role.
#ifndef PRISM_STORAGE_TOKEN_STORE_H_
#define PRISM_STORAGE_TOKEN_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "prism/v1/prism.pb.h"

namespace prism::storage {

// TokenInfo is what authenticating a token needs from its row.
struct TokenInfo {
  std::string id;  // the first 12 hex digits of the hash (v1::TokenInfo.id)
  std::string user;
  v1::Role role = v1::ROLE_UNSPECIFIED;
  int64_t expires_ms = 0;  // 0: never
  int64_t revoked_ms = 0;  // 0: not revoked
};

// TokenIdOf returns the id of the token whose SHA-256 hex is `token_hash`.
inline std::string TokenIdOf(const std::string& token_hash) {
  return token_hash.substr(0, 12);
}

// UserPolicy is what an admin set for one user: the user's share of the
// workers in fair share and the user's quotas. A user without a row has
// the defaults.
struct UserPolicy {
  double share = 1.0;   // relative weight; > 0
  int max_running = 0;  // leased + running trials; 0: no quota
  // Queued trials and active (or paused) experiments at submit; 0: the
  // coordinator's default (server/core/experiments/limits.h).
  int max_queued = 0;
  int max_active = 0;
};

class TokenStore {
 public:
  virtual ~TokenStore() = default;

  // CreateToken stores `token_hash` (never the token) for `user` (created if
  // new), expiring at `expires_ms` (0: never), its id TokenIdOf(hash).
  // AlreadyExists if the hash or the id is taken.
  virtual absl::Status CreateToken(const std::string& token_hash,
                                   const std::string& user, v1::Role role,
                                   int64_t now_ms, int64_t expires_ms) = 0;
  // LookupToken returns who holds the token with this hash, revoked and
  // expired ones included; NotFound if none.
  virtual absl::StatusOr<TokenInfo> LookupToken(
      const std::string& token_hash) = 0;
  // CountTokens counts every token row, revoked and expired ones included.
  virtual absl::StatusOr<int64_t> CountTokens() = 0;
  // ListTokens returns `user`'s tokens (everyone's when empty), oldest first.
  virtual absl::StatusOr<std::vector<v1::TokenInfo>> ListTokens(
      const std::string& user) = 0;
  // GetToken returns the token with this id; NotFound if none.
  virtual absl::StatusOr<v1::TokenInfo> GetToken(const std::string& id) = 0;
  // RevokeToken marks the token revoked at now_ms and returns it; NotFound
  // if there is no such id; OK and unchanged when it already was revoked;
  // FailedPrecondition when it is the last admin token still usable (not
  // revoked, not expired at now_ms), which would lock every admin out.
  virtual absl::StatusOr<v1::TokenInfo> RevokeToken(const std::string& id,
                                                    int64_t now_ms) = 0;
  // RecordTokensUsed sets last_used_ms of each (hash, ms) pair, in one
  // transaction, never moving it back; hashes with no row are skipped.
  virtual absl::Status RecordTokensUsed(
      const std::vector<std::pair<std::string, int64_t>>& used) = 0;

  // SetUserPolicy stores `user`'s share and quotas (the user row is created
  // if new; the caller validates the values).
  virtual absl::Status SetUserPolicy(const std::string& user,
                                     const UserPolicy& policy,
                                     int64_t now_ms) = 0;
  // ListUserPolicies returns every user's policy (the defaults for users
  // no admin has set).
  virtual absl::StatusOr<std::map<std::string, UserPolicy>>
  ListUserPolicies() = 0;
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_TOKEN_STORE_H_
