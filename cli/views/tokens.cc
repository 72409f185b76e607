#include "cli/views/tokens.h"

#include <string>

#include "proto/enum_names.h"

namespace prism::cli {

Table TokensTable(const v1::ListTokensResponse& response, int64_t now_ms) {
  const auto time = [](int64_t unix_ms) -> std::string {
    return unix_ms == 0 ? "" : FormatUtc(unix_ms);
  };
  Table table({"id", "user", "role", "state", "created", "expires", "last_used",
               "revoked"});
  for (const v1::TokenInfo& t : response.tokens()) {
    const char* state = "active";
    if (t.revoked_unix_ms() != 0) {
      state = "revoked";
    } else if (t.expires_unix_ms() != 0 && now_ms >= t.expires_unix_ms()) {
      state = "expired";
    }
    table.AddRow({t.id(), t.user(), EnumValueName(t.role()), state,
                  time(t.created_unix_ms()), time(t.expires_unix_ms()),
                  time(t.last_used_unix_ms()), time(t.revoked_unix_ms())});
  }
  return table;
}

}  // namespace prism::cli
