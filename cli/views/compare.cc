#include "cli/views/compare.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "cli/views/format.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

namespace {

// The table's one row is the response.
constexpr Column<v1::CompareResponse> kCompareColumns[] = {
    {"a", [](const v1::CompareResponse& c) { return c.a().schedule(); }},
    {"b", [](const v1::CompareResponse& c) { return c.b().schedule(); }},
    {"common_seeds",
     [](const v1::CompareResponse& c) { return absl::StrCat(c.delta().n()); }},
    {"delta_b_minus_a",
     [](const v1::CompareResponse& c) -> std::string {
       return c.delta().n() > 0 ? fmt::format("{:+.4f}", c.delta().mean()) : "";
     }},
    {"ci95", [](const v1::CompareResponse& c) { return HalfWidth(c.delta()); }},
    {"verdict_b",
     [](const v1::CompareResponse& c) { return EnumValueName(c.verdict()); }},
    {"p",
     [](const v1::CompareResponse& c) -> std::string {
       return c.has_p_value() ? PValue(c.p_value()) : "";
     }},
};

}  // namespace

Table CompareTable(const v1::CompareResponse& response) {
  return TableOf<v1::CompareResponse>(kCompareColumns,
                                      absl::MakeConstSpan(&response, 1));
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
