#include "cli/views/compare.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

Table CompareTable(const v1::CompareResponse& response) {
  Table table(
      {"a", "b", "common_seeds", "delta_b_minus_a", "ci95", "verdict_b", "p"});
  const v1::Interval& d = response.delta();
  table.AddRow({response.a().schedule(), response.b().schedule(),
                absl::StrCat(d.n()),
                d.n() > 0 ? fmt::format("{:+.4f}", d.mean()) : "", HalfWidth(d),
                EnumValueName(response.verdict()),
                response.has_p_value() ? PValue(response.p_value()) : ""});
  return table;
}

std::string CompareMethod() {
  return "verdict_b: b against a, two-sided paired t-test of b - a over the "
         "common seeds at alpha 0.05, not adjusted (one planned comparison); "
         "delta < 0: b's val loss is lower; needs_seeds = fewer than 2 common "
         "seeds";
}

void PrintCompare(const v1::CompareResponse& response, Format format,
                  std::ostream& out) {
  if (format == Format::kJson) {
    out << ProtoJson(response);
    return;
  }
  CompareTable(response).Print(out, format);
  if (format == Format::kCsv) return;
  if (!response.delta().has_high()) out << "ci95, p - = fewer than 2 seeds\n";
  out << CompareMethod() << "\n";
}

}  // namespace prism::cli
