// The tokens view: `prism tokens list`' table.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_TOKENS_H_
#define PRISM_CLI_VIEWS_TOKENS_H_

#include <cstdint>

#include "cli/output.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// TokensTable: id, user, role, state (active, expired or revoked at now_ms),
// created, expires, last used and revoked times (UTC, ISO 8601; empty for
// never).
Table TokensTable(const v1::ListTokensResponse& response, int64_t now_ms);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_TOKENS_H_
