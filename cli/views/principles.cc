#include "cli/views/principles.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/views/format.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

std::string PrincipleSummaryLine(const v1::RankResponse& response) {
  std::vector<std::string> estimated, not_estimable;
  for (const v1::PrincipleEffect& e : response.principle_effects()) {
    if (e.has_effect()) {
      const std::string half = HalfWidth(e.effect());
      estimated.push_back(fmt::format(
          "{} {:+.4f}{}{}", EnumValueName(e.principle()), e.effect().mean(),
          half.empty() ? "" : absl::StrCat(" ±", half),
          e.has_p_value() ? absl::StrCat(" p ", PValue(e.p_value())) : ""));
    } else {
      not_estimable.push_back(EnumValueName(e.principle()));
    }
  }
  if (estimated.empty() && not_estimable.empty()) return "";
  std::string line = "principles";
  if (!estimated.empty()) {
    absl::StrAppend(&line, " (effect of violating, 95% CI, p): ",
                    absl::StrJoin(estimated, ", "));
  }
  if (!not_estimable.empty()) {
    absl::StrAppend(&line, estimated.empty() ? ": " : "; ",
                    absl::StrJoin(not_estimable, ", "),
                    " not estimable here (see the table)");
  }
  return line;
}

std::string PrincipleEffectNote(const v1::PrincipleEffect& effect) {
  if (effect.status() == v1::EFFECT_ESTIMATED && effect.has_effect()) {
    return fmt::format("{} schedules, {} dof", effect.effect().n(),
                       effect.dof());
  }
  if (effect.status() == v1::EFFECT_STATUS_UNSPECIFIED) return "";
  return absl::StrCat(
      "not estimable (",
      effect.note().empty() ? EnumValueName(effect.status()) : effect.note(),
      ")");
}

std::string PrincipleMethod(bool wide) {
  std::string text =
      "effect: coefficient of violating the principle in a regression of "
      "each schedule's mean paired delta on all the principles' "
      "violations (weighted by paired seeds, baseline left out), with its "
      "95% t-interval half-width and unadjusted p";
  if (wide) {
    absl::StrAppend(&text,
                    "; mean_delta_*: plain means, not adjusted for the other "
                    "principles");
  }
  return text;
}

namespace {

// kNarrowNoteWidth is the widest note the default principle table shows.
constexpr size_t kNarrowNoteWidth = 39;

}  // namespace

std::vector<std::string> PrincipleLongNotes(const v1::RankResponse& response) {
  std::vector<std::string> lines;
  for (const v1::PrincipleEffect& e : response.principle_effects()) {
    const std::string note = PrincipleEffectNote(e);
    if (note.size() > kNarrowNoteWidth) {
      lines.push_back(absl::StrCat(EnumValueName(e.principle()), ": ", note));
    }
  }
  return lines;
}

namespace {

using EffectColumn = Column<v1::PrincipleEffect>;

// Signed is a mean delta to 4 decimals with its sign, "" when `present` is
// false.
std::string Signed(bool present, double value) {
  return present ? fmt::format("{:+.4f}", value) : "";
}

constexpr EffectColumn kPrinciple = {
    "principle",
    [](const v1::PrincipleEffect& e) { return EnumValueName(e.principle()); }};
constexpr EffectColumn kSatisfied = {
    "satisfied",
    [](const v1::PrincipleEffect& e) { return absl::StrCat(e.satisfied()); }};
constexpr EffectColumn kViolated = {
    "violated",
    [](const v1::PrincipleEffect& e) { return absl::StrCat(e.violated()); }};
constexpr EffectColumn kEffect = {"effect", [](const v1::PrincipleEffect& e) {
                                    return Signed(e.has_effect(),
                                                  e.effect().mean());
                                  }};
constexpr EffectColumn kEffectCi95 = {
    "effect_ci95", [](const v1::PrincipleEffect& e) -> std::string {
      return e.has_effect() ? HalfWidth(e.effect()) : "";
    }};
constexpr EffectColumn kP = {
    "p", [](const v1::PrincipleEffect& e) -> std::string {
      return e.has_p_value() ? PValue(e.p_value()) : "";
    }};

// kWideColumns add the plain means and keep the notes whole.
constexpr EffectColumn kWideColumns[] = {
    kPrinciple,
    kSatisfied,
    kViolated,
    kEffect,
    kEffectCi95,
    kP,
    {"mean_delta_satisfied",
     [](const v1::PrincipleEffect& e) {
       return Signed(e.satisfied() > 0, e.mean_delta_satisfied());
     }},
    {"mean_delta_violated",
     [](const v1::PrincipleEffect& e) {
       return Signed(e.violated() > 0, e.mean_delta_violated());
     }},
    {"note", PrincipleEffectNote},
};

// kDefaultColumns keep the table within 100 columns: a longer note goes
// under the table (PrincipleLongNotes).
constexpr EffectColumn kDefaultColumns[] = {
    kPrinciple,
    kSatisfied,
    kViolated,
    kEffect,
    kEffectCi95,
    kP,
    {"note",
     [](const v1::PrincipleEffect& e) {
       std::string note = PrincipleEffectNote(e);
       return note.size() > kNarrowNoteWidth ? "see below" : note;
     }},
};

}  // namespace

absl::Span<const Column<v1::PrincipleEffect>> PrincipleEffectColumns(
    bool wide) {
  if (wide) return kWideColumns;
  return kDefaultColumns;
}

Table PrincipleEffectsTable(const v1::RankResponse& response, bool wide) {
  return TableOf(PrincipleEffectColumns(wide), response.principle_effects());
}

}  // namespace prism::cli
