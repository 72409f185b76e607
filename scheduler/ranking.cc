#include "scheduler/ranking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "scheduler/schedule.h"

namespace prism {
namespace {

constexpr double kConfidence = 0.95;

// The moderated t's dof is the posterior's, d0 + d, less this (see
// VarianceModel): the prior's scaled inverse-chi-square shape is assumed,
// and at a family's extreme levels (Holm's alpha / 119) the t's tail
// decides. Chosen on the tuning seeds (bench/RESULTS.md; 400 experiments,
// BH, 3 seeds): 0 left a null at log-sd spread 0.5 with a false verdict in
// 4.5% of experiments, 1 in 2.5%, 2 in 1% (with power there 0.34, 0.27,
// 0.17; at equal variances 0.83 for all three: the prior pools them).
constexpr double kPriorDofDiscount = 1.0;

// StepsToReach returns the step at which the val curve gets to `threshold`:
// interpolated linearly between the last eval above it and the first at or
// below it, or that first eval's step when it is the curve's first point (or
// follows a NaN); nullopt when the curve never gets there. Curves are stored
// as float and final losses as double, so the threshold is compared at float
// precision: rounded up, a trial's last point would miss its own final loss
// half the time, and the baseline's with it every speed-up of the experiment.
std::optional<double> StepsToReach(const TrialOutcome& trial,
                                   double threshold) {
  const double bar = static_cast<float>(threshold);
  const size_t n = std::min(trial.val_steps.size(), trial.val_losses.size());
  for (size_t i = 0; i < n; ++i) {
    const double below = trial.val_losses[i];
    if (!(below <= bar)) continue;
    const double step = static_cast<double>(trial.val_steps[i]);
    if (i == 0) return step;
    const double above = trial.val_losses[i - 1];
    if (!(above > bar)) return step;  // NaN before it
    const double before = static_cast<double>(trial.val_steps[i - 1]);
    return before + (above - bar) / (above - below) * (step - before);
  }
  return std::nullopt;
}

// SeedBaseline is what the baseline trained with one seed sets as the bar.
struct SeedBaseline {
  const TrialOutcome* trial = nullptr;
  std::optional<double> steps;  // its own steps to its final val loss
};

// ThroughputPair is one seed's tokens/s ratio and where both sides ran.
struct ThroughputPair {
  double ratio = 0.0;
  ThroughputPairing level = ThroughputPairing::kUnpaired;
  std::string hardware;  // the level's label, see RankedRow
};

std::string DeviceLabel(const std::string& device) {
  return device.empty() ? "unknown device" : device;
}

// SharedCoresDiffer says whether two trials both measured their share of
// the cores and got clearly different shares (see kCpuShareTolerance).
bool SharedCoresDiffer(const TrialOutcome& t, const TrialOutcome& b) {
  return t.cpu_share > 0.0 && b.cpu_share > 0.0 &&
         std::abs(t.cpu_share - b.cpu_share) > kCpuShareTolerance;
}

std::string ShareLabel(const TrialOutcome& t) {
  return absl::StrCat(DeviceLabel(t.device), " at ",
                      static_cast<int>(std::lround(t.cpu_share * 100)),
                      "% of its cores");
}

ThroughputPair PairThroughput(const TrialOutcome& t, const TrialOutcome& b) {
  ThroughputPair pair;
  pair.ratio = t.tokens_per_second / b.tokens_per_second;
  if (&t != &b && SharedCoresDiffer(t, b)) {
    pair.hardware = absl::StrCat(ShareLabel(t), " vs ", ShareLabel(b));
    return pair;
  }
  // The baseline's own row pairs each trial with itself.
  if (&t == &b || (t.device == b.device && !t.worker_id.empty() &&
                   t.worker_id == b.worker_id)) {
    pair.level = ThroughputPairing::kWorker;
    pair.hardware = DeviceLabel(t.device);
  } else if (t.device == b.device && !t.device.empty()) {
    pair.level = ThroughputPairing::kDevice;
    pair.hardware = t.device;
  } else {
    pair.hardware =
        absl::StrCat(DeviceLabel(t.device), " vs ", DeviceLabel(b.device));
  }
  return pair;
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / values.size();
}

// IntervalCache computes Student-t intervals, with one quantile per sample
// size: most schedules share the number of seeds.
class IntervalCache {
 public:
  Interval Of(const std::vector<double>& values) {
    const int dof = static_cast<int>(values.size()) - 1;
    double t = 0.0;
    if (dof >= 1) {
      auto [it, inserted] = critical_.try_emplace(dof, 0.0);
      if (inserted) it->second = StudentTQuantile(dof, kConfidence);
      t = it->second;
    }
    return MeanIntervalWithCritical(values, t);
  }

