// `prism workers`, `prism token create|list|revoke`, `prism whoami`,
// `prism user set|list`: the fleet, the team's tokens, and each user's
// fair-share weight and quotas.
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "cli/client.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/views.h"
#include "proto/enum_names.h"

namespace prism::cli {
namespace {

// FormatOptions are the flags of a command that only reads: where to
// connect and how to print.
struct FormatOptions {
  ClientOptions client;
  std::string format = "text";
};

struct WorkersOptions {
  ClientOptions client;
  std::string format = "text";
  bool all = false;
};

int Workers(const WorkersOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("workers", format.status());
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("workers", client.status());
  v1::ListWorkersResponse response;
  absl::Status status = (*client)->Call(&v1::WorkerService::Stub::ListWorkers,
                                        (*client)->workers(),
                                        v1::ListWorkersRequest(), &response);
  if (!status.ok()) return ReportError("workers", status);
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  const int hidden = o.all ? 0 : DropGoneWorkers(&response, now_ms);
  if (*format == Format::kJson) {
    std::cout << ProtoJson(response);
  } else if (response.workers().empty() && *format == Format::kText) {
    std::cout << (hidden > 0 ? "no live workers" : "no workers registered")
              << " (start one with prism worker)\n";
  } else {
    WorkersTable(response, now_ms).Print(std::cout, *format);
  }
  if (hidden > 0 && *format == Format::kText) {
    std::cout << hidden << " worker" << (hidden == 1 ? "" : "s")
              << " stopped or lost over an hour ago not shown (--all lists "
                 "them)\n";
  }
  return kExitOk;
}

struct TokenOptions {
  ClientOptions client;
  std::string user;
  std::string role;
  std::string expires_in;  // "" : the coordinator's default
  std::string format = "text";
};

int CreateToken(const TokenOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format, /*allow_csv=*/false);
  if (!format.ok()) return ReportError("token create", format.status());
  absl::StatusOr<v1::Role> role = ParseEnumValue<v1::Role>(o.role, "role");
  if (!role.ok()) return ReportError("token create", role.status());
  v1::CreateTokenRequest request;
  if (!o.expires_in.empty()) {
    absl::StatusOr<int64_t> seconds = ParseDurationSeconds(o.expires_in);
    if (seconds.ok() && *seconds == 0) {
      seconds = absl::InvalidArgumentError(
          "--expires-in must be positive (omit it for the default)");
    }
    if (!seconds.ok()) return ReportError("token create", seconds.status());
    request.set_expires_in_seconds(*seconds);
  }
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("token create", client.status());
  request.set_user(o.user);
  request.set_role(*role);
  v1::CreateTokenResponse response;
  absl::Status status = (*client)->Call(&v1::AuthService::Stub::CreateToken,
                                        (*client)->auth(), request, &response);
  if (!status.ok()) return ReportError("token create", status);
  if (*format == Format::kJson) {
    std::cout << ProtoJson(response);
    return kExitOk;
  }
  // The token alone on stdout, so `$(prism token create ...)` captures it.
  std::cout << response.token() << "\n";
  std::cerr << "token " << response.id() << " for " << response.user()
            << " (role " << EnumValueName(response.role()) << ", "
            << (response.expires_unix_ms() == 0
                    ? std::string("never expires")
                    : "expires " + FormatUtc(response.expires_unix_ms()))
            << "); it is shown only once: only its hash is stored\n";
  return kExitOk;
}

int ListTokens(const FormatOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("token list", format.status());
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("token list", client.status());
  v1::ListTokensResponse response;
  absl::Status status =
      (*client)->Call(&v1::AuthService::Stub::ListTokens, (*client)->auth(),
                      v1::ListTokensRequest(), &response);
  if (!status.ok()) return ReportError("token list", status);
  if (*format == Format::kJson) {
    std::cout << ProtoJson(response);
  } else {
    TokensTable(response, absl::ToUnixMillis(absl::Now()))
        .Print(std::cout, *format);
  }
  return kExitOk;
}

struct TokenRevokeOptions {
  ClientOptions client;
  std::string id;
  std::string format = "text";
};

int RevokeToken(const TokenRevokeOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format, /*allow_csv=*/false);
  if (!format.ok()) return ReportError("token revoke", format.status());
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("token revoke", client.status());
  v1::RevokeTokenRequest request;
  request.set_id(o.id);
  v1::RevokeTokenResponse response;
  absl::Status status = (*client)->Call(&v1::AuthService::Stub::RevokeToken,
                                        (*client)->auth(), request, &response);
  if (!status.ok()) return ReportError("token revoke", status);
  if (*format == Format::kJson) {
    std::cout << ProtoJson(response);
  } else {
    std::cout << "revoked token " << response.token().id() << " of "
              << Printable(response.token().user()) << "\n";
  }
  return kExitOk;
}

