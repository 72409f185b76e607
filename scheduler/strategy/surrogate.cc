#include "scheduler/strategy/surrogate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "scheduler/stats/least_squares.h"

namespace prism {
namespace {

constexpr int kSummaryFeatures = 5;

bool Finite(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(),
                     [](double v) { return std::isfinite(v); });
}

}  // namespace

std::vector<double> ScheduleFeatures(int d_model, int base_heads,
                                     const Schedule& s) {
  const int layers = s.layers();
  std::vector<double> f;
  f.reserve(layers + kSummaryFeatures);
  int at_base = 0;
  for (int h : s.heads()) {
    f.push_back(std::log2(static_cast<double>(d_model) / h));
    at_base += h == base_heads ? 1 : 0;
  }
  std::vector<int> runs;
  for (int l = 0; l < layers; ++l) {
    if (l == 0 || s.heads(l) != s.heads(l - 1)) runs.push_back(0);
    ++runs.back();
  }
  const int transitions = runs.empty() ? 0 : static_cast<int>(runs.size()) - 1;
  f.push_back(transitions);
  f.push_back(runs.empty() ? 0 : *std::min_element(runs.begin(), runs.end()));
  f.push_back(runs.empty() ? 0 : *std::max_element(runs.begin(), runs.end()));
  f.push_back(runs.empty() ? 0.0
                           : static_cast<double>(layers) /
                                 static_cast<double>(runs.size()));
  f.push_back(layers == 0 ? 0.0 : static_cast<double>(at_base) / layers);
  return f;
}

std::vector<std::string> ScheduleFeatureNames(int layers) {
  std::vector<std::string> names;
  for (int l = 1; l <= layers; ++l) {
    names.push_back(absl::StrCat("log2_dhead_", l));
  }
  for (const char* n :
       {"transitions", "min_run", "max_run", "mean_run", "baseline_fraction"}) {
    names.emplace_back(n);
  }
  return names;
}

