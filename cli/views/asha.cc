#include "cli/views/asha.h"

#include <string>
#include <vector>

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

namespace {

// AshaRow is a schedule that reached a rung.
struct AshaRow {
  const v1::AshaRung& rung;
  const v1::AshaRungEntry& entry;
};

constexpr Column<AshaRow> kAshaColumns[] = {
    {"rung", [](const AshaRow& r) { return absl::StrCat(r.rung.step()); }},
    {"schedule", [](const AshaRow& r) { return r.entry.schedule(); }},
    {"score",
     [](const AshaRow& r) {
       return r.rung.paired() ? fmt::format("{:+.4f}", r.entry.score())
                              : Fixed(r.entry.score(), 4);
     }},
    {"scored_as",
     [](const AshaRow& r) -> std::string {
       return r.rung.paired() ? "paired delta" : "val loss";
     }},
    {"seeds", [](const AshaRow& r) { return absl::StrCat(r.entry.seeds()); }},
    {"promoted",
     [](const AshaRow& r) -> std::string {
       return r.entry.promoted() ? "yes" : "no";
     }},
};

}  // namespace

Table AshaRungsTable(const v1::RankResponse& response) {
  std::vector<AshaRow> rows;
  for (const v1::AshaRung& rung : response.asha_rungs()) {
    for (const v1::AshaRungEntry& e : rung.schedules())
      rows.push_back({rung, e});
  }
  return TableOf<AshaRow>(kAshaColumns, rows);
}

}  // namespace prism::cli
