#include "scheduler/stats/verdicts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace prism {
namespace {

// The moderated t's dof is the posterior's, d0 + d, less this (see
// VarianceModel): the prior's scaled inverse-chi-square shape is assumed,
// and at a family's extreme levels (Holm's alpha / 119) the t's tail
// decides. Chosen on the tuning seeds (bench/RESULTS.md; 400 experiments,
// BH, 3 seeds): 0 left a null at log-sd spread 0.5 with a false verdict in
// 4.5% of experiments, 1 in 2.5%, 2 in 1% (with power there 0.34, 0.27,
// 0.17; at equal variances 0.83 for all three: the prior pools them).
constexpr double kPriorDofDiscount = 1.0;

// RowMoments is a sample's mean and variance (n - 1 dof; 0 below 2).
struct RowMoments {
  int n = 0;
  double mean = 0.0;
  double variance = 0.0;
};

RowMoments MomentsOf(const std::vector<double>& values, size_t n) {
  RowMoments m;
  m.n = static_cast<int>(std::min(n, values.size()));
  if (m.n == 0) return m;
  for (int i = 0; i < m.n; ++i) m.mean += values[i] / m.n;
  if (m.n < 2) return m;
  for (int i = 0; i < m.n; ++i) {
    m.variance += (values[i] - m.mean) * (values[i] - m.mean) / (m.n - 1);
  }
  return m;
}

// Tested is one row's t-test at one look.
struct Tested {
  size_t row = 0;
  RowMoments moments;  // of the paired deltas
  double sd = 0.0;     // the method's per-seed sd of a paired delta
  double dof = 0.0;
  double p = 1.0;
  double own_variance = 0.0;  // the row's own (moderated) trial variance
};

// SeedEffects fits loss = schedule + seed (additive, least squares by
// alternating means) over every row's completed seeds and returns the seed
// effects: removing them leaves each schedule's own seed-to-seed noise.
std::unordered_map<int64_t, double> SeedEffects(
    const std::vector<VerdictInput>& rows) {
  std::unordered_map<int64_t, double> seed_effect;
  std::vector<double> level(rows.size(), 0.0);
  for (int iteration = 0; iteration < 20; ++iteration) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].losses.empty()) continue;
      double sum = 0.0;
      for (const auto& [seed, loss] : rows[i].losses) {
        sum += loss - seed_effect[seed];
      }
      level[i] = sum / rows[i].losses.size();
    }
    std::unordered_map<int64_t, std::pair<double, int>> sums;
    for (size_t i = 0; i < rows.size(); ++i) {
      for (const auto& [seed, loss] : rows[i].losses) {
        auto& [sum, count] = sums[seed];
        sum += loss - level[i];
        ++count;
      }
    }
    double change = 0.0;
    for (const auto& [seed, sc] : sums) {
      const double next = sc.first / sc.second;
      change = std::max(change, std::fabs(next - seed_effect[seed]));
      seed_effect[seed] = next;
    }
    if (change < 1e-12) break;
  }
  return seed_effect;
}

// VarianceModel gives a row's test under the method in use (see the header).
// Moderated t: each schedule's own trial variance (its losses less the seed
// effects, n - 1 dof; the baseline's too) is moderated by a prior fitted to
// all of them by maximum likelihood, as its posterior mean, and a paired
// delta's variance is the schedule's plus the baseline's, on
// Welch-Satterthwaite's dof. Pairing alone would estimate the baseline's
// share from its own few seeds inside every schedule's variance, so one lucky
// baseline seed would move every verdict at once.
class VarianceModel {
 public:
  VarianceModel(VerdictMethod method, const std::vector<VerdictInput>& data,
                VerdictSummary& summary)
      : data_(data) {
    const std::unordered_map<int64_t, double> seed_effect = SeedEffects(data);
    adjusted_.resize(data.size());
    std::vector<double> variances;
    std::vector<double> dofs;
    for (size_t i = 0; i < data.size(); ++i) {
      for (size_t k = 0; k < data[i].paired_seeds.size(); ++k) {
        adjusted_[i].push_back(data[i].paired_losses[k] -
                               seed_effect.at(data[i].paired_seeds[k]));
      }
      if (data[i].is_baseline) baseline_ = i;
      if (adjusted_[i].size() < 2) continue;
      const RowMoments m = MomentsOf(adjusted_[i], adjusted_[i].size());
      variances.push_back(m.variance);
      dofs.push_back(m.n - 1);
      pooled_dof_ += m.n - 1;
    }
    const int usable = static_cast<int>(variances.size());
    const bool has_baseline =
        baseline_ < data.size() && adjusted_[baseline_].size() >= 2;
    if (method == VerdictMethod::kModeratedT && usable >= kMinPriorSchedules &&
        has_baseline) {
      prior_ = FitVariancePriorMaximumLikelihood(variances, dofs);
    }
    if (prior_.fitted) {
      const RowMoments b =
          MomentsOf(adjusted_[baseline_], adjusted_[baseline_].size());
      baseline_variance_ = PosteriorMeanVariance(prior_, b.variance, b.n - 1);
      baseline_dof_ = OwnDof(b.n - 1);
      summary.prior = prior_;
      // Two significant digits: the prior is an estimate, not a constant.
      summary.method_description = absl::StrCat(
          "moderated t (prior sd ",
          absl::StrFormat("%.2g", std::sqrt(prior_.variance)),
          std::isinf(prior_.dof) ? " pooled"
                                 : absl::StrFormat(" on %.1f dof", prior_.dof),
          ", from ", usable, " schedules)");
    } else if (method == VerdictMethod::kModeratedT) {
      summary.fell_back = true;
      summary.method_description =
          absl::StrCat("paired t (fallback: ", usable,
                       " schedule(s) with 2+ seeds paired with the baseline, ",
                       kMinPriorSchedules, " needed to borrow variance)");
    } else {
      summary.method_description = "paired t";
    }
  }