absl::StatusOr<Surrogate> Surrogate::Fit(
    const std::vector<SurrogateObservation>& observations,
    const SurrogateOptions& options) {
  const int n = static_cast<int>(observations.size());
  if (n < kMinSurrogateSchedules) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the surrogate needs at least ", kMinSurrogateSchedules,
        " finished schedules with a paired delta vs the baseline (there ",
        n == 1 ? "is " : "are ", n, ")"));
  }
  if (!(options.lambda > 0.0) || options.bootstrap < 2) {
    return absl::InvalidArgumentError(
        "the surrogate needs lambda > 0 and at least 2 bootstrap fits");
  }
  const size_t k = observations[0].features.size();
  for (const SurrogateObservation& o : observations) {
    if (o.features.size() != k) {
      return absl::InvalidArgumentError(
          "surrogate observations have different feature counts");
    }
    if (!Finite(o.features) || !std::isfinite(o.delta) || o.paired_seeds < 1) {
      return absl::InvalidArgumentError(
          "a surrogate observation has a non-finite value or no paired seed");
    }
  }

  Surrogate s;
  s.observations_ = n;
  s.lambda_ = options.lambda;
  s.center_.assign(k, 0.0);
  s.inverse_scale_.assign(k, 0.0);
  for (size_t j = 0; j < k; ++j) {
    double sum = 0.0;
    for (const SurrogateObservation& o : observations) sum += o.features[j];
    const double mean = sum / n;
    double squares = 0.0;
    for (const SurrogateObservation& o : observations) {
      squares += (o.features[j] - mean) * (o.features[j] - mean);
    }
    const double sd = std::sqrt(squares / n);
    s.center_[j] = mean;
    // Constant features (up to rounding) carry nothing to learn from.
    s.inverse_scale_[j] = sd > 1e-12 * (1.0 + std::fabs(mean)) ? 1.0 / sd : 0.0;
  }
  double total_seeds = 0.0;
  for (const SurrogateObservation& o : observations) {
    total_seeds += o.paired_seeds;
  }
  const double mean_seeds = total_seeds / n;

  // Fits the ridge model on observations with multiplicities `counts`.
  auto fit = [&](const std::vector<int>& counts)
      -> std::optional<std::vector<double>> {
    Columns z(k);
    std::vector<double> y;
    std::vector<double> w;
    for (int i = 0; i < n; ++i) {
      if (counts[i] == 0) continue;
      const SurrogateObservation& o = observations[i];
      for (size_t j = 0; j < k; ++j) {
        z[j].push_back((o.features[j] - s.center_[j]) * s.inverse_scale_[j]);
      }
      y.push_back(o.delta);
      w.push_back(counts[i] * o.paired_seeds / mean_seeds);
    }
    return FitRidge(z, y, w, options.lambda);
  };

  std::optional<std::vector<double>> full = fit(std::vector<int>(n, 1));
  if (!full.has_value()) {
    return absl::InternalError("the surrogate's ridge fit failed");
  }
  s.full_ = *std::move(full);
  double weighted_squares = 0.0;
  for (const SurrogateObservation& o : observations) {
    const double r = o.delta - s.Evaluate(s.full_, o.features);
    weighted_squares += o.paired_seeds / mean_seeds * r * r;
  }
  s.residual_sd_ = std::sqrt(weighted_squares / n);

  // mt19937_64's output is fixed by the standard, so the ensemble is the
  // same on every platform; the modulo bias is below 1e-17 for any n here.
  std::mt19937_64 rng(options.seed);
  std::vector<std::vector<double>> ensemble;
  for (int b = 0; b < options.bootstrap; ++b) {
    std::vector<int> counts(n, 0);
    for (int i = 0; i < n; ++i) ++counts[rng() % static_cast<uint64_t>(n)];
    std::optional<std::vector<double>> replicate = fit(counts);
    // A resample of a single distinct schedule has nothing to fit.
    if (replicate.has_value()) ensemble.push_back(*std::move(replicate));
  }
  if (ensemble.size() < 2) {
    return absl::InternalError("the surrogate's bootstrap fits failed");
  }
  const size_t m = ensemble.size();
  std::vector<double> mean(k + 1, 0.0);
  for (const std::vector<double>& c : ensemble) {
    for (size_t a = 0; a <= k; ++a) mean[a] += c[a] / static_cast<double>(m);
  }
  s.ensemble_size_ = static_cast<int>(m);
  s.covariance_.assign(k + 1, std::vector<double>(k + 1, 0.0));
  for (const std::vector<double>& c : ensemble) {
    for (size_t a = 0; a <= k; ++a) {
      for (size_t b = 0; b <= k; ++b) {
        s.covariance_[a][b] +=
            (c[a] - mean[a]) * (c[b] - mean[b]) / static_cast<double>(m - 1);
      }
    }
  }
  return s;
}

double Surrogate::Evaluate(const std::vector<double>& coefficients,
                           const std::vector<double>& features) const {
  double value = coefficients[0];
  for (size_t j = 0; j < center_.size() && j < features.size(); ++j) {
    value +=
        coefficients[j + 1] * (features[j] - center_[j]) * inverse_scale_[j];
  }
  return value;
}

SurrogatePrediction Surrogate::Predict(
    const std::vector<double>& features) const {
  SurrogatePrediction p;
  p.delta = Evaluate(full_, features);
  std::vector<double> z(center_.size() + 1, 0.0);
  z[0] = 1.0;
  for (size_t j = 0; j < center_.size() && j < features.size(); ++j) {
    z[j + 1] = (features[j] - center_[j]) * inverse_scale_[j];
  }
  double variance = 0.0;
  for (size_t a = 0; a < z.size(); ++a) {
    if (z[a] == 0.0) continue;
    double row = 0.0;
    for (size_t b = 0; b < z.size(); ++b) row += covariance_[a][b] * z[b];
    variance += z[a] * row;
  }
  // Rounding can take an exact 0 a hair below it.
  p.sd = std::sqrt(std::max(0.0, variance));
  return p;
}

std::string Surrogate::Describe() const {
  return absl::StrFormat(
      "bootstrap ensemble of %d ridge regressions (lambda %g, standardized "
      "schedule features) fitted on %d schedules, residual sd %.4g",
      ensemble_size_, lambda_, observations_, residual_sd_);
}

}  // namespace prism
