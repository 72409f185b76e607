#include "cli/views/experiments.h"

#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

namespace {

using ExperimentColumn = Column<v1::Experiment>;

// kNameWidth: the narrow view fits 100 columns for names up to this long.
constexpr size_t kNameWidth = 28;

// The columns both views show; the narrow one names some of them shorter.
constexpr ExperimentColumn kId = {
    "id", [](const v1::Experiment& e) { return absl::StrCat(e.id()); }};
constexpr ExperimentColumn kOwner = {
    "owner", [](const v1::Experiment& e) { return e.owner(); }};
constexpr ExperimentColumn kState = {
    "state", [](const v1::Experiment& e) { return EnumValueName(e.state()); }};
constexpr ExperimentColumn kPriority = {
    "priority",
    [](const v1::Experiment& e) { return absl::StrCat(e.priority()); }};
constexpr ExperimentColumn kQueued = {
    "queued",
    [](const v1::Experiment& e) { return absl::StrCat(e.counts().queued()); }};
constexpr ExperimentColumn kRunning = {
    "running", [](const v1::Experiment& e) {
      return absl::StrCat(e.counts().leased() + e.counts().running());
    }};
constexpr ExperimentColumn kFailed = {
    "failed", [](const v1::Experiment& e) {
      return absl::StrCat(e.counts().failed() + e.counts().diverged());
    }};
constexpr ExperimentColumn kProgress = {
    "progress", [](const v1::Experiment& e) {
      return fmt::format("{:.0f}%", e.progress() * 100);
    }};
constexpr ExperimentColumn kPosition = {
    "position", [](const v1::Experiment& e) -> std::string {
      return e.queue_position() > 0 ? absl::StrCat(e.queue_position()) : "";
    }};

constexpr ExperimentColumn kWideColumns[] = {
    kId,
    {"name", [](const v1::Experiment& e) { return e.name(); }},
    kOwner,
    kState,
    kPriority,
    kQueued,
    kRunning,
    {"completed",
     [](const v1::Experiment& e) {
       return absl::StrCat(e.counts().completed());
     }},
    kFailed,
    {"cancelled",
     [](const v1::Experiment& e) {
       return absl::StrCat(e.counts().cancelled());
     }},
    {"total",
     [](const v1::Experiment& e) { return absl::StrCat(e.counts().total()); }},
    kProgress,
    kPosition,
    {"reason", [](const v1::Experiment& e) { return e.queue_reason(); }},
};

constexpr ExperimentColumn kNarrowColumns[] = {
    kId,
    {"name",
     [](const v1::Experiment& e) {
       return CutToWidth(Printable(e.name()), kNameWidth);
     }},
    kOwner,
    kState,
    {"pri", kPriority.cell},
    {"done",
     [](const v1::Experiment& e) {
       return absl::StrCat(e.counts().completed(), "/", e.counts().total());
     }},
    kRunning,
    kQueued,
    kFailed,
    kProgress,
    {"pos", kPosition.cell},
};

}  // namespace

absl::Span<const Column<v1::Experiment>> ExperimentsColumns(bool wide) {
  if (wide) return kWideColumns;
  return kNarrowColumns;
}

Table ExperimentsTable(const v1::ListExperimentsResponse& response) {
  return TableOf(ExperimentsColumns(/*wide=*/true), response.experiments());
}

Table NarrowExperimentsTable(const v1::ListExperimentsResponse& response) {
  return TableOf(ExperimentsColumns(/*wide=*/false), response.experiments());
}

std::string WaitingLines(const v1::ListExperimentsResponse& response) {
  std::string out;
  for (const v1::Experiment& e : response.experiments()) {
    if (e.queue_reason().empty()) continue;
    absl::StrAppend(
        &out,
        WrapText(absl::StrCat(
                     "waiting: experiment ", e.id(),
                     e.queue_position() > 0
                         ? absl::StrCat(" (position ", e.queue_position(), ")")
                         : "",
                     ": ", Printable(e.queue_reason())),
                 100, 2),
        "\n");
  }
  return out;
}

std::string SearchCostLine(const v1::Experiment& e) {
  if (e.grid_steps() <= 0) return "";
  return fmt::format(
      "steps trained: {} of the grid's {:.0f} ({:.1f}%)", e.steps_trained(),
      e.grid_steps(),
      100.0 * static_cast<double>(e.steps_trained()) / e.grid_steps());
}

}  // namespace prism::cli
