// `prism schedules count|list|check|map`: the schedule space of one model
// shape, and a schedule carried to another shape (scheduler/space/profile.h),
// computed locally by scheduler/ (no coordinator needed).
//
//   prism schedules count --d-model 768 --layers 12 --base-heads 12
//   prism schedules list --d-model 768 --layers 12 --base-heads 12 --limit 5
//   prism schedules check --d-model 768 --base-heads 12 --schedule 3x3,6x3,12x6
//   prism schedules map 1x2,2x1,4x3 --from tiny --to 124m
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/json.h"
#include "cli/command.h"
#include "cli/output.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/principles.h"
#include "scheduler/space/profile.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"

namespace prism::cli {
namespace {

constexpr int kDefaultListLimit = 20;

struct SpaceFlags {
  int d_model = 0;
  int layers = 0;
  int base_heads = 0;
  std::string principles = "none";
  int min_run = kDefaultMinRun;
  int max_run = kDefaultMaxRun;
};

struct CountOptions {
  SpaceFlags space;
  std::string format = "text";
};

struct ListOptions {
  SpaceFlags space;
  int limit = kDefaultListLimit;
  std::string page_token;
  std::string format = "text";
};

struct CheckOptions {
  SpaceFlags space;
  bool layers_given = false;
  std::string schedule;
  std::string format = "text";
};

struct MapCommandOptions {
  std::string schedule;
  std::string from;
  std::string to;
  double max_ratio_error = kDefaultMaxRatioError;
  std::string format = "text";
};

void AddShapeFlags(CLI::App* command, SpaceFlags* flags, bool with_layers) {
  command->add_option("--d-model", flags->d_model, "Model width d_model")
      ->required();
  if (with_layers) {
    command->add_option("--layers", flags->layers, "Number of layers L")
        ->required();
  }
  command
      ->add_option("--base-heads", flags->base_heads,
                   "Baseline head count; the last layer must have it")
      ->required();
  command
      ->add_option("--min-run", flags->min_run,
                   "Shortest run of a non-baseline head count (smooth)")
      ->capture_default_str();
  command
      ->add_option("--max-run", flags->max_run,
                   "Longest run of a non-baseline head count (smooth)")
      ->capture_default_str();
}

void AddSpaceFlags(CLI::App* command, SpaceFlags* flags) {
  AddShapeFlags(command, flags, /*with_layers=*/true);
  command
      ->add_option("--principles", flags->principles,
                   "Principle filters: none, all, or a comma-separated list "
                   "of smooth, baseline, pow2")
      ->capture_default_str();
}

absl::StatusOr<SpaceSpec> ToSpec(const SpaceFlags& flags) {
  absl::StatusOr<PrincipleSet> principles = ParsePrinciples(flags.principles);
  if (!principles.ok()) return principles.status();
  SpaceSpec spec;
  spec.d_model = flags.d_model;
  spec.layers = flags.layers;
  spec.base_heads = flags.base_heads;
  spec.principles = *principles;
  spec.min_run = flags.min_run;
  spec.max_run = flags.max_run;
  if (absl::Status valid = ValidateSpace(spec); !valid.ok()) return valid;
  return spec;
}

std::string FormatDouble(double value) {
  return absl::StrFormat("%.4g", value);
}

std::string Bool(bool value) { return value ? "true" : "false"; }

// HeadDims writes per-layer head dims in the schedule's block form
// ("256x3,128x3,64x6"), which stays short for deep models.
std::string HeadDims(const std::vector<int>& dims) {
  return Schedule(dims).ToString();
}

std::string JsonInts(const std::vector<int>& values) {
  return absl::StrCat("[", absl::StrJoin(values, ","), "]");
}

// ReportFields is one schedule's report as JSON object members (no braces,
// so callers can add their own); the names follow prism.v1.PrincipleReport.
std::string ReportFields(const Schedule& s, const SchedulePrinciples& p) {
  return absl::StrCat(
      "\"schedule\": \"", s.ToString(), "\", \"heads\": ", JsonInts(s.heads()),
      ", \"head_dims\": ", JsonInts(p.head_dims),
      ", \"smooth\": ", Bool(p.smooth), ", \"baseline\": ", Bool(p.baseline),
      ", \"pow2\": ", Bool(p.pow2), ", \"transitions\": ", p.transitions,
      ", \"max_adjacent_ratio\": ", FormatDouble(p.max_adjacent_ratio),
      ", \"baseline_fraction\": ", FormatDouble(p.baseline_fraction),
      ", \"is_uniform\": ", Bool(s.IsUniform()));
}

int Count(const CountOptions& options) {
  constexpr char kCommand[] = "schedules count";
  absl::StatusOr<Format> format = ParseFormat(options.format, false);
  if (!format.ok()) return ReportError(kCommand, format.status());
  absl::StatusOr<SpaceSpec> spec = ToSpec(options.space);
  if (!spec.ok()) return ReportError(kCommand, spec.status());
  absl::StatusOr<SpaceCount> count = CountSchedules(*spec);
  if (!count.ok()) return ReportError(kCommand, count.status());
  if (*format == Format::kJson) {
    std::cout << "{\"count\": " << count->value
              << ", \"exceeds_uint64\": " << Bool(count->exceeds_uint64)
              << "}\n";
  } else {
    std::cout << count->ToString() << "\n";
  }
  return kExitOk;
}

int List(const ListOptions& options) {
  constexpr char kCommand[] = "schedules list";
  absl::StatusOr<Format> format = ParseFormat(options.format);
  if (!format.ok()) return ReportError(kCommand, format.status());
  if (options.limit < 1 || options.limit > kMaxPageSize) {
    return ReportError(kCommand, absl::InvalidArgumentError(absl::StrCat(
                                     "--limit must be between 1 and ",
                                     kMaxPageSize, ", got ", options.limit)));
  }
  absl::StatusOr<SpaceSpec> spec = ToSpec(options.space);
  if (!spec.ok()) return ReportError(kCommand, spec.status());
  absl::StatusOr<SchedulePage> page =
      ListSchedules(*spec, options.limit, options.page_token);
  if (!page.ok()) return ReportError(kCommand, page.status());
  // The first row's index comes from the token; ranks follow consecutively.
  uint64_t first = 0;
  if (!page->schedules.empty()) {
    absl::StatusOr<uint64_t> rank = RankSchedule(*spec, page->schedules[0]);
    if (!rank.ok()) return ReportError(kCommand, rank.status());
    first = *rank;
  }

  if (*format == Format::kJson) {
    std::ostringstream out;
    out << "{\"schedules\": [";
    for (size_t i = 0; i < page->schedules.size(); ++i) {
      const Schedule& s = page->schedules[i];
      out << (i ? ",\n  " : "\n  ") << "{\"index\": " << first + i << ", "
          << ReportFields(s, ReportPrinciples(*spec, s)) << "}";
    }
    out << (page->schedules.empty() ? "" : "\n") << "], \"next_page_token\": \""
        << page->next_page_token << "\"}\n";
    std::cout << out.str();
    return kExitOk;
  }
  Table table({"index", "schedule", "smooth", "baseline", "pow2", "transitions",
               "max ratio", "baseline fraction", "head dims"});
  for (size_t i = 0; i < page->schedules.size(); ++i) {
    const Schedule& s = page->schedules[i];
    const SchedulePrinciples p = ReportPrinciples(*spec, s);
    table.AddRow({absl::StrCat(first + i), s.ToString(), Bool(p.smooth),
                  Bool(p.baseline), Bool(p.pow2), absl::StrCat(p.transitions),
                  FormatDouble(p.max_adjacent_ratio),
                  FormatDouble(p.baseline_fraction), HeadDims(p.head_dims)});
  }
  table.Print(std::cout, *format);
  if (!page->next_page_token.empty()) {
    std::cerr << "next page: --page-token " << page->next_page_token << "\n";
  }
  return kExitOk;
}

int Check(const CheckOptions& options) {
  constexpr char kCommand[] = "schedules check";
  absl::StatusOr<Format> format = ParseFormat(options.format, false);
  if (!format.ok()) return ReportError(kCommand, format.status());
  absl::StatusOr<Schedule> schedule = ParseSchedule(options.schedule);
  if (!schedule.ok()) return ReportError(kCommand, schedule.status());
  // Without --layers the schedule sets the depth; with it, a different
  // depth is an error CheckHardConstraints names.
  SpaceFlags flags = options.space;
  if (!options.layers_given) flags.layers = schedule->layers();
  absl::StatusOr<SpaceSpec> spec = ToSpec(flags);
  if (!spec.ok()) return ReportError(kCommand, spec.status());
  if (absl::Status ok = CheckHardConstraints(*spec, *schedule); !ok.ok()) {
    return ReportError(kCommand, ok);
  }
  const SchedulePrinciples p = ReportPrinciples(*spec, *schedule);
  absl::StatusOr<uint64_t> index = RankSchedule(*spec, *schedule);
  if (!index.ok()) return ReportError(kCommand, index.status());
  if (*format == Format::kJson) {
    std::cout << "{" << ReportFields(*schedule, p) << ", \"index\": " << *index
              << "}\n";
    return kExitOk;
  }
  Table table({"property", "value"});
  table.AddRow({"schedule", schedule->ToString()});
  table.AddRow({"layers", absl::StrCat(schedule->layers())});
  table.AddRow({"index", absl::StrCat(*index)});
  table.AddRow({"smooth", Bool(p.smooth)});
  table.AddRow({"baseline", Bool(p.baseline)});
  table.AddRow({"pow2", Bool(p.pow2)});
  table.AddRow({"transitions", absl::StrCat(p.transitions)});
  table.AddRow({"max ratio", FormatDouble(p.max_adjacent_ratio)});
  table.AddRow({"baseline fraction", FormatDouble(p.baseline_fraction)});
  table.AddRow({"head dims", HeadDims(p.head_dims)});
  table.AddRow({"uniform", Bool(schedule->IsUniform())});
  table.Print(std::cout, Format::kText);
  return kExitOk;
}

std::string JsonDoubles(const std::vector<double>& values) {
  std::vector<std::string> parts;
  for (double v : values) parts.push_back(FormatDouble(v));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

std::string JsonStrings(const std::vector<std::string>& values) {
  std::vector<std::string> parts;
  for (const std::string& v : values) parts.push_back(JsonString(v));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

int Map(const MapCommandOptions& options) {
  constexpr char kCommand[] = "schedules map";
  absl::StatusOr<Format> format = ParseFormat(options.format, false);
  if (!format.ok()) return ReportError(kCommand, format.status());
  absl::StatusOr<Schedule> schedule = ParseSchedule(options.schedule);
  if (!schedule.ok()) return ReportError(kCommand, schedule.status());
  absl::StatusOr<ModelShape> from = FindPreset(options.from);
  if (!from.ok()) return ReportError(kCommand, from.status());
  absl::StatusOr<ModelShape> to = FindPreset(options.to);
  if (!to.ok()) return ReportError(kCommand, to.status());
  MapOptions map_options;
  map_options.max_ratio_error = options.max_ratio_error;
  absl::StatusOr<ScheduleMapping> m =
      MapSchedule(*schedule, *from, *to, map_options);
  if (!m.ok()) return ReportError(kCommand, m.status());

  if (*format == Format::kJson) {
    std::ostringstream out;
    out << "{\"from\": " << JsonString(m->from)
        << ", \"to\": " << JsonString(m->to) << ", \"schedule\": \""
        << m->source.ToString() << "\", \"mapped\": \"" << m->mapped.ToString()
        << "\", \"source_ratios\": " << JsonDoubles(m->source_ratios)
        << ", \"distortion\": {\"max_error\": "
        << FormatDouble(m->distortion.max_error)
        << ", \"mean_error\": " << FormatDouble(m->distortion.mean_error)
        << "}, \"principles\": {\"source\": \""
        << m->source_principles.ToString() << "\", \"mapped\": \""
        << m->mapped_principles.ToString() << "\", \"kept\": \""
        << m->kept.ToString() << "\", \"dropped\": " << JsonStrings(m->dropped)
        << "}, \"layers\": [";
    for (size_t j = 0; j < m->layers.size(); ++j) {
      const LayerMapping& l = m->layers[j];
      out << (j ? ",\n  " : "\n  ") << "{\"layer\": " << j + 1
          << ", \"depth_begin\": " << FormatDouble(l.depth_begin)
          << ", \"depth_end\": " << FormatDouble(l.depth_end)
          << ", \"profile_ratio\": " << FormatDouble(l.profile_ratio)
          << ", \"heads\": " << l.heads
          << ", \"ratio\": " << FormatDouble(l.ratio)
          << ", \"max_error\": " << FormatDouble(l.max_error)
          << ", \"mean_error\": " << FormatDouble(l.mean_error) << "}";
    }
    out << "\n]}\n";
    std::cout << out.str();
    return kExitOk;
  }
  std::cout << m->source.ToString() << " (" << m->from << ") -> "
            << m->mapped.ToString() << " (" << m->to << ")\n"
            << "distortion: max " << FormatDouble(m->distortion.max_error)
            << " doublings, mean " << FormatDouble(m->distortion.mean_error)
            << " doublings (|log2 mapped ratio / profile ratio| over depth)\n"
            << "principles: " << m->from << " "
            << m->source_principles.ToString() << "; " << m->to << " "
            << m->mapped_principles.ToString() << "; kept "
            << m->kept.ToString() << "\n";
  for (const std::string& dropped : m->dropped) {
    std::cout << "not kept: " << dropped << "\n";
  }
  Table table({"layer", "depth", "profile ratio", "heads", "ratio", "max error",
               "mean error"});
  for (size_t j = 0; j < m->layers.size(); ++j) {
    const LayerMapping& l = m->layers[j];
    table.AddRow({absl::StrCat(j + 1),
                  absl::StrFormat("%.3f-%.3f", l.depth_begin, l.depth_end),
                  FormatDouble(l.profile_ratio), absl::StrCat(l.heads),
                  FormatDouble(l.ratio), FormatDouble(l.max_error),
                  FormatDouble(l.mean_error)});
  }
  table.Print(std::cout, Format::kText);
  return kExitOk;
}

}  // namespace

void RegisterSchedulesCommands(CLI::App& app, Action* action) {
  CLI::App* schedules = app.add_subcommand(
      "schedules", "Count, list and check the head schedules of a model shape");
  schedules->require_subcommand(1);

  CLI::App* count = schedules->add_subcommand(
      "count",
      "Print the number of valid schedules (digits, or \"more than "
      "18446744073709551615\")");
  auto count_options = std::make_shared<CountOptions>();
  AddSpaceFlags(count, &count_options->space);
  count->add_option("--format", count_options->format, "text or json")
      ->capture_default_str();
  count->callback([count_options, action] {
    *action = [count_options] { return Count(*count_options); };
  });

  CLI::App* list = schedules->add_subcommand(
      "list",
      "List schedules in canonical order, one page at a time (the next "
      "page's token goes to stderr, or into the JSON object)");
  auto list_options = std::make_shared<ListOptions>();
  AddSpaceFlags(list, &list_options->space);
  list->add_option("--limit", list_options->limit, "Schedules per page")
      ->capture_default_str();
  list->add_option("--page-token", list_options->page_token,
                   "Token printed by the previous page");
  list->add_option("--format", list_options->format, "text, json or csv")
      ->capture_default_str();
  list->callback([list_options, action] {
    *action = [list_options] { return List(*list_options); };
  });

  CLI::App* check = schedules->add_subcommand(
      "check",
      "Check one schedule against the hard constraints and report its "
      "principles; exit 2 naming the violated constraint and layer");
  auto check_options = std::make_shared<CheckOptions>();
  AddShapeFlags(check, &check_options->space, /*with_layers=*/false);
  CLI::Option* layers =
      check->add_option("--layers", check_options->space.layers,
                        "Expected number of layers (default: the schedule's)");
  check
      ->add_option("--schedule", check_options->schedule,
                   "Schedule as HEADSxLAYERS blocks, e.g. 3x3,6x3,12x6")
      ->required();
  check->add_option("--format", check_options->format, "text or json")
      ->capture_default_str();
  check->callback([check_options, layers, action] {
    check_options->layers_given = layers->count() > 0;
    *action = [check_options] { return Check(*check_options); };
  });
  CLI::App* map = schedules->add_subcommand(
      "map",
      "Map a schedule of one preset onto another by its profile (heads / "
      "base heads over relative depth): the nearest valid schedule there, "
      "keeping the principles the source holds, with the distortion");
  auto map_options = std::make_shared<MapCommandOptions>();
  map->add_option("schedule", map_options->schedule,
                  "Schedule as HEADSxLAYERS blocks, e.g. 1x2,2x1,4x3")
      ->required();
  map->add_option("--from", map_options->from, "Preset the schedule is of")
      ->required();
  map->add_option("--to", map_options->to, "Preset to map it onto")->required();
  map->add_option("--max-ratio-error", map_options->max_ratio_error,
                  "Largest distance, in doublings, from a layer's ratio to "
                  "the nearest head ratio the target offers")
      ->capture_default_str();
  map->add_option("--format", map_options->format, "text or json")
      ->capture_default_str();
  map->callback([map_options, action] {
    *action = [map_options] { return Map(*map_options); };
  });
}

}  // namespace prism::cli
