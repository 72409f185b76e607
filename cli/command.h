// The `prism` command line: one binary, git-style subcommands (CLI11).
//
// Each group of subcommands lives in its own file and exposes one Register*
// function that adds its subcommands to the app. When CLI11 parses a
// subcommand, its callback stores the work to do in *action; main() runs it
// after parsing succeeded and exits with the status it returns:
//
//   void RegisterSchedulesCommands(CLI::App& app, Action* action) {
//     CLI::App* count = app.add_subcommand("count", "Count a space");
//     auto opts = std::make_shared<CountOptions>();
//     count->add_option("--d-model", opts->d_model, "...")->required();
//     count->callback([opts, action] { *action = [opts] { return Count(*opts);
//     }; });
//   }
//
// Exit status: kExitOk, kExitFailure (the work failed), kExitUsage (bad input:
// one line on stderr naming the problem, nothing changed).
#ifndef PRISM_CLI_COMMAND_H_
#define PRISM_CLI_COMMAND_H_

#include <functional>

namespace CLI {
class App;
}

namespace prism::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Action is a parsed subcommand's work; it returns the exit status.
using Action = std::function<int()>;

void RegisterSchedulesCommands(CLI::App& app, Action* action);
void RegisterExperimentCommands(CLI::App& app, Action* action);
void RegisterResultsCommands(CLI::App& app, Action* action);
void RegisterAccessCommands(CLI::App& app, Action* action);
void RegisterCoordinatorCommands(CLI::App& app, Action* action);
void RegisterWorkerCommands(CLI::App& app, Action* action);
void RegisterRunCommands(CLI::App& app, Action* action);
// db check, db backup: the coordinator's SQLite file (db_commands.cc).
void RegisterDbCommands(CLI::App& app, Action* action);
// presets, train, data prepare, eval: local model work (train_command.cc).
void RegisterModelCommands(CLI::App& app, Action* action);

}  // namespace prism::cli

#endif  // PRISM_CLI_COMMAND_H_
