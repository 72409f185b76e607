#include "cli/views/asha.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "fmt/format.h"

namespace prism::cli {

std::string AshaRungLine(const v1::AshaRung& rung) {
  return fmt::format(
      "rung {}: promoted {} / quota {} / reached {} of {} "
      "members{}",
      rung.step(), rung.promoted(), rung.promote_quota(), rung.schedules_size(),
      rung.members(), rung.complete() ? " (complete)" : "");
}

Table AshaRungsTable(const v1::RankResponse& response) {
  Table table({"rung", "schedule", "score", "scored_as", "seeds", "promoted"});
  for (const v1::AshaRung& rung : response.asha_rungs()) {
    for (const v1::AshaRungEntry& e : rung.schedules()) {
      table.AddRow({absl::StrCat(rung.step()), e.schedule(),
                    rung.paired() ? fmt::format("{:+.4f}", e.score())
                                  : Fixed(e.score(), 4),
                    rung.paired() ? "paired delta" : "val loss",
                    absl::StrCat(e.seeds()), e.promoted() ? "yes" : "no"});
    }
  }
  return table;
}

}  // namespace prism::cli