  // Test tests row `row` on its first n paired seeds.
  Tested Test(size_t row, size_t n) const {
    Tested t;
    t.row = row;
    t.moments = MomentsOf(data_[row].deltas, n);
    if (!prior_.fitted) {
      // The per-schedule paired t.
      t.dof = t.moments.n - 1;
      t.sd = std::sqrt(t.moments.variance);
    } else {
      const RowMoments own = MomentsOf(adjusted_[row], n);
      t.own_variance = PosteriorMeanVariance(prior_, own.variance, own.n - 1);
      const double own_dof = OwnDof(own.n - 1);
      const double a = t.own_variance;
      const double b = baseline_variance_;
      t.sd = std::sqrt(a + b);
      const double denominator = a * a / own_dof + b * b / baseline_dof_;
      t.dof = denominator > 0.0 ? (a + b) * (a + b) / denominator : own_dof;
      t.dof = std::max(1.0, t.dof);
    }
    const double se = t.sd / std::sqrt(static_cast<double>(t.moments.n));
    if (se == 0.0) {
      t.p = t.moments.mean == 0.0 ? 1.0 : 0.0;
    } else {
      t.p = StudentTTwoSidedP(t.moments.mean / se, t.dof);
    }
    return t;
  }

  bool moderated() const { return prior_.fitted; }
  double baseline_variance() const { return baseline_variance_; }

 private:
  // OwnDof is a moderated variance's dof: d0 + d less kPriorDofDiscount,
  // capped at the pooled dof (as limma caps df.total), never below d.
  double OwnDof(double dof) const {
    return std::max(
        dof, std::min(prior_.dof + dof - kPriorDofDiscount, pooled_dof_));
  }

  const std::vector<VerdictInput>& data_;
  std::vector<std::vector<double>> adjusted_;  // paired losses less seeds
  size_t baseline_ = std::numeric_limits<size_t>::max();
  VariancePrior prior_;
  double pooled_dof_ = 0.0;
  double baseline_variance_ = 0.0;
  double baseline_dof_ = 1.0;
};

Interval TInterval(const RowMoments& m, double sd, double dof,
                   double confidence) {
  Interval out;
  out.n = m.n;
  out.mean = m.mean;
  if (m.n < 2) return out;
  const double half = StudentTQuantile(dof, confidence) * sd /
                      std::sqrt(static_cast<double>(m.n));
  out.low = m.mean - half;
  out.high = m.mean + half;
  out.has_bounds = true;
  return out;
}

// RejectionLevel is the per-test level at which a family of m with R
// rejections rejects (see the header).
double RejectionLevel(VerdictFamily family, double alpha, int m, int r) {
  if (family == VerdictFamily::kHolm) {
    return r == 0 ? alpha / m : alpha / (m - r + 1);
  }
  return alpha * std::max(r, 1) / m;
}

int SeedsNeeded(const Tested& t, double level) {
  const double effect = std::fabs(t.moments.mean);
  if (!(effect > 0.0)) return kMaxSeedsNeeded;
  const double z =
      NormalQuantile(1.0 - level / 2.0) + NormalQuantile(kSeedsPower);
  const double n = std::ceil(std::pow(z * t.sd / effect, 2.0));
  if (!(n < kMaxSeedsNeeded)) return kMaxSeedsNeeded;
  return std::max(static_cast<int>(n), t.moments.n + 1);
}

