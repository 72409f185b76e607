// prism: the single command-line binary of Prism Search. See command.h for how
// subcommands plug in.
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "base/mutex_mode.h"
#include "cli/client.h"
#include "cli/command.h"

int main(int argc, char** argv) {
  prism::ApplyMutexDeadlockDetectionSetting();
  prism::cli::RouteGrpcLogs(prism::LogLevel::kDebug);
  CLI::App app{
      "Prism Search: find the best attention head schedules for decoder "
      "transformers, and run the experiments that prove them.",
      "prism"};
  app.require_subcommand(1);
  app.fallthrough(false);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  prism::cli::Action action;
  prism::cli::RegisterSchedulesCommands(app, &action);
  prism::cli::RegisterExperimentCommands(app, &action);
  prism::cli::RegisterResultsCommands(app, &action);
  prism::cli::RegisterAccessCommands(app, &action);
  prism::cli::RegisterCoordinatorCommands(app, &action);
  prism::cli::RegisterWorkerCommands(app, &action);
  prism::cli::RegisterRunCommands(app, &action);
  prism::cli::RegisterModelCommands(app, &action);
  prism::cli::RegisterDbCommands(app, &action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming the problem; the full usage is one --help away.
    std::cerr << "prism: " << e.what() << " (see --help)\n";
    return prism::cli::kExitUsage;
  }
  if (!action) {
    std::cerr << "prism: no command given (see --help)\n";
    return prism::cli::kExitUsage;
  }
  return action();
}
