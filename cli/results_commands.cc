// `prism results`, `prism compare`, `prism suggest`, `prism trial`,
// `prism watch`: the CLI face of ResultsService.
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/client.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/views.h"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "proto/enum_names.h"
#include "scheduler/space/principles.h"

namespace prism::cli {
namespace {

// ExperimentId resolves a command's experiment from its positional id and
// --experiment (either; both only when they agree). InvalidArgument.
absl::StatusOr<int64_t> ExperimentId(int64_t positional, int64_t flag) {
  if (positional != 0 && flag != 0 && positional != flag) {
    return absl::InvalidArgumentError(
        absl::StrCat("experiment ", positional, " and --experiment ", flag,
                     " differ: give the id once"));
  }
  return positional != 0 ? positional : flag;
}

struct ResultsOptions {
  ClientOptions client;
  int64_t id = 0;  // positional; or --experiment
  int64_t experiment = 0;
  int64_t ladder = 0;
  std::string format = "text";
  std::string require;
  std::string sort = "rank";
  bool descending = false;
  int limit = 0;
  bool wide = false;
};

int LadderResults(const ResultsOptions& o, Format format) {
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("results", client.status());
  v1::LadderTransferRequest request;
  request.set_experiment_id(o.ladder);
  v1::LadderTransferResponse response;
  absl::Status status =
      (*client)->Call(&v1::ResultsService::Stub::LadderTransfer,
                      (*client)->results(), request, &response);
  if (!status.ok()) return ReportError("results", status);
  PrintLadder(response, format, std::cout);
  return kExitOk;
}

int Results(const ResultsOptions& given) {
  ResultsOptions o = given;
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("results", format.status());
  absl::StatusOr<int64_t> id = ExperimentId(o.id, o.experiment);
  if (!id.ok()) return ReportError("results", id.status());
  o.experiment = *id;
  if ((o.experiment != 0) == (o.ladder != 0)) {
    return ReportError(
        "results",
        absl::InvalidArgumentError("give the experiment (prism results ID) or "
                                   "--ladder ID (one of them)"));
  }
  if (o.ladder != 0) return LadderResults(o, *format);
  absl::StatusOr<v1::RankSort> sort =
      ParseEnumValue<v1::RankSort>(o.sort, "sort");
  if (!sort.ok()) return ReportError("results", sort.status());
  v1::RankRequest request;
  request.set_experiment_id(o.experiment);
  request.set_sort(*sort);
  request.set_descending(o.descending);
  request.set_page_size(o.limit);
  if (!o.require.empty()) {
    absl::StatusOr<PrincipleSet> required = ParsePrinciples(o.require);
    if (!required.ok()) return ReportError("results", required.status());
    if (required->smooth) request.add_require(v1::PRINCIPLE_SMOOTH);
    if (required->baseline) request.add_require(v1::PRINCIPLE_BASELINE);
    if (required->pow2) request.add_require(v1::PRINCIPLE_POW2);
  }
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("results", client.status());
  v1::RankResponse response;
  absl::Status status =
      (*client)->Call(&v1::ResultsService::Stub::Rank, (*client)->results(),
                      request, &response);
  if (!status.ok()) return ReportError("results", status);
  // A page also ends at the coordinator's --max-page-bytes: fetch the rest
  // of what was asked for.
  while (!response.next_page_token().empty() &&
         (o.limit == 0 || response.schedules_size() < o.limit)) {
    request.set_page_token(response.next_page_token());
    if (o.limit > 0) request.set_page_size(o.limit - response.schedules_size());
    v1::RankResponse more;
    status = (*client)->Call(&v1::ResultsService::Stub::Rank,
                             (*client)->results(), request, &more);
    if (!status.ok()) return ReportError("results", status);
    for (v1::RankedSchedule& row : *more.mutable_schedules()) {
      *response.add_schedules() = std::move(row);
    }
    response.set_next_page_token(more.next_page_token());
  }
  if (*format == Format::kText && response.has_experiment()) {
    const v1::Experiment& e = response.experiment();
    std::cout << "experiment " << e.id() << " " << Printable(e.name()) << ": "
              << EnumValueName(e.state()) << ", " << e.counts().completed()
              << "/" << e.counts().total() << " trials completed\n\n";
  }
  RankingView view;
  view.wide = o.wide;
  PrintRanking(response, *format, std::cout, view);
  return kExitOk;
}

struct CompareOptions {
  ClientOptions client;
  int64_t experiment = 0;
  // [ID] A B: the experiment positionally, or with --experiment.
  std::vector<std::string> args;
  std::string a;
  std::string b;
  std::string format = "text";
};

int Compare(const CompareOptions& given) {
  CompareOptions o = given;
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("compare", format.status());
  int64_t positional = 0;
  if (o.args.size() == 3) {
    if (!absl::SimpleAtoi(o.args[0], &positional) || positional <= 0) {
      return ReportError("compare", absl::InvalidArgumentError(absl::StrCat(
                                        "experiment id '", o.args[0],
                                        "' is not a positive integer")));
    }
    o.args.erase(o.args.begin());
  }
  if (o.args.size() != 2) {
    return ReportError("compare", absl::InvalidArgumentError(
                                      "give the experiment and two schedules: "
                                      "prism compare ID A B"));
  }
  o.a = o.args[0];
  o.b = o.args[1];
  absl::StatusOr<int64_t> id = ExperimentId(positional, o.experiment);
  if (!id.ok()) return ReportError("compare", id.status());
  if (*id == 0) {
    return ReportError("compare", absl::InvalidArgumentError(
                                      "give the experiment: prism compare ID "
                                      "A B (or --experiment ID)"));
  }
  o.experiment = *id;
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("compare", client.status());
  v1::CompareRequest request;
  request.set_experiment_id(o.experiment);
  request.set_schedule_a(o.a);
  request.set_schedule_b(o.b);
  v1::CompareResponse response;
  absl::Status status =
      (*client)->Call(&v1::ResultsService::Stub::Compare, (*client)->results(),
                      request, &response);
  if (!status.ok()) return ReportError("compare", status);
  PrintCompare(response, *format, std::cout);
  return kExitOk;
}

struct SuggestOptions {
  ClientOptions client;
  int64_t id = 0;  // positional; or --experiment
  int64_t experiment = 0;
  int n = 10;
  std::string format = "text";
  bool train = false;  // train the suggestions in the same experiment
};

// TrainSuggestions adds the suggested schedules to the experiment
// (ExperimentService.Extend), each trained on every seed it has.
int TrainSuggestions(RpcClient* client, int64_t experiment,
                     const v1::SuggestResponse& suggested) {
  v1::ExtendRequest request;
  request.set_id(experiment);
  for (const v1::Suggestion& s : suggested.suggestions()) {
    request.add_schedules(s.schedule());
  }
  if (request.schedules().empty()) {
    return ReportError("suggest",
                       absl::FailedPreconditionError("no suggestion to train"));
  }
  v1::ExtendResponse response;
  absl::Status status = client->Call(&v1::ExperimentService::Stub::Extend,
                                     client->experiments(), request, &response);
  if (!status.ok()) return ReportError("suggest", status);
  std::cout << "experiment " << experiment << ": queued "
            << response.trials_created() << " trials ("
            << response.schedules_added_size() << " schedules on every seed); "
            << "reused " << response.trials_reused() << " finished trials\n"
            << "next: prism watch " << experiment << "\n";
  return kExitOk;
}

int Suggest(const SuggestOptions& given) {
  SuggestOptions o = given;
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("suggest", format.status());
  absl::StatusOr<int64_t> id = ExperimentId(o.id, o.experiment);
  if (!id.ok()) return ReportError("suggest", id.status());
  if (*id == 0) {
    return ReportError("suggest", absl::InvalidArgumentError(
                                      "give the experiment: prism suggest ID "
                                      "(or --experiment ID)"));
  }
  o.experiment = *id;
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("suggest", client.status());
  v1::SuggestRequest request;
  request.set_experiment_id(o.experiment);
  request.set_n(o.n);
  v1::SuggestResponse response;
  absl::Status status =
      (*client)->Call(&v1::ResultsService::Stub::Suggest, (*client)->results(),
                      request, &response);
  if (!status.ok()) return ReportError("suggest", status);
  PrintSuggestions(response, *format, std::cout);
  if (o.train) return TrainSuggestions(client->get(), o.experiment, response);
  return kExitOk;
}

struct TrialOptions {
  ClientOptions client;
  int64_t id = 0;
  std::string format = "text";
  bool with_baseline = false;
};

// UnixMillisText renders a timestamp as UTC "2024-05-01T12:00:00Z"; "" for
// 0 (not yet).
std::string UnixMillisText(int64_t unix_ms) {
  if (unix_ms <= 0) return "";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

void PrintTrialText(const v1::GetTrialResponse& response) {
  const v1::Trial& t = response.trial();
  std::cout << "trial " << t.id() << " of experiment " << t.experiment_id()
            << ": " << t.schedule() << " seed " << t.seed()
            << (t.is_baseline() ? " (uniform baseline)" : "") << "\n"
            << "state " << EnumValueName(t.state()) << ", attempt "
            << t.attempt() << ", step " << t.last_step() << "/"
            << t.total_steps() << "\n";
  if (t.has_principles()) {
    std::cout << "principles " << PrincipleFlags(t.principles()) << "\n";
  }
  if (!t.error().empty()) std::cout << "error " << Printable(t.error()) << "\n";
  if (t.state() == v1::TRIAL_STOPPED_AT_RUNG) {
    std::cout << fmt::format(
        "stopped at the ASHA rung at step {} with val loss {:.4f}: a "
        "promotion resumes it from there; not ranked until it trains the "
        "budget\n",
        t.target_steps(), t.metrics().final_val_loss());
  }
  if (t.state() == v1::TRIAL_COMPLETED || t.state() == v1::TRIAL_DIVERGED) {
    const v1::TrialMetrics& m = t.metrics();
    std::cout << fmt::format(
        "final val loss {:.4f} (min {:.4f}), final train loss {:.4f}\n"
        "{:.0f} tokens/s, {}, {} parameters, {:.1f}s on {}\n",
        m.final_val_loss(), m.min_val_loss(), m.final_train_loss(),
        m.tokens_per_second(), MfuText(m), m.parameters(), m.wall_seconds(),
        Printable(m.device()));
    if (m.cpu_share() > 0.0) {
      std::cout << fmt::format(
          "cpu share {:.2f} (CPU seconds over stepping seconds x threads: "
          "about 1 alone, 0.5 beside one equally busy process)\n",
          m.cpu_share());
    }
    if (!m.attention_kernel().empty()) {
      std::cout << "attention " << Printable(m.attention_kernel())
                << (m.isa().empty()
                        ? ""
                        : absl::StrCat(" (", Printable(m.isa()), ")"))
                << "\n";
    }
    if (m.diverged()) {
      std::cout << "diverged at step " << m.diverged_step() << "\n";
    }
  }
  int train = 0, val = 0;
  const v1::LossPoint* last_val = nullptr;
  for (const v1::LossPoint& p : response.points()) {
    if (p.split() == v1::SPLIT_VAL) {
      ++val;
      last_val = &p;
    } else {
      ++train;
    }
  }
  std::cout << "curve " << train << " train points, " << val << " val points";
  if (last_val != nullptr) {
    std::cout << fmt::format(", val loss {:.4f} at step {}", last_val->loss(),
                             last_val->step());
  }
  std::cout << " (--format csv prints them)\n\n";
  Table attempts({"attempt", "worker", "outcome", "resumed_from_step",
                  "started", "ended", "message"});
  for (const v1::TrialAttempt& a : t.attempts()) {
    attempts.AddRow(
        {absl::StrCat(a.attempt()), a.worker_id(), EnumValueName(a.outcome()),
         // Unset until the worker's Start said where it resumed.
         a.has_resumed_from_step() ? absl::StrCat(a.resumed_from_step())
                                   : std::string("-"),
         UnixMillisText(a.started_unix_ms()), UnixMillisText(a.ended_unix_ms()),
         a.message()});
  }
  attempts.Print(std::cout, Format::kText);
}

int ShowTrial(const TrialOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("trial", format.status());
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("trial", client.status());
  v1::GetTrialRequest request;
  request.set_trial_id(o.id);
  request.set_with_baseline(o.with_baseline);
  v1::GetTrialResponse response;
  absl::Status status =
      (*client)->Call(&v1::ResultsService::Stub::GetTrial, (*client)->results(),
                      request, &response);
  if (!status.ok()) return ReportError("trial", status);
  switch (*format) {
    case Format::kJson:
      std::cout << ProtoJson(response);
      break;
    case Format::kCsv:
      PointsTable(response).Print(std::cout, Format::kCsv);
      break;
    case Format::kText:
      PrintTrialText(response);
      break;
  }
  return kExitOk;
}

struct WatchOptions {
  ClientOptions client;
  int64_t id = 0;
  std::string format = "text";
};

bool Finished(v1::ExperimentState state) {
  return state == v1::EXPERIMENT_DONE || state == v1::EXPERIMENT_CANCELLED;
}

// TrialLabels remembers each trial's schedule, seed and length: point events
// carry only the trial's id, state and step.
using TrialLabels = std::map<int64_t, v1::Trial>;

void PrintEventText(const v1::ExperimentEvent& event, TrialLabels& labels) {
  if (event.has_experiment_updated()) {
    const v1::Experiment& e = event.experiment_updated();
    std::cout << fmt::format(
        "experiment {}: {}, {}/{} completed, {} running, {:.0f}%\n", e.id(),
        EnumValueName(e.state()), e.counts().completed(), e.counts().total(),
        e.counts().leased() + e.counts().running(), e.progress() * 100);
    return;
  }
  if (!event.has_trial_updated()) return;
  v1::Trial t = event.trial_updated();
  v1::Trial& known = labels[t.id()];
  if (t.schedule().empty()) {
    t.set_schedule(known.schedule());
    t.set_seed(known.seed());
    t.set_total_steps(known.total_steps());
  } else {
    known = t;
  }
  std::string line = fmt::format(
      "trial {} {} seed {}: {} step {}/{}", t.id(), t.schedule(), t.seed(),
      EnumValueName(t.state()), t.last_step(), t.total_steps());
  const v1::LossPoint* train = nullptr;
  const v1::LossPoint* val = nullptr;
  for (const v1::LossPoint& p : event.points()) {
    (p.split() == v1::SPLIT_VAL ? val : train) = &p;
  }
  if (train != nullptr) line += fmt::format(" train {:.4f}", train->loss());
  if (val != nullptr) line += fmt::format(" val {:.4f}", val->loss());
  if (t.state() == v1::TRIAL_COMPLETED) {
    line += fmt::format(" final val {:.4f}", t.metrics().final_val_loss());
  }
  std::cout << line << "\n";
}

int Watch(const WatchOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format, /*allow_csv=*/false);
  if (!format.ok()) return ReportError("watch", format.status());
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(o.client);
  if (!client.ok()) return ReportError("watch", client.status());

  v1::GetExperimentRequest get;
  get.set_id(o.id);
  v1::Experiment experiment;
  absl::Status status =
      (*client)->Call(&v1::ExperimentService::Stub::Get,
                      (*client)->experiments(), get, &experiment);
  if (!status.ok()) return ReportError("watch", status);
  TrialLabels labels;
  v1::ListTrialsRequest list;
  list.set_experiment_id(o.id);
  do {
    v1::ListTrialsResponse page;
    if (!(*client)
             ->Call(&v1::ExperimentService::Stub::ListTrials,
                    (*client)->experiments(), list, &page)
             .ok()) {
      break;  // labels are a nicety; the events still print
    }
    for (const v1::Trial& t : page.trials()) labels[t.id()] = t;
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());
  v1::ExperimentEvent first;
  *first.mutable_experiment_updated() = experiment;
  google::protobuf::util::JsonPrintOptions compact;
  auto print = [&](const v1::ExperimentEvent& event) {
    if (*format == Format::kJson) {
      std::string json;
      (void)google::protobuf::util::MessageToJsonString(event, &json, compact);
      std::cout << json << "\n";
    } else {
      PrintEventText(event, labels);
    }
    std::cout.flush();
  };
  print(first);
  if (Finished(experiment.state())) return kExitOk;

  std::unique_ptr<grpc::ClientContext> context =
      (*client)->NewContext(absl::InfiniteDuration());
  v1::WatchRequest request;
  request.set_experiment_id(o.id);
  std::unique_ptr<grpc::ClientReader<v1::WatchResponse>> reader =
      (*client)->results()->Watch(context.get(), request);
  v1::WatchResponse round;
  bool finished = false;
  while (!finished && reader->Read(&round)) {
    for (const v1::ExperimentEvent& event : round.events()) {
      print(event);
      if (event.has_experiment_updated() &&
          Finished(event.experiment_updated().state())) {
        finished = true;
        context->TryCancel();
        break;
      }
    }
  }
  status = (*client)->Check(reader->Finish());
  if (finished || status.ok()) return kExitOk;
  return ReportError("watch", status);
}

}  // namespace

void RegisterResultsCommands(CLI::App& app, Action* action) {
  {
    CLI::App* cmd = app.add_subcommand(
        "results",
        "Rank an experiment's schedules against the uniform baseline");
    auto o = std::make_shared<ResultsOptions>();
    cmd->add_option("id", o->id, "Experiment id");
    cmd->add_option("--experiment", o->experiment,
                    "Experiment id (as the positional id)");
    cmd->add_option("--ladder", o->ladder,
                    "Instead: the transfer between the sizes of the ladder "
                    "this experiment (any rung) belongs to (docs/ladder.md)");
    cmd->add_option("--format", o->format, "text, json or csv");
    cmd->add_option("--require", o->require,
                    "Only schedules satisfying these principles "
                    "(smooth,baseline,pow2)");
    cmd->add_option("--sort", o->sort,
                    "rank (default: paired delta, then schedules that need "
                    "seeds), val_loss, delta, speedup, throughput or "
                    "min_val_loss");
    cmd->add_flag("--descending", o->descending,
                  "Reverse the sort's natural order");
    cmd->add_flag("--wide", o->wide,
                  "Every column (val loss, p-values, ratios with their "
                  "intervals, counts), not the 100-column view");
    cmd->add_option("--limit", o->limit, "Show the first N (0: all)")
        ->check(CLI::NonNegativeNumber);
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return Results(*o); }; });
  }
  {
    CLI::App* cmd = app.add_subcommand(
        "compare",
        "Compare two schedules of an experiment over their common seeds: the "
        "paired delta B - A and B's verdict against A (one paired t-test)");
    auto o = std::make_shared<CompareOptions>();
    cmd->add_option("args", o->args,
                    "[ID] A B: the experiment id (or --experiment), schedule "
                    "A (e.g. the baseline 12x12) and schedule B (e.g. "
                    "3x3,6x3,12x6)")
        ->required()
        ->expected(2, 3);
    cmd->add_option("--experiment", o->experiment,
                    "Experiment id (as the positional id)");
    cmd->add_option("--format", o->format, "text, json or csv");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return Compare(*o); }; });
  }
  {
    CLI::App* cmd = app.add_subcommand(
        "suggest",
        "Suggest untried schedules to train next: a surrogate fitted on the "
        "experiment's finished schedules predicts each one's paired delta vs "
        "the baseline with an uncertainty; ranked by the lower confidence "
        "bound (needs 5 finished schedules)");
    auto o = std::make_shared<SuggestOptions>();
    cmd->add_option("id", o->id, "Experiment id");
    cmd->add_option("--experiment", o->experiment,
                    "Experiment id (as the positional id)");
    cmd->add_option("--n", o->n, "How many suggestions (1..1000, default 10)");
    cmd->add_flag("--train", o->train,
                  "Then train the suggestions in the same experiment, on "
                  "every seed it has (reusing every trial it has)");
    cmd->add_option("--format", o->format, "text, json or csv");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return Suggest(*o); }; });
  }
  {
    CLI::App* cmd = app.add_subcommand(
        "trial", "Show one trial: state, attempts, metrics and its curve");
    auto o = std::make_shared<TrialOptions>();
    cmd->add_option("id", o->id, "Trial id")->required();
    cmd->add_option("--format", o->format,
                    "text, json (everything) or csv (the curve)");
    cmd->add_flag("--with-baseline", o->with_baseline,
                  "Include the baseline's curve for the same seed (json)");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return ShowTrial(*o); }; });
  }
  {
    CLI::App* cmd = app.add_subcommand(
        "watch", "Follow an experiment's events until it ends");
    auto o = std::make_shared<WatchOptions>();
    cmd->add_option("id", o->id, "Experiment id")->required();
    cmd->add_option("--format", o->format,
                    "text, or json (one event per line)");
    AddClientOptions(cmd, &o->client);
    cmd->callback([o, action] { *action = [o] { return Watch(*o); }; });
  }
}

}  // namespace prism::cli