// AssignBestSet marks Hsu's MCB set (see the header). With the moderated
// model, `own_variance` holds each row's own trial variance (the baseline's
// is `baseline_variance`): the difference of two schedules' means has
// variance v_i / n_i + v_j / n_j, a schedule's against the baseline (v_i +
// v_b) / n_i. Without it (paired t), a paired delta's variance is split
// evenly between the schedule and the baseline.
void AssignBestSet(const std::vector<VerdictInput>& data,
                   std::vector<RowVerdict>& rows,
                   const std::vector<double>* own_variance,
                   double baseline_variance, double alpha, int screened,
                   VerdictSummary& summary) {
  const bool pooled = summary.prior.fitted && std::isinf(summary.prior.dof);
  struct Candidate {
    size_t row;
    double mean;
    double variance;  // of one trial of the schedule
    double n;
  };
  std::vector<Candidate> candidates;
  double min_dof = std::numeric_limits<double>::infinity();
  bool any_schedule = false;
  size_t baseline_candidate = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const RowVerdict& r = rows[i];
    if (data[i].is_baseline) {
      baseline_candidate = candidates.size();
      candidates.push_back({i, 0.0, baseline_variance, 1.0});
    } else if (r.verdict != Verdict::kNeedsSeeds) {
      const double v = own_variance != nullptr ? (*own_variance)[i]
                                               : r.delta_sd * r.delta_sd / 2.0;
      candidates.push_back({i, r.delta_vs_baseline->mean, v,
                            static_cast<double>(r.delta_vs_baseline->n)});
      min_dof = std::min(min_dof, r.dof);
      any_schedule = true;
    }
  }
  if (!any_schedule) return;
  // A search that screened chose its finalists for looking good on the
  // trials these means come from: the comparisons are those of every
  // screened schedule, of which the finalists are a subset (as the
  // verdicts' family is, VerdictOptions::screened_schedules).
  const int k = std::max(static_cast<int>(candidates.size()) - 1, screened);
  // Dunnett's constant assumes one variance for all: only when the prior
  // pooled them. Otherwise the union bound over the k comparisons.
  const double dof = std::max(1.0, min_dof);
  double d = 0.0;
  if (k >= 1) {
    d = pooled ? DunnettOneSidedCritical(k, dof, 1.0 - alpha)
               : StudentTQuantile(dof, 1.0 - 2.0 * alpha / k);
  }
  summary.best_set_critical = d;
  const bool has_baseline =
      baseline_candidate < candidates.size() &&
      data[candidates[baseline_candidate].row].is_baseline;
  // A schedule's paired delta: its own variance plus the baseline's.
  auto delta_variance = [&](const Candidate& c) {
    return c.variance +
           (own_variance != nullptr ? baseline_variance : c.variance);
  };
  for (size_t a = 0; a < candidates.size(); ++a) {
    bool in = true;
    for (size_t b = 0; b < candidates.size() && in; ++b) {
      if (a == b) continue;
      const Candidate& x = candidates[a];
      const Candidate& y = candidates[b];
      double variance = 0.0;
      if (has_baseline && a == baseline_candidate) {
        variance = delta_variance(y) / y.n;
      } else if (has_baseline && b == baseline_candidate) {
        variance = delta_variance(x) / x.n;
      } else {
        variance = x.variance / x.n + y.variance / y.n;
      }
      in = !(x.mean - y.mean > d * std::sqrt(variance));
    }
    rows[candidates[a].row].in_best_set = in;
  }
}

}  // namespace

