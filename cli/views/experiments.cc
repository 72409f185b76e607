#include "cli/views/experiments.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

Table ExperimentsTable(const v1::ListExperimentsResponse& response) {
  Table table({"id", "name", "owner", "state", "priority", "queued", "running",
               "completed", "failed", "cancelled", "total", "progress",
               "position", "reason"});
  for (const v1::Experiment& e : response.experiments()) {
    const v1::TrialCounts& c = e.counts();
    table.AddRow(
        {absl::StrCat(e.id()), e.name(), e.owner(), EnumValueName(e.state()),
         absl::StrCat(e.priority()), absl::StrCat(c.queued()),
         absl::StrCat(c.leased() + c.running()), absl::StrCat(c.completed()),
         absl::StrCat(c.failed() + c.diverged()), absl::StrCat(c.cancelled()),
         absl::StrCat(c.total()), fmt::format("{:.0f}%", e.progress() * 100),
         e.queue_position() > 0 ? absl::StrCat(e.queue_position()) : "",
         e.queue_reason()});
  }
  return table;
}

Table NarrowExperimentsTable(const v1::ListExperimentsResponse& response) {
  constexpr size_t kNameWidth = 28;
  Table table({"id", "name", "owner", "state", "pri", "done", "running",
               "queued", "failed", "progress", "pos"});
  for (const v1::Experiment& e : response.experiments()) {
    const v1::TrialCounts& c = e.counts();
    const std::string name = CutToWidth(Printable(e.name()), kNameWidth);
    table.AddRow(
        {absl::StrCat(e.id()), name, e.owner(), EnumValueName(e.state()),
         absl::StrCat(e.priority()),
         absl::StrCat(c.completed(), "/", c.total()),
         absl::StrCat(c.leased() + c.running()), absl::StrCat(c.queued()),
         absl::StrCat(c.failed() + c.diverged()),
         fmt::format("{:.0f}%", e.progress() * 100),
         e.queue_position() > 0 ? absl::StrCat(e.queue_position()) : ""});
  }
  return table;
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
