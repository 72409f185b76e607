#include "cli/views/tokens.h"

#include <cstdint>
#include <string>
#include <vector>

#include "proto/enum_names.h"

namespace prism::cli {

namespace {

// TokenRow is a token as of now_ms (whether it expired).
struct TokenRow {
  const v1::TokenInfo& token;
  int64_t now_ms;
};

// Time is the UTC time of `unix_ms`, "" (never) for 0.
std::string Time(int64_t unix_ms) {
  return unix_ms == 0 ? "" : FormatUtc(unix_ms);
}

constexpr Column<TokenRow> kTokenColumns[] = {
    {"id", [](const TokenRow& r) { return r.token.id(); }},
    {"user", [](const TokenRow& r) { return r.token.user(); }},
    {"role", [](const TokenRow& r) { return EnumValueName(r.token.role()); }},
    {"state",
     [](const TokenRow& r) -> std::string {
       const v1::TokenInfo& t = r.token;
       if (t.revoked_unix_ms() != 0) return "revoked";
       if (t.expires_unix_ms() != 0 && r.now_ms >= t.expires_unix_ms()) {
         return "expired";
       }
       return "active";
     }},
    {"created",
     [](const TokenRow& r) { return Time(r.token.created_unix_ms()); }},
    {"expires",
     [](const TokenRow& r) { return Time(r.token.expires_unix_ms()); }},
    {"last_used",
     [](const TokenRow& r) { return Time(r.token.last_used_unix_ms()); }},
    {"revoked",
     [](const TokenRow& r) { return Time(r.token.revoked_unix_ms()); }},
};

}  // namespace

Table TokensTable(const v1::ListTokensResponse& response, int64_t now_ms) {
  std::vector<TokenRow> rows;
  for (const v1::TokenInfo& t : response.tokens()) rows.push_back({t, now_ms});
  return TableOf<TokenRow>(kTokenColumns, rows);
}

}  // namespace prism::cli
