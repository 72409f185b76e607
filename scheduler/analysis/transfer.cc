#include "scheduler/analysis/transfer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace prism {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// AverageRanks returns 1-based ranks, ties sharing their mean rank.
std::vector<double> AverageRanks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&v](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double rank =
        (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0.0 || syy <= 0.0) return kNaN;
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

// UniformIndex draws an index in [0, n) from the raw 64-bit generator by
// rejection, identically on every platform.
size_t UniformIndex(std::mt19937_64& rng, size_t n) {
  const uint64_t range = static_cast<uint64_t>(n);
  const uint64_t limit = std::numeric_limits<uint64_t>::max() -
                         std::numeric_limits<uint64_t>::max() % range;
  uint64_t draw;
  do {
    draw = rng();
  } while (draw >= limit);
  return static_cast<size_t>(draw % range);
}

// MeansOver returns each row's mean over the columns `draw` (with
// repeats), skipping NaN; false when some row has no finite value there.
bool MeansOver(const std::vector<std::vector<double>>& rows,
               const std::vector<size_t>& draw, std::vector<double>* means) {
  means->assign(rows.size(), 0.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    double sum = 0.0;
    int n = 0;
    for (size_t k : draw) {
      const double v = rows[i][k];
      if (std::isfinite(v)) {
        sum += v;
        ++n;
      }
    }
    if (n == 0) return false;
    (*means)[i] = sum / n;
  }
  return true;
}

absl::Status ValidateSize(const SizeDeltas& size, size_t schedules,
                          const std::vector<std::string>& labels) {
  auto bad = [&size](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("transfer: size '", size.size, "': ", what));
  };
  if (size.deltas.size() != schedules) {
    return bad(absl::StrCat(size.deltas.size(), " rows of deltas for ",
                            schedules, " schedules"));
  }
  const size_t seeds = size.deltas.empty() ? 0 : size.deltas[0].size();
  if (seeds < 2) {
    return bad(absl::StrCat(seeds, " seed(s); at least 2 are needed"));
  }
  for (size_t i = 0; i < schedules; ++i) {
    if (size.deltas[i].size() != seeds) {
      return bad(absl::StrCat("schedule '", labels[i], "' has ",
                              size.deltas[i].size(), " seeds, not ", seeds));
    }
    if (std::none_of(size.deltas[i].begin(), size.deltas[i].end(),
                     [](double v) { return std::isfinite(v); })) {
      return bad(
          absl::StrCat("schedule '", labels[i], "' has no paired delta"));
    }
  }
  return absl::OkStatus();
}

RankCorrelation WithInterval(double estimate, const std::vector<double>& values,
                             double confidence) {
  RankCorrelation r;
  r.estimate = estimate;
  if (values.empty()) {
    r.low = r.high = kNaN;
    return r;
  }
  r.low = LinearQuantile(values, (1.0 - confidence) / 2.0);
  r.high = LinearQuantile(values, (1.0 + confidence) / 2.0);
  return r;
}

}  // namespace

double SpearmanRho(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return kNaN;
  return Pearson(AverageRanks(x), AverageRanks(y));
}

double KendallTauB(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return kNaN;
  // tau-b = (C - D) / sqrt((n0 - n1)(n0 - n2)): n0 all pairs, n1 and n2 the
  // pairs tied in x and in y.
  int64_t concordant_minus_discordant = 0;
  int64_t tied_x = 0, tied_y = 0, pairs = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t j = i + 1; j < x.size(); ++j) {
      ++pairs;
      const double dx = x[i] - x[j];
      const double dy = y[i] - y[j];
      if (dx == 0.0) ++tied_x;
      if (dy == 0.0) ++tied_y;
      if (dx != 0.0 && dy != 0.0) {
        concordant_minus_discordant += (dx > 0.0) == (dy > 0.0) ? 1 : -1;
      }
    }
  }
  const double denominator = std::sqrt(static_cast<double>(pairs - tied_x) *
                                       static_cast<double>(pairs - tied_y));
  if (denominator <= 0.0) return kNaN;
  return std::clamp(
      static_cast<double>(concordant_minus_discordant) / denominator, -1.0,
      1.0);
}

double LinearQuantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