 private:
  std::unordered_map<int, double> critical_;
};

// SequenceOrder returns a schedule's seeds in the order of the seed
// sequence (seeds not in it after, ascending), so a look's first n seeds are
// the sequence's.
std::vector<std::pair<int64_t, const TrialOutcome*>> SequenceOrder(
    const std::map<int64_t, const TrialOutcome*>& by_seed,
    const std::unordered_map<int64_t, size_t>& position) {
  std::vector<std::pair<int64_t, const TrialOutcome*>> out(by_seed.begin(),
                                                           by_seed.end());
  if (position.empty()) return out;
  auto key = [&position](int64_t seed) {
    auto it = position.find(seed);
    return it == position.end() ? std::numeric_limits<size_t>::max()
                                : it->second;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&key](const auto& a, const auto& b) {
                     return key(a.first) < key(b.first);
                   });
  return out;
}

// RankOrder is the order of rows the header documents.
bool RankOrder(const RankedRow& a, const RankedRow& b) {
  auto group = [](const RankedRow& r) {
    if (r.verdict != Verdict::kNeedsSeeds) return 0;
    return r.delta_vs_baseline.n > 0 ? 1 : 2;
  };
  const int ga = group(a);
  const int gb = group(b);
  if (ga != gb) return ga < gb;
  const double ka = ga == 2 ? a.final_val_loss.mean : a.delta_vs_baseline.mean;
  const double kb = gb == 2 ? b.final_val_loss.mean : b.delta_vs_baseline.mean;
  // A total order even if a NaN got this far (the coordinator refuses
  // them): NaN keys sort last, among themselves by schedule.
  if (std::isnan(ka) != std::isnan(kb)) return std::isnan(kb);
  if (ka < kb || kb < ka) return ka < kb;
  return a.schedule < b.schedule;
}

// RowData is one row's data for the verdicts, seeds in sequence order.
struct RowData {
  std::vector<double> deltas;  // paired with the baseline
  std::vector<int64_t> paired_seeds;
  std::vector<double> paired_losses;  // the row's own final val losses
  std::vector<std::pair<int64_t, double>> losses;  // every completed seed
};

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
    const std::vector<RowData>& rows) {
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
  VarianceModel(VerdictMethod method, const std::vector<RowData>& data,
                const std::vector<RankedRow>& rows, VerdictSummary& summary)
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
      if (rows[i].is_baseline) baseline_ = i;
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

  const std::vector<RowData>& data_;
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
void AssignBestSet(std::vector<RankedRow>& rows,
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
    const RankedRow& r = rows[i];
    if (r.is_baseline) {
      baseline_candidate = candidates.size();
      candidates.push_back({i, 0.0, baseline_variance, 1.0});
    } else if (r.verdict != Verdict::kNeedsSeeds) {
      const double v = own_variance != nullptr ? (*own_variance)[i]
                                               : r.delta_sd * r.delta_sd / 2.0;
      candidates.push_back({i, r.delta_vs_baseline.mean, v,
                            static_cast<double>(r.delta_vs_baseline.n)});
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
      rows[candidates[baseline_candidate].row].is_baseline;
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

// AssignVerdicts tests every row at every look, adjusts each look's family,
// sets every row's verdict and intervals (see the header) and returns the
// summary.
VerdictSummary AssignVerdicts(std::vector<RankedRow>& rows,
                              const std::vector<RowData>& data,
                              const VerdictOptions& options, int& compared) {
  VerdictSummary summary;
  summary.method = options.method;
  summary.family = options.family;
  summary.alpha = options.alpha;
  const VarianceModel model(options.method, data, rows, summary);

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
      if (rows[i].is_baseline) continue;
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
      RankedRow& row = rows[t.row];
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
    RankedRow& row = rows[i];
    if (row.is_baseline) {
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
  AssignBestSet(rows, model.moderated() ? &own_variance : nullptr,
                model.baseline_variance(), options.alpha,
                options.screened_schedules, summary);
  return summary;
}

// SummarizeThroughput sets the row's throughput fields from its pairs: the
// matched ones (worker or device) when there are any, else all, unpaired.
void SummarizeThroughput(const std::vector<ThroughputPair>& pairs,
                         IntervalCache& intervals, RankedRow& row) {
  row.throughput_pairs = static_cast<int>(pairs.size());
  if (pairs.empty()) return;
  const bool any_matched =
      std::any_of(pairs.begin(), pairs.end(), [](const ThroughputPair& p) {
        return p.level != ThroughputPairing::kUnpaired;
      });
  std::vector<double> ratios;
  std::set<std::string> hardware;
  row.throughput_pairing =
      any_matched ? ThroughputPairing::kWorker : ThroughputPairing::kUnpaired;
  for (const ThroughputPair& p : pairs) {
    if (any_matched && p.level == ThroughputPairing::kUnpaired) continue;
    if (p.level == ThroughputPairing::kDevice) {
      row.throughput_pairing = ThroughputPairing::kDevice;
    }
    ratios.push_back(p.ratio);
    hardware.insert(p.hardware);
  }
  row.throughput_ratio = intervals.Of(ratios);
  row.throughput_hardware = absl::StrJoin(hardware, ", ");
}

}  // namespace

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

Ranking RankSchedules(const SpaceSpec& shape,
                      const std::string& baseline_schedule,
                      const std::vector<TrialOutcome>& trials,
                      const VerdictOptions& options) {
  std::string baseline_text = baseline_schedule;
  if (baseline_text.empty()) {
    for (const TrialOutcome& t : trials) {
      if (t.is_baseline) {
        baseline_text = t.schedule;
        break;
      }
    }
  }

  // Group trials by schedule, in first-seen order; the sort below fixes the
  // final order.
  std::unordered_map<std::string, size_t> group_of;
  std::vector<std::vector<const TrialOutcome*>> groups;
  std::unordered_map<int64_t, const TrialOutcome*> baseline_trial;
  for (const TrialOutcome& t : trials) {
    auto [it, inserted] = group_of.try_emplace(t.schedule, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&t);
    if (t.schedule == baseline_text && t.state == OutcomeState::kCompleted &&
        std::isfinite(t.final_val_loss)) {
      // Several baseline trials with one seed: the lowest trial id is the bar.
      auto [b, fresh] = baseline_trial.try_emplace(t.seed, &t);
      if (!fresh && t.trial_id < b->second->trial_id) b->second = &t;
    }
  }
  std::unordered_map<int64_t, SeedBaseline> bar;
  for (const auto& [seed, t] : baseline_trial) {
    bar[seed] = {t, StepsToReach(*t, t->final_val_loss)};
  }

  std::unordered_map<int64_t, size_t> sequence_position;
  for (size_t i = 0; i < options.seed_sequence.size(); ++i) {
    sequence_position.try_emplace(options.seed_sequence[i], i);
  }

  IntervalCache intervals;
  Ranking ranking;
  ranking.rows.reserve(groups.size());
  // Per row (in ranking.rows order), what the verdicts test.
  std::vector<RowData> row_data;
  row_data.reserve(groups.size());
  std::vector<double> finals;
  std::vector<double> steps;
  std::vector<double> speedups;
  std::vector<ThroughputPair> throughput;
  // seed -> the schedule's completed trial standing for it (lowest id).
  std::map<int64_t, const TrialOutcome*> by_seed;
  for (const auto& group : groups) {
    RankedRow row;
    row.schedule = group.front()->schedule;
    row.is_baseline = row.schedule == baseline_text;
    if (absl::StatusOr<Schedule> s = ParseSchedule(row.schedule); s.ok()) {
      row.principles = ReportPrinciples(shape, *s);
    }
    finals.clear();
    steps.clear();
    speedups.clear();
    throughput.clear();
    by_seed.clear();
    double tokens_per_second = 0.0;
    size_t attention_trials = 0;
    row.min_val_loss = std::numeric_limits<double>::infinity();
    for (const TrialOutcome* t : group) {
      if (t->state == OutcomeState::kCompleted &&
          !std::isfinite(t->final_val_loss)) {
        // Never silently used: counted as diverged, and said so.
        ++row.seeds_excluded;
        ++row.seeds_diverged;
        row.diverged = true;
        continue;
      }
      if (t->state != OutcomeState::kCompleted) {
        row.diverged |= t->state == OutcomeState::kDiverged;
        ++(t->state == OutcomeState::kDiverged ? row.seeds_diverged
                                               : row.seeds_failed);
        continue;
      }
      ++row.seeds_completed;
      row.trial_ids.push_back(t->trial_id);
      finals.push_back(t->final_val_loss);
      row.min_val_loss = std::min(row.min_val_loss, t->min_val_loss);
      tokens_per_second += t->tokens_per_second;
      if (!t->attention_distance.empty() &&
          (row.attention_distance.empty() ||
           row.attention_distance.size() == t->attention_distance.size())) {
        row.attention_distance.resize(t->attention_distance.size(), 0.0);
        for (size_t l = 0; l < t->attention_distance.size(); ++l) {
          row.attention_distance[l] += t->attention_distance[l];
        }
        ++attention_trials;
      }
      auto [seen, fresh] = by_seed.try_emplace(t->seed, t);
      if (!fresh && t->trial_id < seen->second->trial_id) seen->second = t;
    }
    RowData data;
    std::vector<double>& deltas = data.deltas;
    for (const auto& [seed, t] : SequenceOrder(by_seed, sequence_position)) {
      data.losses.emplace_back(seed, t->final_val_loss);
      auto found = bar.find(seed);
      if (found == bar.end()) continue;
      const SeedBaseline& b = found->second;
      deltas.push_back(t->final_val_loss - b.trial->final_val_loss);
      data.paired_seeds.push_back(seed);
      data.paired_losses.push_back(t->final_val_loss);
      if (t->tokens_per_second > 0.0 && b.trial->tokens_per_second > 0.0) {
        throughput.push_back(PairThroughput(*t, *b.trial));
      }
      // Without a baseline step count the seed has no speed-up to miss.
      if (!b.steps.has_value()) continue;
      ++row.speedup_seeds;
      const std::optional<double> reached =
          StepsToReach(*t, b.trial->final_val_loss);
      // Reached at step 0 (an eval before training) has no finite ratio.
      if (!reached.has_value() || *reached <= 0.0) continue;
      steps.push_back(*reached);
      speedups.push_back(*b.steps / *reached);
    }
    std::sort(row.trial_ids.begin(), row.trial_ids.end());
    if (row.seeds_completed == 0) row.min_val_loss = 0.0;
    for (double& d : row.attention_distance) d /= attention_trials;
    row.final_val_loss = intervals.Of(finals);
    row.delta_vs_baseline = intervals.Of(deltas);
    row.paired_seeds = row.delta_vs_baseline.n;
    row.steps_to_baseline = Mean(steps);
    row.speedup = intervals.Of(speedups);
    row.convergence_speedup = row.speedup.mean;
    SummarizeThroughput(throughput, intervals, row);
    if (row.seeds_completed > 0) {
      row.tokens_per_second = tokens_per_second / row.seeds_completed;
    }
    ranking.rows.push_back(std::move(row));
    row_data.push_back(std::move(data));
  }

  ranking.verdicts = AssignVerdicts(ranking.rows, row_data, options,
                                    ranking.compared_schedules);
  std::sort(ranking.rows.begin(), ranking.rows.end(), RankOrder);
  const RankedRow* baseline = nullptr;
  for (size_t i = 0; i < ranking.rows.size(); ++i) {
    RankedRow& row = ranking.rows[i];
    row.rank = static_cast<int>(i) + 1;
    if (row.is_baseline) baseline = &row;
    if (row.in_best_set) ranking.verdicts.best_set.push_back(row.schedule);
    ranking.verdicts.excluded_trials += row.seeds_excluded;
  }
  if (baseline != nullptr) {
    for (RankedRow& row : ranking.rows) {
      if (baseline->tokens_per_second > 0.0) {
        row.tokens_per_second_ratio =
            row.tokens_per_second / baseline->tokens_per_second;
      }
      if (!baseline->attention_distance.empty() &&
          row.attention_distance.size() ==
              baseline->attention_distance.size()) {
        row.attention_distance_shift.resize(row.attention_distance.size());
        for (size_t l = 0; l < row.attention_distance.size(); ++l) {
          row.attention_distance_shift[l] =
              row.attention_distance[l] - baseline->attention_distance[l];
        }
      }
    }
    ranking.baseline = *baseline;
  }

  // The baseline's delta is 0 by construction, so it is not an observation.
  std::vector<ScheduleDelta> observations;
  for (const RankedRow& row : ranking.rows) {
    if (row.is_baseline || row.delta_vs_baseline.n == 0) continue;
    ScheduleDelta& o = observations.emplace_back();
    o.mean_delta = row.delta_vs_baseline.mean;
    o.paired_seeds = row.delta_vs_baseline.n;
    for (Principle p : kAllPrinciples) {
      o.violated.Set(p, !row.principles.Satisfies(p));
    }
  }
  ranking.principle_effects = AnalyzePrinciples(observations).effects;
  return ranking;
}

}  // namespace prism
