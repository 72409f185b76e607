#include "scheduler/analysis/principle_analysis.h"

#include <cmath>
#include <cstddef>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/stats/statistics.h"

namespace prism {
namespace {

constexpr double kConfidence = 0.95;
// Names joins principle names as "smooth", "smooth and pow2",
// "smooth, baseline and pow2".
std::string Names(const std::vector<Principle>& principles) {
  std::vector<std::string> names;
  for (Principle p : principles) names.push_back(PrincipleName(p));
  if (names.size() <= 1) return absl::StrJoin(names, "");
  const std::string last = names.back();
  names.pop_back();
  return absl::StrCat(absl::StrJoin(names, ", "), " and ", last);
}

// MarkInseparable sets kNotSeparable and a note naming the group on the
// effects `inseparable` (indices into `effects` and `indicator`). Two
// principles violated by the same schedules, or each exactly where the other
// is not, co-vary completely; any other dependence is named as such.
void MarkInseparable(const std::vector<size_t>& inseparable,
                     const std::vector<std::vector<double>>& indicator,
                     std::vector<PrincipleEffect>& effects) {
  // group[a] is the representative of a's group (union-find on pairs).
  std::vector<size_t> group(inseparable.size());
  std::iota(group.begin(), group.end(), 0);
  std::vector<bool> complementary(inseparable.size(), false);
  std::vector<bool> paired(inseparable.size(), false);
  for (size_t a = 0; a < inseparable.size(); ++a) {
    for (size_t b = a + 1; b < inseparable.size(); ++b) {
      const std::vector<double>& x = indicator[inseparable[a]];
      const std::vector<double>& y = indicator[inseparable[b]];
      bool same = true, opposite = true;
      for (size_t i = 0; i < x.size(); ++i) {
        same &= x[i] == y[i];
        opposite &= x[i] != y[i];
      }
      if (!same && !opposite) continue;
      paired[a] = paired[b] = true;
      complementary[group[a]] = opposite;
      const size_t from = group[b];
      for (size_t& g : group) {
        if (g == from) g = group[a];
      }
    }
  }
  // Principles in no pair are dependent only together: one group.
  size_t rest = inseparable.size();
  for (size_t a = 0; a < inseparable.size(); ++a) {
    if (paired[a]) continue;
    if (rest == inseparable.size()) rest = a;
    group[a] = rest;
  }
  for (size_t a = 0; a < inseparable.size(); ++a) {
    if (group[a] != a) continue;
    std::vector<size_t> members;
    std::vector<Principle> names;
    for (size_t b = 0; b < inseparable.size(); ++b) {
      if (group[b] != a) continue;
      members.push_back(inseparable[b]);
      names.push_back(effects[inseparable[b]].principle);
    }
    std::string note;
    if (!paired[a]) {
      note = absl::StrCat(Names(names), members.size() == 1 ? " is" : " are",
                          " linearly dependent over these schedules: effects "
                          "not separable");
    } else if (members.size() == 2 && complementary[a]) {
      note = absl::StrCat(Names(names),
                          " co-vary completely (every schedule violates "
                          "exactly one): effects not separable");
    } else {
      note = absl::StrCat(Names(names),
                          " co-vary completely: effects not separable");
    }
    for (size_t m : members) {
      effects[m].status = EffectStatus::kNotSeparable;
      effects[m].note = note;
    }
  }
}

}  // namespace

PrincipleAnalysis AnalyzePrinciples(
    const std::vector<ScheduleDelta>& schedules) {
  std::vector<const ScheduleDelta*> observed;
  for (const ScheduleDelta& s : schedules) {
    if (s.paired_seeds >= 1 && std::isfinite(s.mean_delta)) {
      observed.push_back(&s);
    }
  }
  const size_t m = observed.size();
  PrincipleAnalysis analysis;
  analysis.schedules = static_cast<int>(m);
  std::vector<double> y(m), weights(m);
  for (size_t i = 0; i < m; ++i) {
    y[i] = observed[i]->mean_delta;
    weights[i] = observed[i]->paired_seeds;
  }

  // Per principle: counts, raw means, indicator column.
  std::vector<std::vector<double>> indicator;
  for (Principle p : kAllPrinciples) {
    PrincipleEffect effect;
    effect.principle = p;
    std::vector<double> column(m, 0.0);
    double satisfied = 0.0, violated = 0.0;
    for (size_t i = 0; i < m; ++i) {
      if (observed[i]->violated.Has(p)) {
        column[i] = 1.0;
        ++effect.violated;
        violated += y[i];
      } else {
        ++effect.satisfied;
        satisfied += y[i];
      }
    }
    if (effect.satisfied > 0) {
      effect.mean_delta_satisfied = satisfied / effect.satisfied;
    }
    if (effect.violated > 0) {
      effect.mean_delta_violated = violated / effect.violated;
    }
    if (m == 0) {
      effect.status = EffectStatus::kTooFewSchedules;
      effect.note = "no schedule has a paired delta vs the baseline yet";
    } else if (effect.violated == 0) {
      effect.status = EffectStatus::kNothingViolates;
      effect.note = "nothing violates it";
    } else if (effect.satisfied == 0) {
      effect.status = EffectStatus::kEverythingViolates;
      effect.note =
          "every schedule violates it: nothing to compare with but the "
          "baseline";
    } else {
      effect.status = EffectStatus::kEstimated;
    }
    analysis.effects.push_back(std::move(effect));
    indicator.push_back(std::move(column));
  }
  if (m == 0) return analysis;

  // The design: the intercept, then the principles still in question.
  std::vector<size_t> candidates;
  for (size_t e = 0; e < analysis.effects.size(); ++e) {
    if (analysis.effects[e].status == EffectStatus::kEstimated) {
      candidates.push_back(e);
    }
  }
  std::vector<double> root(m);
  for (size_t i = 0; i < m; ++i) root[i] = std::sqrt(weights[i]);
  // Scaled as the fit scales them, so the rank tests see what it sees.
  auto scaled_columns = [&](const std::vector<size_t>& which) {
    Columns columns{root};
    for (size_t e : which) {
      std::vector<double> c = indicator[e];
      for (size_t i = 0; i < m; ++i) c[i] *= root[i];
      columns.push_back(std::move(c));
    }
    return columns;
  };
  const int rank = ColumnRank(scaled_columns(candidates));
  std::vector<size_t> inseparable;
  for (size_t a = 0; a < candidates.size(); ++a) {
    std::vector<size_t> others = candidates;
    others.erase(others.begin() + a);
    if (ColumnRank(scaled_columns(others)) == rank) {
      inseparable.push_back(candidates[a]);
    }
  }
  MarkInseparable(inseparable, indicator, analysis.effects);

  // Fit on a basis of the design: estimable coefficients are the same
  // whichever column of an inseparable group stands for it.
  const ThinQr basis = DecomposeColumns(scaled_columns(candidates));
  Columns design;
  std::vector<size_t> design_effect;  // effect index per design column
  for (size_t c : basis.kept) {
    design.emplace_back(c == 0 ? std::vector<double>(m, 1.0)
                               : indicator[candidates[c - 1]]);
    design_effect.push_back(c == 0 ? analysis.effects.size()
                                   : candidates[c - 1]);
  }
  const std::optional<LeastSquaresFit> fit =
      m > design.size() ? FitWeightedLeastSquares(design, y, weights)
                        : std::nullopt;
  if (!fit.has_value()) {
    for (PrincipleEffect& effect : analysis.effects) {
      if (effect.status != EffectStatus::kEstimated) continue;
      effect.status = EffectStatus::kTooFewSchedules;
      effect.note = absl::StrCat("too few schedules: ", m,
                                 " with a paired delta, at least ",
                                 design.size() + 1, " needed");
    }
    return analysis;
  }
  const double critical = StudentTQuantile(fit->dof, kConfidence);
  bool estimated = false;
  for (size_t c = 0; c < design.size(); ++c) {
    if (design_effect[c] == analysis.effects.size()) continue;
    PrincipleEffect& effect = analysis.effects[design_effect[c]];
    if (effect.status != EffectStatus::kEstimated) continue;
    const double b = fit->coefficients[c];
    const double se = fit->standard_errors[c];
    effect.effect = b;
    effect.standard_error = se;
    effect.low = b - critical * se;
    effect.high = b + critical * se;
    // No residual spread: as PairedTTestP, p is 0 unless b is exactly 0.
    effect.p_value =
        se > 0.0 ? StudentTTwoSidedP(b / se, fit->dof) : (b == 0.0 ? 1.0 : 0.0);
    effect.dof = fit->dof;
    estimated = true;
  }
  if (estimated) analysis.dof = fit->dof;
  return analysis;
}

}  // namespace prism