absl::StatusOr<SizeDeltas> CollectPairedDeltas(
    const std::string& size, const std::string& baseline,
    const std::vector<std::string>& schedules,
    const std::vector<TrialOutcome>& trials) {
  // (schedule, seed) -> (trial id, final val loss) of the lowest trial id.
  std::map<std::pair<std::string, int64_t>, std::pair<int64_t, double>> runs;
  for (const TrialOutcome& t : trials) {
    if (t.state != OutcomeState::kCompleted ||
        !std::isfinite(t.final_val_loss)) {
      continue;
    }
    auto [it, added] =
        runs.try_emplace({t.schedule, t.seed}, t.trial_id, t.final_val_loss);
    if (!added && t.trial_id < it->second.first) {
      it->second = {t.trial_id, t.final_val_loss};
    }
  }
  std::vector<int64_t> seeds;
  for (const auto& [key, run] : runs) {
    if (key.first == baseline) seeds.push_back(key.second);
  }
  if (seeds.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("transfer: size '", size, "': the baseline '", baseline,
                     "' completed no seed"));
  }
  SizeDeltas out;
  out.size = size;
  for (const std::string& s : schedules) {
    std::vector<double>& row = out.deltas.emplace_back();
    for (int64_t seed : seeds) {
      auto it = runs.find({s, seed});
      row.push_back(it == runs.end()
                        ? kNaN
                        : it->second.second - runs.at({baseline, seed}).second);
    }
  }
  return out;
}

absl::StatusOr<TransferStatistics> MeasureTransfer(
    const TransferInput& input, const TransferOptions& options) {
  const size_t n = input.schedules.size();
  if (n < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transfer: ", n, " schedule(s) at both sizes; at least 3 are needed"));
  }
  if (options.replicates < 100 || options.replicates > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("transfer: replicates must be in 100..100000, got ",
                     options.replicates));
  }
  if (!(options.confidence > 0.0 && options.confidence < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transfer: confidence must be in (0, 1), got ", options.confidence));
  }
  for (const SizeDeltas* size : {&input.small, &input.large}) {
    if (absl::Status ok = ValidateSize(*size, n, input.schedules); !ok.ok()) {
      return ok;
    }
  }
  const std::set<std::string> labels(input.schedules.begin(),
                                     input.schedules.end());
  for (const std::string& best : input.small_best_set) {
    if (labels.count(best) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("transfer: best-set schedule '", best,
                       "' is not among the schedules run at both sizes"));
    }
  }

  TransferStatistics t;
  t.small_size = input.small.size;
  t.large_size = input.large.size;
  t.schedules = static_cast<int>(n);
  t.small_seeds = static_cast<int>(input.small.deltas[0].size());
  t.large_seeds = static_cast<int>(input.large.deltas[0].size());
  std::vector<size_t> all_small(t.small_seeds), all_large(t.large_seeds);
  std::iota(all_small.begin(), all_small.end(), 0);
  std::iota(all_large.begin(), all_large.end(), 0);
  MeansOver(input.small.deltas, all_small, &t.small_means);
  MeansOver(input.large.deltas, all_large, &t.large_means);
  const double spearman = SpearmanRho(t.small_means, t.large_means);
  const double kendall = KendallTauB(t.small_means, t.large_means);

  std::mt19937_64 rng(options.seed);
  std::vector<double> spearmans, kendalls;
  std::vector<size_t> draw_small(t.small_seeds), draw_large(t.large_seeds);
  std::vector<double> small_means, large_means;
  for (int b = 0; b < options.replicates; ++b) {
    for (size_t& k : draw_small) k = UniformIndex(rng, all_small.size());
    for (size_t& k : draw_large) k = UniformIndex(rng, all_large.size());
    const double s =
        MeansOver(input.small.deltas, draw_small, &small_means) &&
                MeansOver(input.large.deltas, draw_large, &large_means)
            ? SpearmanRho(small_means, large_means)
            : kNaN;
    const double k =
        std::isfinite(s) ? KendallTauB(small_means, large_means) : kNaN;
    if (!std::isfinite(s) || !std::isfinite(k)) {
      ++t.unusable_replicates;
      continue;
    }
    spearmans.push_back(s);
    kendalls.push_back(k);
  }
  t.spearman = WithInterval(spearman, spearmans, options.confidence);
  t.kendall = WithInterval(kendall, kendalls, options.confidence);
  t.confidence = options.confidence;
  t.replicates = options.replicates;

  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (t.large_means[i] < t.large_means[best]) best = i;
  }
  t.large_best = input.schedules[best];
  if (!input.small_best_set.empty()) {
    t.best_set_contains_large_best =
        std::find(input.small_best_set.begin(), input.small_best_set.end(),
                  t.large_best) != input.small_best_set.end();
  }
  t.method = absl::StrFormat(
      "Spearman rho and Kendall tau-b of mean paired deltas; %g%% percentile "
      "bootstrap over seeds within each size (%d replicates, seed %d)",
      100.0 * options.confidence, options.replicates, options.seed);
  return t;
}

}  // namespace prism
