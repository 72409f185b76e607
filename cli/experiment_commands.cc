// `prism submit`, `status`, `cancel`, `pause`, `resume`, `priority`,
// `delete`, `seeds add`: the CLI face of ExperimentService.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "cli/client.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/views.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {
namespace {

struct SubmitOptions {
  ClientOptions client;
  std::string spec_path;
  int priority = 0;
  bool priority_set = false;
  std::string format = "text";
  bool dry_run = false;  // `prism plan`, `prism submit --dry-run`
};

// PrintPlan is a dry run's answer: what the spec would queue, where it
// leaves the user against the limits, and that nothing was stored.
void PrintPlan(const SubmitOptions& o, const v1::SubmitResponse& response) {
  const v1::Experiment& e = response.experiment();
  std::cout << "plan: " << response.trials_created() << " trials";
  if (!e.name().empty()) std::cout << " (" << Printable(e.name()) << ")";
  std::cout << ", " << EnumValueName(e.spec().strategy()) << ", "
            << Thousands(static_cast<double>(e.spec().budget().steps()))
            << " steps each\n"
            << PlanBlock(response.plan()) << HeadroomLine(response.headroom())
            << "\n"
            << "nothing submitted: prism submit " << o.spec_path
            << " queues it\n";
}

int Submit(const SubmitOptions& o) {
  const std::string command = o.dry_run ? "plan" : "submit";
  absl::StatusOr<Format> format = ParseFormat(o.format, /*allow_csv=*/false);
  if (!format.ok()) return ReportError(command, format.status());
  absl::StatusOr<std::string> text = ReadTextFile(o.spec_path);
  if (!text.ok()) return ReportError(command, text.status());
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError(command, client.status());

  v1::SubmitRequest request;
  request.set_spec_text(*text);
  request.set_dry_run(o.dry_run);
  v1::SubmitResponse response;
  absl::Status status =
      (*client)->Call(&v1::ExperimentService::Stub::Submit,
                      (*client)->experiments(), request, &response);
  if (!status.ok()) {
    // The coordinator names parse errors "spec_text:LINE:COL: ..."; point
    // at the user's file instead, as compilers do.
    absl::string_view message = status.message();
    const bool located = absl::ConsumePrefix(&message, "spec_text:");
    return ReportError(
        command,
        absl::Status(status.code(),
                     absl::StrCat(o.spec_path, located ? ":" : ": ", message)));
  }
  if (o.dry_run) {
    if (*format == Format::kJson) {
      std::cout << ProtoJson(response);
    } else {
      PrintPlan(o, response);
    }
    return kExitOk;
  }
  if (o.priority_set) {
    v1::SetPriorityRequest set;
    set.set_id(response.experiment().id());
    set.set_priority(o.priority);
    status = (*client)->Call(&v1::ExperimentService::Stub::SetPriority,
                             (*client)->experiments(), set,
                             response.mutable_experiment());
    if (!status.ok()) return ReportError("submit", status);
  }
  if (*format == Format::kJson) {
    std::cout << ProtoJson(response);
    return kExitOk;
  }
  const v1::Experiment& e = response.experiment();
  std::cout << "experiment " << e.id()
            << " submitted: " << response.trials_created() << " trials";
  if (!e.name().empty()) std::cout << " (" << Printable(e.name()) << ")";
  std::cout << ", priority " << e.priority() << "\n"
            << PlanLine(response.plan()) << "\n"
            << HeadroomLine(response.headroom()) << "\n";
  return kExitOk;
}

struct StatusOptions {
  ClientOptions client;
  int64_t id = 0;
  std::string format = "text";
  bool wide = false;
};

int ListExperiments(RpcClient& client, Format format, bool wide) {
  v1::ListExperimentsResponse all;
  v1::ListExperimentsRequest request;
  do {
    v1::ListExperimentsResponse page;
    absl::Status status = client.Call(&v1::ExperimentService::Stub::List,
                                      client.experiments(), request, &page);
    if (!status.ok()) return ReportError("status", status);
    for (v1::Experiment& e : *page.mutable_experiments()) {
      *all.add_experiments() = std::move(e);
    }
    all.set_storage_condition(page.storage_condition());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  // An admin sees the coordinator's storage trouble first (text) or in the
  // JSON's storageCondition; a CSV stays a table.
  if (format == Format::kText && !all.storage_condition().empty()) {
    std::cout << "coordinator: " << Printable(all.storage_condition())
              << "\n\n";
  }
  if (format == Format::kJson) {
    std::cout << ProtoJson(all);
  } else if (all.experiments().empty() && format == Format::kText) {
    std::cout << "no experiments yet (prism submit SPEC.textproto)\n";
  } else if (format == Format::kText && !wide) {
    NarrowExperimentsTable(all).Print(std::cout, format);
    std::cout << WaitingLines(all);
  } else {
    ExperimentsTable(all).Print(std::cout, format);
  }
  return kExitOk;
}

// FetchExperiment reads experiment `id` and every page of its trials
// (total set to their count); the first failed call's error.
absl::Status FetchExperiment(RpcClient& client, int64_t id,
                             v1::Experiment* experiment,
                             v1::ListTrialsResponse* trials) {
  v1::GetExperimentRequest get;
  get.set_id(id);
  PRISM_RETURN_IF_ERROR(client.Call(&v1::ExperimentService::Stub::Get,
                                    client.experiments(), get, experiment));
  v1::ListTrialsRequest request;
  request.set_experiment_id(id);
  do {
    v1::ListTrialsResponse page;
    PRISM_RETURN_IF_ERROR(client.Call(&v1::ExperimentService::Stub::ListTrials,
                                      client.experiments(), request, &page));
    for (v1::Trial& t : *page.mutable_trials()) {
      *trials->add_trials() = std::move(t);
    }
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  trials->set_total(trials->trials_size());
  return absl::OkStatus();
}

// RankSummary reads the ranking's first row of experiment `id`, for the
// summaries that come with it (the rungs' counts, racing's word).
absl::Status RankSummary(RpcClient& client, int64_t id,
                         v1::RankResponse* ranked) {
  v1::RankRequest rank;
  rank.set_experiment_id(id);
  rank.set_page_size(1);
  return client.Call(&v1::ResultsService::Stub::Rank, client.results(), rank,
                     ranked);
}

// PrintExperimentSummary prints the experiment's state and counts, why it
// waits, its cost, its queue order, its ladder rung and adaptive seeds.
void PrintExperimentSummary(const v1::Experiment& experiment) {
  const v1::TrialCounts& c = experiment.counts();
  std::cout << WrapText(absl::StrCat(
                            "experiment ", experiment.id(), " ",
                            Printable(experiment.name()), " (",
                            Printable(experiment.owner()),
                            "): ", EnumValueName(experiment.state()),
                            ", priority ", experiment.priority(), ", ",
                            c.completed(), "/", c.total(), " completed, ",
                            c.leased() + c.running(), " running, ", c.queued(),
                            " queued, ", c.failed() + c.diverged(), " failed, ",
                            static_cast<int>(experiment.progress() * 100 + 0.5),
                            "% of steps"),
                        100, 2)
            << "\n";
  if (!experiment.queue_reason().empty()) {
    std::cout << "waiting: "
              << (experiment.queue_position() > 0
                      ? absl::StrCat("position ", experiment.queue_position(),
                                     " in the queue; ")
                      : "")
              << Printable(experiment.queue_reason()) << "\n";
  }
  const std::string cost = SearchCostLine(experiment);
  if (!cost.empty()) std::cout << cost << "\n";
  std::cout << "queue order: shuffled by sample_seed "
            << experiment.spec().sample_seed() << "\n";
  if (experiment.ladder_id() != 0) {
    std::cout << "ladder " << experiment.ladder_id() << ": rung "
              << experiment.ladder_rung() + 1 << " of "
              << experiment.spec().ladder().rungs_size();
    if (!experiment.ladder_note().empty()) {
      std::cout << "; " << Printable(experiment.ladder_note());
    }
    std::cout << " (prism results --ladder " << experiment.id() << ")\n";
  }
  if (experiment.spec().has_seeds_policy()) {
    std::cout << "adaptive seeds " << experiment.spec().seeds_policy().min()
              << ".." << experiment.spec().seeds_policy().max()
              << " per schedule: " << experiment.seeds_added()
              << " trials added";
    if (!experiment.seeds_note().empty()) {
      std::cout << "; last decision: " << experiment.seeds_note();
    }
    std::cout << "\n";
  }
}

// PrintAshaLines prints ASHA's (or guided screening's) rungs, staged seeds,
// last decision and the rungs' counts (from the ranking of `id`).
absl::Status PrintAshaLines(RpcClient& client, int64_t id,
                            const v1::Experiment& experiment, bool screening) {
  const v1::TrialCounts& c = experiment.counts();
  const v1::AshaPolicy& a = experiment.spec().asha();
  std::cout << (screening ? "each bracket's rungs" : "asha: rungs")
            << " at steps " << absl::StrJoin(a.rungs(), ", ") << " (eta "
            << a.eta() << ", "
            << (a.mode() == v1::ASHA_MODE_UNSPECIFIED
                    ? std::string("ASHA_MODE_ASYNCHRONOUS")
                    : v1::AshaMode_Name(a.mode()))
            << "); " << c.stopped_at_rung() << " trials stopped at a rung\n";
  if (!screening && a.screen_seeds() > 0 &&
      a.screen_seeds() < experiment.spec().seeds_size()) {
    // Staged: the other seeds start with the promotions.
    std::cout << "  screened on " << a.screen_seeds() << " of "
              << experiment.spec().seeds_size() << " seeds, "
              << experiment.seeds_added() << " trials added on the rest\n";
  }
  // The decision lists every promotion: wrapped to the terminal's 100.
  if (!experiment.seeds_note().empty()) {
    std::cout << WrapText(absl::StrCat("  last decision: ",
                                       Printable(experiment.seeds_note())),
                          100, 4)
              << "\n";
  }
  // The rungs' counts come with the ranking.
  v1::RankResponse ranked;
  PRISM_RETURN_IF_ERROR(RankSummary(client, id, &ranked));
  for (const v1::AshaRung& rung : ranked.asha_rungs()) {
    std::cout << "  " << AshaRungLine(rung) << "\n";
  }
  return absl::OkStatus();
}

// PrintRacingLine prints racing's policy and word (from the ranking of
// `id`), or that it is off.
absl::Status PrintRacingLine(RpcClient& client, int64_t id,
                             const v1::Experiment& experiment) {
  const v1::RacingPolicy& r = experiment.spec().racing();
  if (r.off()) {
    std::cout << "racing: off\n";
  } else {
    v1::RankResponse ranked;
    PRISM_RETURN_IF_ERROR(RankSummary(client, id, &ranked));
    std::cout << WrapText(
                     fmt::format(
                         "racing: at most {} seeds each, {} contenders a "
                         "round, budget {:g}% of the grid's steps; {}",
                         r.max_seeds(), r.racers(), 100.0 * r.budget(),
                         ranked.has_race() ? Printable(ranked.race().note())
                                           : std::string("not started")),
                     100, 4)
              << "\n";
  }
  return absl::OkStatus();
}

// PrintStrategyLines prints what the spec's strategy does: guided
// screening, ASHA, racing, guided search.
absl::Status PrintStrategyLines(RpcClient& client, int64_t id,
                                const v1::Experiment& experiment) {
  const bool screening =
      experiment.spec().strategy() == v1::STRATEGY_GUIDED_SCREENING;
  if (screening) {
    const v1::ScreeningPolicy& p = experiment.spec().screening();
    std::cout << fmt::format(
        "guided screening: brackets of {}, explore {:.2f}, budget {:.0f}% "
        "of the grid's steps; {} trials added\n",
        p.bracket_size(), p.explore(), 100.0 * p.grid_fraction(),
        experiment.seeds_added());
  }
  if (experiment.spec().strategy() == v1::STRATEGY_ASHA || screening) {
    PRISM_RETURN_IF_ERROR(PrintAshaLines(client, id, experiment, screening));
  }
  if (experiment.spec().has_racing()) {
    PRISM_RETURN_IF_ERROR(PrintRacingLine(client, id, experiment));
  }
  if (experiment.spec().strategy() == v1::STRATEGY_GUIDED) {
    const v1::GuidedPolicy& g = experiment.spec().guided();
    std::cout << "guided search: " << experiment.spec().samples()
              << " schedules, initial design " << g.initial() << ", "
              << g.parallel() << " in flight; " << experiment.seeds_added()
              << " trials added";
    if (!experiment.seeds_note().empty()) {
      std::cout << "; last decision: " << Printable(experiment.seeds_note());
    }
    std::cout << "\n";
  }
  return absl::OkStatus();
}

int ShowExperiment(RpcClient& client, int64_t id, Format format) {
  v1::Experiment experiment;
  v1::ListTrialsResponse trials;
  if (absl::Status s = FetchExperiment(client, id, &experiment, &trials);
      !s.ok()) {
    return ReportError("status", s);
  }
  if (format == Format::kJson) {
    std::cout << ProtoJson(trials);
    return kExitOk;
  }
  if (format == Format::kText) {
    PrintExperimentSummary(experiment);
    if (absl::Status s = PrintStrategyLines(client, id, experiment); !s.ok()) {
      return ReportError("status", s);
    }
    std::cout << "\n";
  }
  TrialsTable(trials).Print(std::cout, format);
  return kExitOk;
}

int Status(const StatusOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("status", format.status());
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("status", client.status());
  return o.id > 0 ? ShowExperiment(**client, o.id, *format)
                  : ListExperiments(**client, *format, o.wide);
}

struct ChangeOptions {
  ClientOptions client;
  int64_t id = 0;
  int priority = 0;
};

using ExperimentMethod = grpc::Status (v1::ExperimentService::Stub::*)(
    grpc::ClientContext*, const v1::ExperimentRef&, v1::Experiment*);

int Change(const std::string& command, const ChangeOptions& o,
           ExperimentMethod method) {
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError(command, client.status());
  v1::ExperimentRef ref;
  ref.set_id(o.id);
  v1::Experiment experiment;
  absl::Status status =
      (*client)->Call(method, (*client)->experiments(), ref, &experiment);
  if (!status.ok()) return ReportError(command, status);
  std::cout << "experiment " << experiment.id() << ": "
            << EnumValueName(experiment.state()) << "\n";
  return kExitOk;
}

int SetPriority(const ChangeOptions& o) {
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("priority", client.status());
  v1::SetPriorityRequest request;
  request.set_id(o.id);
  request.set_priority(o.priority);
  v1::Experiment experiment;
  absl::Status status =
      (*client)->Call(&v1::ExperimentService::Stub::SetPriority,
                      (*client)->experiments(), request, &experiment);
  if (!status.ok()) return ReportError("priority", status);
  std::cout << "experiment " << experiment.id() << ": priority "
            << experiment.priority() << "\n";
  return kExitOk;
}

struct DeleteOptions {
  ClientOptions client;
  int64_t id = 0;
  bool yes = false;
};

// Confirm asks `question` on stderr and reads the answer from stdin: true
// only for "y" or "yes".
bool Confirm(const std::string& question) {
  std::cerr << question << " [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  answer = absl::AsciiStrToLower(absl::StripAsciiWhitespace(answer));
  return answer == "y" || answer == "yes";
}

// Delete deletes a done or cancelled experiment after the user confirmed it
// on a terminal (or passed --yes): a script cannot delete by accident.
int Delete(const DeleteOptions& o) {
  if (!o.yes && !IsTerminal(STDIN_FILENO)) {
    return ReportError("delete",
                       absl::InvalidArgumentError(absl::StrCat(
                           "deleting experiment ", o.id,
                           " needs a confirmation on a terminal; pass --yes to "
                           "delete without one")));
  }
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("delete", client.status());
  if (!o.yes) {
    v1::GetExperimentRequest get;
    get.set_id(o.id);
    v1::Experiment e;
    absl::Status status = (*client)->Call(&v1::ExperimentService::Stub::Get,
                                          (*client)->experiments(), get, &e);
    if (!status.ok()) return ReportError("delete", status);
    const std::string question = absl::StrCat(
        "delete experiment ", e.id(), " '", Printable(e.name()), "' of ",
        Printable(e.owner()), " (", EnumValueName(e.state()), ": ",
        e.counts().total(), " trials, ", e.steps_trained(),
        " steps trained, with their curves and attempts)? This cannot be "
        "undone.");
    if (!Confirm(question)) {
      std::cerr << "prism delete: not confirmed; experiment " << o.id
                << " is kept\n";
      return kExitFailure;
    }
  }
  v1::ExperimentRef ref;
  ref.set_id(o.id);
  v1::DeleteExperimentResponse deleted;
  absl::Status status =
      (*client)->Call(&v1::ExperimentService::Stub::Delete,
                      (*client)->experiments(), ref, &deleted);
  if (!status.ok()) return ReportError("delete", status);
  std::cout << "experiment " << deleted.id() << " deleted: " << deleted.trials()
            << " trials, " << deleted.attempts() << " attempts, "
            << deleted.points() << " points\n";
  return kExitOk;
}

struct SeedsAddOptions {
  ClientOptions client;
  int64_t id = 0;
  int count = 0;
  int to = 0;
  std::vector<int64_t> seeds;
  std::vector<std::string> schedules;
  bool dry_run = false;
  std::string format = "text";
};

int SeedsAdd(const SeedsAddOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format, /*allow_csv=*/false);
  if (!format.ok()) return ReportError("seeds add", format.status());
  const int given =
      (o.count != 0 ? 1 : 0) + (o.to != 0 ? 1 : 0) + (o.seeds.empty() ? 0 : 1);
  if (given != 1) {
    return ReportError(
        "seeds add",
        absl::InvalidArgumentError(
            given == 0 ? "say how many seeds: --count N, --to N or --seeds 4,5"
                       : "--count, --to and --seeds: give one of them"));
  }
  if (o.count < 0 || o.to < 0) {
    return ReportError("seeds add", absl::InvalidArgumentError(absl::StrCat(
                                        o.count < 0 ? "--count" : "--to",
                                        " must be positive")));
  }
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("seeds add", client.status());
  v1::ExtendRequest request;
  request.set_id(o.id);
  request.set_add_seeds(o.count);
  request.set_to_seeds(o.to);
  *request.mutable_seeds() = {o.seeds.begin(), o.seeds.end()};
  *request.mutable_seed_schedules() = {o.schedules.begin(), o.schedules.end()};
  request.set_dry_run(o.dry_run);
  v1::ExtendResponse response;
  absl::Status status =
      (*client)->Call(&v1::ExperimentService::Stub::Extend,
                      (*client)->experiments(), request, &response);
  if (!status.ok()) return ReportError("seeds add", status);
  if (*format == Format::kJson) {
    std::cout << ProtoJson(response);
    return kExitOk;
  }
  std::cout << "experiment " << o.id << ": "
            << ExtensionLine(response, o.dry_run) << "\n";
  if (response.has_plan()) std::cout << PlanLine(response.plan()) << "\n";
  std::cout << HeadroomLine(response.headroom()) << "\n";
  if (o.dry_run) {
    std::cout << "nothing stored: run it without --dry-run to queue them\n";
  } else {
    std::cout << "next: prism watch " << o.id << "\n";
  }
  return kExitOk;
}

void AddChangeCommand(CLI::App& app, Action* action, const std::string& name,
                      const std::string& help, ExperimentMethod method) {
  CLI::App* cmd = app.add_subcommand(name, help);
  auto o = std::make_shared<ChangeOptions>();
  cmd->add_option("id", o->id, "Experiment id")->required();
  AddClientOptions(cmd, &o->client);
  cmd->callback([o, action, name, method] {
    *action = [o, name, method] { return Change(name, *o, method); };
  });
}

// RegisterSubmit adds `prism submit`.
void RegisterSubmit(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand(
      "submit", "Submit an experiment spec (textproto) to the coordinator");
  auto o = std::make_shared<SubmitOptions>();
  cmd->add_option("spec", o->spec_path, "ExperimentSpec textproto file")
      ->required();
  cmd->add_option("--priority", o->priority,
                  "Priority (higher leases first; overrides the spec's)")
      ->each([o](const std::string&) { o->priority_set = true; });
  cmd->add_option("--format", o->format, "text or json");
  cmd->add_flag("--dry-run", o->dry_run,
                "Plan and check every limit as a submit would; store "
                "nothing (as `prism plan`)");
  AddClientOptions(cmd, &o->client);
  cmd->callback([o, action] { *action = [o] { return Submit(*o); }; });
}

// RegisterPlan adds `prism plan` (a dry-run submit).
void RegisterPlan(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Show what a spec would queue (trials, steps) and where it leaves you "
      "against the coordinator's limits, without submitting it");
  auto o = std::make_shared<SubmitOptions>();
  o->dry_run = true;
  cmd->add_option("spec", o->spec_path, "ExperimentSpec textproto file")
      ->required();
  cmd->add_option("--format", o->format, "text or json");
  AddClientOptions(cmd, &o->client);
  cmd->callback([o, action] { *action = [o] { return Submit(*o); }; });
}

// RegisterStatus adds `prism status`.
void RegisterStatus(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand(
      "status", "List experiments, or show one experiment's trials");
  auto o = std::make_shared<StatusOptions>();
  cmd->add_option("id", o->id, "Experiment id (omit to list all)");
  cmd->add_option("--format", o->format, "text, json or csv");
  cmd->add_flag("--wide", o->wide,
                "List every column (full names, cancelled, total, the queue "
                "reason) instead of fitting 100 columns");
  AddClientOptions(cmd, &o->client);
  cmd->callback([o, action] { *action = [o] { return Status(*o); }; });
}

// RegisterDelete adds `prism delete`.
void RegisterDelete(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand(
      "delete",
      "Delete a done or cancelled experiment and everything stored for it "
      "(trials, attempts, curves); asks on a terminal first");
  auto o = std::make_shared<DeleteOptions>();
  cmd->add_option("id", o->id, "Experiment id")->required();
  cmd->add_flag("--yes", o->yes,
                "Delete without asking (required when stdin is not a "
                "terminal)");
  AddClientOptions(cmd, &o->client);
  cmd->callback([o, action] { *action = [o] { return Delete(*o); }; });
}

// RegisterSeedsAdd adds `prism seeds add`.
void RegisterSeedsAdd(CLI::App& app, Action* action) {
  CLI::App* seeds = app.add_subcommand(
      "seeds", "Add seeds to an experiment, reusing every trial it has");
  seeds->require_subcommand(1);
  CLI::App* cmd = seeds->add_subcommand(
      "add",
      "Train an experiment's ranked schedules (and the baseline) on more "
      "seeds: only the missing (schedule, seed) trials are queued, every "
      "finished one is reused, and a done experiment is active again until "
      "they finish");
  auto o = std::make_shared<SeedsAddOptions>();
  cmd->add_option("id", o->id, "Experiment id")->required();
  cmd->add_option("--count", o->count,
                  "Add N seeds (continuing the experiment's sequence)");
  cmd->add_option("--to", o->to,
                  "Make it N seeds in all (the experiment's first N)");
  cmd->add_option("--seeds", o->seeds, "Add these seeds (e.g. 4,5)")
      ->delimiter(',');
  cmd->add_option("--schedules", o->schedules,
                  "Only these schedules get the seeds (and the baseline); "
                  "space-separated, e.g. --schedules 8x2,4x2 4x4")
      ->expected(1, -1);
  cmd->add_flag("--dry-run", o->dry_run,
                "Check every limit and say what would be queued; store "
                "nothing");
  cmd->add_option("--format", o->format, "text or json");
  AddClientOptions(cmd, &o->client);
  cmd->callback([o, action] { *action = [o] { return SeedsAdd(*o); }; });
}

// RegisterPriority adds `prism priority`.
void RegisterPriority(CLI::App& app, Action* action) {
  CLI::App* cmd =
      app.add_subcommand("priority", "Set an experiment's priority");
  auto o = std::make_shared<ChangeOptions>();
  cmd->add_option("id", o->id, "Experiment id")->required();
  cmd->add_option("priority", o->priority, "New priority (higher first)")
      ->required();
  AddClientOptions(cmd, &o->client);
  cmd->callback([o, action] { *action = [o] { return SetPriority(*o); }; });
}

}  // namespace

void RegisterExperimentCommands(CLI::App& app, Action* action) {
  RegisterSubmit(app, action);
  RegisterPlan(app, action);
  RegisterStatus(app, action);
  AddChangeCommand(app, action, "cancel",
                   "Cancel an experiment: queued trials are dropped and "
                   "running ones stopped",
                   &v1::ExperimentService::Stub::Cancel);
  AddChangeCommand(app, action, "pause",
                   "Pause an experiment: no new trials are leased",
                   &v1::ExperimentService::Stub::Pause);
  AddChangeCommand(app, action, "resume", "Resume a paused experiment",
                   &v1::ExperimentService::Stub::Resume);
  RegisterDelete(app, action);
  RegisterSeedsAdd(app, action);
  RegisterPriority(app, action);
}

}  // namespace prism::cli