int WhoAmI(const FormatOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format, /*allow_csv=*/false);
  if (!format.ok()) return ReportError("whoami", format.status());
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("whoami", client.status());
  v1::WhoAmIResponse response;
  absl::Status status =
      (*client)->Call(&v1::AuthService::Stub::WhoAmI, (*client)->auth(),
                      v1::WhoAmIRequest(), &response);
  if (!status.ok()) return ReportError("whoami", status);
  if (*format == Format::kJson) {
    std::cout << ProtoJson(response);
  } else {
    std::cout << response.user() << " (role " << EnumValueName(response.role())
              << ") at " << (*client)->address() << "\n";
  }
  return kExitOk;
}

struct UserSetOptions {
  ClientOptions client;
  std::string user;
  std::optional<double> share;
  std::optional<int> max_running;
  std::optional<int> max_queued;
  std::optional<int> max_active;
  std::string format = "text";
};

Table UsersTable(const v1::ListUsersResponse& response) {
  // The quotas in force; "-" where none holds, "*" marks the coordinator's
  // default (an admin set none for the user).
  Table table({"user", "share", "usage", "usage_per_share", "running", "queued",
               "active", "max_running", "max_queued", "max_active"});
  auto quota = [](int n) { return n > 0 ? absl::StrCat(n) : std::string("-"); };
  auto in_force = [](int set, int effective) {
    if (effective <= 0) return std::string("-");
    return absl::StrCat(effective, set > 0 ? "" : "*");
  };
  for (const v1::UserPolicy& u : response.users()) {
    table.AddRow({u.user(), absl::StrFormat("%g", u.share()),
                  absl::StrFormat("%.0fs", u.usage_seconds()),
                  absl::StrFormat("%.0fs", u.usage_per_share()),
                  absl::StrCat(u.running()), absl::StrCat(u.queued()),
                  absl::StrCat(u.active()), quota(u.max_running()),
                  in_force(u.max_queued(), u.effective_max_queued()),
                  in_force(u.max_active(), u.effective_max_active())});
  }
  return table;
}

int SetUser(const UserSetOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("user set", format.status());
  // Refused here too, naming the flag, before any connection.
  if (o.share.has_value() && !(std::isfinite(*o.share) && *o.share > 0)) {
    return ReportError("user set",
                       absl::InvalidArgumentError(absl::StrCat(
                           "--share must be above 0 (got ", *o.share, ")")));
  }
  if (o.max_running.has_value() && *o.max_running < 0) {
    return ReportError(
        "user set", absl::InvalidArgumentError(
                        absl::StrCat("--max-running must not be negative (got ",
                                     *o.max_running, "; 0: no quota)")));
  }
  for (const auto& [flag, value] :
       {std::make_pair("--max-queued", o.max_queued),
        std::make_pair("--max-active", o.max_active)}) {
    if (value.has_value() && *value < 0) {
      return ReportError("user set",
                         absl::InvalidArgumentError(absl::StrCat(
                             flag, " must not be negative (got ", *value,
                             "; 0: the coordinator's default)")));
    }
  }
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("user set", client.status());
  v1::SetUserPolicyRequest request;
  request.set_user(o.user);
  if (o.share.has_value()) request.set_share(*o.share);
  if (o.max_running.has_value()) request.set_max_running(*o.max_running);
  if (o.max_queued.has_value()) request.set_max_queued(*o.max_queued);
  if (o.max_active.has_value()) request.set_max_active(*o.max_active);
  v1::UserPolicy policy;
  absl::Status status =
      (*client)->Call(&v1::ExperimentService::Stub::SetUserPolicy,
                      (*client)->experiments(), request, &policy);
  if (!status.ok()) return ReportError("user set", status);
  if (*format == Format::kJson) {
    std::cout << ProtoJson(policy);
    return kExitOk;
  }
  v1::ListUsersResponse one;
  *one.add_users() = policy;
  UsersTable(one).Print(std::cout, *format);
  return kExitOk;
}