Verdicts DecideVerdicts(const std::vector<VerdictInput>& data,
                        const VerdictOptions& options) {
  Verdicts verdicts;
  std::vector<RowVerdict>& rows = verdicts.rows;
  rows.resize(data.size());
  VerdictSummary& summary = verdicts.summary;
  int& compared = verdicts.compared;
  summary.method = options.method;
  summary.family = options.family;
  summary.alpha = options.alpha;
  const VarianceModel model(options.method, data, summary);

  // Without planned looks: one look at all of every row's data.
  std::vector<int> looks = options.looks;
  const bool planned = !looks.empty();
  if (!planned) looks.push_back(std::numeric_limits<int>::max());

  std::vector<double> own_variance(rows.size(), 0.0);
  std::vector<bool> decided(rows.size(), false);
  std::vector<bool> tested_once(rows.size(), false);
  compared = 0;
  for (size_t k = 0; k < looks.size(); ++k) {
    const double alpha_k =
        planned ? SpentAlpha(options.alpha, looks, k) : options.alpha;
    std::vector<Tested> family;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (data[i].is_baseline) continue;
      const int have = static_cast<int>(data[i].deltas.size());
      if (have < 2) continue;
      // The first look also takes rows with fewer seeds than it plans.
      if (planned && k > 0 && have < looks[k]) continue;
      if (decided[i]) continue;
      family.push_back(model.Test(i, looks[k]));
    }
    if (family.empty()) continue;
    std::vector<double> p;
    for (const Tested& t : family) p.push_back(t.p);
    // The screened schedules that stopped at a rung are tests that were
    // made (by selection) and not rejected: p = 1 (see VerdictOptions).
    if (k == 0 && options.screened_schedules > static_cast<int>(p.size())) {
      p.resize(options.screened_schedules, 1.0);
    }
    const std::vector<double> adjusted = options.family == VerdictFamily::kHolm
                                             ? HolmAdjust(p)
                                             : BenjaminiHochbergAdjust(p);
    const int m = static_cast<int>(p.size());
    int r = 0;
    for (double a : adjusted) r += a < alpha_k ? 1 : 0;
    const double level = RejectionLevel(options.family, alpha_k, m, r);
    summary.looks.push_back(LookSummary{planned ? looks[k] : 0, alpha_k, m, r});
    for (size_t f = 0; f < family.size(); ++f) {
      const Tested& t = family[f];
      RowVerdict& row = rows[t.row];
      tested_once[t.row] = true;
      row.p_value = t.p;
      row.adjusted_p_value =
          std::min(1.0, adjusted[f] * options.alpha / alpha_k);
      row.adjusted_confidence = 1.0 - level;
      row.adjusted_delta = TInterval(t.moments, t.sd, t.dof, 1.0 - level);
      if (adjusted[f] < alpha_k) {
        decided[t.row] = true;
        row.verdict = t.moments.mean < 0.0 ? Verdict::kBetter : Verdict::kWorse;
        row.decided_at_seeds = t.moments.n;
        row.seeds_needed = 0;
      } else {
        row.verdict = Verdict::kInconclusive;
        row.seeds_needed = SeedsNeeded(t, level);
      }
    }
  }

  for (size_t i = 0; i < rows.size(); ++i) {
    RowVerdict& row = rows[i];
    if (data[i].is_baseline) {
      row.verdict = Verdict::kNone;
      continue;
    }
    if (!tested_once[i]) {
      row.verdict = Verdict::kNeedsSeeds;
      ++summary.needs_seeds;
      continue;
    }
    ++compared;
    // The row's own interval, over all its data, with the method's variance.
    const Tested all = model.Test(i, data[i].deltas.size());
    own_variance[i] = all.own_variance;
    row.delta_sd = all.sd;
    row.dof = all.dof;
    row.delta_vs_baseline =
        TInterval(all.moments, all.sd, all.dof, 1.0 - kVerdictAlpha);
    switch (row.verdict) {
      case Verdict::kBetter:
        ++summary.better;
        break;
      case Verdict::kWorse:
        ++summary.worse;
        break;
      default:
        ++summary.inconclusive;
        break;
    }
  }
  AssignBestSet(data, rows, model.moderated() ? &own_variance : nullptr,
                model.baseline_variance(), options.alpha,
                options.screened_schedules, summary);
  return verdicts;
}

const char* VerdictMethodName(VerdictMethod m) {
  return m == VerdictMethod::kPairedT ? "paired t" : "moderated t";
}

const char* VerdictFamilyName(VerdictFamily f) {
  return f == VerdictFamily::kHolm ? "Holm FWER" : "Benjamini-Hochberg FDR";
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kBetter:
      return "better";
    case Verdict::kWorse:
      return "worse";
    case Verdict::kInconclusive:
      return "inconclusive";
    case Verdict::kNeedsSeeds:
      return "needs seeds";
    case Verdict::kNone:
      break;
  }
  return "";
}

std::vector<int> LooksForSeeds(int min, int max) {
  std::vector<int> looks;
  for (int n = std::max(2, min); n <= max; ++n) looks.push_back(n);
  return looks;
}

double SpentAlpha(double alpha, const std::vector<int>& looks, size_t k) {
  if (k >= looks.size()) return 0.0;
  const double last = looks.back();
  auto spent = [alpha, last](double n) {
    return alpha * std::log(1.0 + (std::exp(1.0) - 1.0) * n / last);
  };
  return spent(looks[k]) - (k == 0 ? 0.0 : spent(looks[k - 1]));
}

}  // namespace prism
