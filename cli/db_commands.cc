// `prism db check` and `prism db backup`: look after a coordinator's SQLite
// file from the outside, read-only and safe while the coordinator runs.
#include <iostream>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "base/json.h"
#include "cli/command.h"
#include "cli/output.h"
#include "storage/backup.h"
#include "storage/check.h"

namespace prism::cli {
namespace {

struct CheckOptions {
  std::string db;
  std::string format = "text";
};

int Check(const CheckOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format, /*allow_csv=*/false);
  if (!format.ok()) return ReportError("db check", format.status());
  absl::StatusOr<storage::DatabaseCheck> check = storage::CheckDatabase(o.db);
  if (!check.ok()) return ReportError("db check", check.status());
  if (*format == Format::kJson) {
    std::cout << "{\"db\": " << JsonString(o.db)
              << ", \"ok\": " << (check->problems.empty() ? "true" : "false")
              << ", \"experiments\": " << check->experiments
              << ", \"trials\": " << check->trials
              << ", \"points\": " << check->points << ", \"problems\": [";
    for (size_t i = 0; i < check->problems.size(); ++i) {
      std::cout << (i > 0 ? ", " : "") << JsonString(check->problems[i]);
    }
    std::cout << "]}\n";
  } else {
    for (const std::string& problem : check->problems) {
      std::cout << problem << "\n";
    }
    std::cout << o.db << ": " << check->experiments << " experiment(s), "
              << check->trials << " trial(s), " << check->points
              << " point(s): "
              << (check->problems.empty()
                      ? std::string("every invariant holds")
                      : absl::StrCat(check->problems.size(), " problem(s)"))
              << "\n";
  }
  return check->problems.empty() ? kExitOk : kExitFailure;
}

struct BackupOptions {
  std::string db;
  std::string to;
};

int Backup(const BackupOptions& o) {
  if (absl::Status s = storage::BackupDatabase(o.db, o.to); !s.ok()) {
    return ReportError("db backup", s);
  }
  std::cout << "backed up " << o.db << " to " << o.to
            << " (a consistent copy; run it with prism coordinator --db "
            << o.to << ")\n";
  return kExitOk;
}

}  // namespace

void RegisterDbCommands(CLI::App& app, Action* action) {
  CLI::App* db = app.add_subcommand(
      "db", "Check or back up a coordinator's database file");
  db->require_subcommand(1);

  auto check_opts = std::make_shared<CheckOptions>();
  CLI::App* check = db->add_subcommand(
      "check",
      "Verify the database's invariants (read-only, safe on a live "
      "database): gapless curves at their cadence, each point once, trial "
      "states that agree with their attempts, experiments that add up. "
      "Prints each problem; exits 1 if there is any");
  check->add_option("--db", check_opts->db, "The SQLite file")->required();
  check->add_option("--format", check_opts->format, "text or json");
  auto backup_opts = std::make_shared<BackupOptions>();
  CLI::App* backup = db->add_subcommand(
      "backup",
      "Copy the database while the coordinator keeps running (SQLite's "
      "online backup API): one consistent snapshot, written to a temp file "
      "and renamed into place; never overwrites");
  backup->add_option("--db", backup_opts->db, "The SQLite file")->required();
  backup->add_option("--to", backup_opts->to, "The new copy's path")
      ->required();
  backup->callback([backup_opts, action] {
    *action = [backup_opts] { return Backup(*backup_opts); };
  });
  check->callback([check_opts, action] {
    *action = [check_opts] { return Check(*check_opts); };
  });
}

}  // namespace prism::cli