int ListUsers(const FormatOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("user list", format.status());
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("user list", client.status());
  v1::ListUsersResponse response;
  absl::Status status = (*client)->Call(&v1::ExperimentService::Stub::ListUsers,
                                        (*client)->experiments(),
                                        v1::ListUsersRequest(), &response);
  if (!status.ok()) return ReportError("user list", status);
  if (*format == Format::kJson) {
    std::cout << ProtoJson(response);
    return kExitOk;
  }
  UsersTable(response).Print(std::cout, *format);
  return kExitOk;
}

}  // namespace

void RegisterAccessCommands(CLI::App& app, Action* action) {
  CLI::App* user = app.add_subcommand(
      "user", "Fair share and quotas: each user's share, usage and limits");
  user->require_subcommand(1);
  {
    CLI::App* cmd = user->add_subcommand(
        "set",
        "Set a user's fair-share weight and quotas (admin only); flags left "
        "out keep their value");
    auto o = std::make_shared<UserSetOptions>();
    cmd->add_option("USER", o->user, "User name")->required();
    cmd->add_option("--share", o->share,
                    "Weight in fair share (default 1: equal shares); a user "
                    "with share 2 gets twice the worker time of one with 1");
    cmd->add_option("--max-running", o->max_running,
                    "Most leased + running trials (0: no quota)");
    cmd->add_option("--max-queued", o->max_queued,
                    "Most queued trials; a submit past it is refused (0: the "
                    "coordinator's --max-queued-trials-per-user, which does "
                    "not hold for admins)");
    cmd->add_option("--max-active", o->max_active,
                    "Most active or paused experiments; a submit past it is "
                    "refused (0: the coordinator's "
                    "--max-active-experiments-per-user, which does not hold "
                    "for admins)");
    cmd->add_option("--format", o->format, "text, json or csv");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return SetUser(*o); }; });
  }
  {
    CLI::App* cmd = user->add_subcommand(
        "list", "List users: share, decayed usage, running, queued, quotas");
    auto o = std::make_shared<FormatOptions>();
    cmd->add_option("--format", o->format, "text, json or csv");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return ListUsers(*o); }; });
  }
  {
    CLI::App* cmd = app.add_subcommand(
        "workers", "List the workers registered with the coordinator");
    auto o = std::make_shared<WorkersOptions>();
    cmd->add_option("--format", o->format, "text, json or csv");
    cmd->add_flag("--all", o->all,
                  "Also the workers stopped or lost over an hour ago (hidden "
                  "otherwise, in every format)");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return Workers(*o); }; });
  }
  CLI::App* token = app.add_subcommand("token", "Manage bearer tokens");
  token->require_subcommand(1);
  {
    CLI::App* cmd = token->add_subcommand(
        "create", "Create a token for a user (admin only); prints it once");
    auto o = std::make_shared<TokenOptions>();
    cmd->add_option("--user", o->user, "User name")->required();
    cmd->add_option("--role", o->role, "admin, user, worker or viewer")
        ->required();
    cmd->add_option("--expires-in", o->expires_in,
                    "Lifetime, e.g. 12h or 30d (default: the coordinator's "
                    "--token-max-lifetime; none when that is 0)");
    cmd->add_option("--format", o->format, "text (the token only) or json");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return CreateToken(*o); }; });
  }
  {
    CLI::App* cmd = token->add_subcommand(
        "list",
        "List tokens without their secrets (admin: all; others: their own)");
    auto o = std::make_shared<FormatOptions>();
    cmd->add_option("--format", o->format, "text, json or csv");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return ListTokens(*o); }; });
  }
  {
    CLI::App* cmd = token->add_subcommand(
        "revoke",
        "Revoke a token by its id from prism token list (admin, or the "
        "token's user); refused for the last usable admin token");
    auto o = std::make_shared<TokenRevokeOptions>();
    cmd->add_option("ID", o->id, "Token id (12 hex digits)")->required();
    cmd->add_option("--format", o->format, "text or json");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return RevokeToken(*o); }; });
  }
  {
    CLI::App* cmd =
        app.add_subcommand("whoami", "Show the user and role of your token");
    auto o = std::make_shared<FormatOptions>();
    cmd->add_option("--format", o->format, "text or json");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return WhoAmI(*o); }; });
  }
}

}  // namespace prism::cli
