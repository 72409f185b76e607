// Surrogate: a model of a schedule's paired delta vs the uniform baseline
// (negative is better), fitted on the schedules an experiment has finished,
// that predicts the delta of a schedule not yet trained, with an uncertainty.
//
// Features (ScheduleFeatures), for a schedule of L layers:
//   - the log2 d_head profile: log2(d_model / h_l) for each layer l (L values);
//   - the number of transitions (l with h_l != h_{l+1});
//   - the shortest, longest and mean run length (a run: consecutive layers
//     with the same head count, the final baseline run included);
//   - the fraction of layers at the baseline head count.
//
// Model: ridge regression on standardized features (each centred and scaled
// to unit standard deviation over the observations; a feature constant over
// them carries no information and is left out), intercept not penalized,
// lambda SurrogateOptions::lambda, observations weighted by their paired
// seeds (normalized to mean 1: a mean over more seeds is more precise).
// Uncertainty: a bootstrap ensemble of `bootstrap` ridge fits, each on the
// observations resampled with replacement. A prediction's mean is the fit on
// all observations; its sd the standard deviation of the ensemble's
// predictions. That sd is the model's (epistemic) uncertainty: it grows with
// the distance from the observed schedules in feature space (for a linear
// model, as the square root of a quadratic form in it) and shrinks as more
// schedules are observed; it does not include the seed noise of a single
// future trial. Chosen over a Gaussian process for having no kernel length
// scales to fit from a handful of points, and because it reuses the solver
// the principle analysis already proves (scheduler/stats/least_squares.h).
//
// It needs kMinSurrogateSchedules observations: with fewer, a bootstrap
// resample of them is mostly duplicates and the spread says nothing.
//
//   std::vector<SurrogateObservation> obs = ...;  // features, delta, seeds
//   absl::StatusOr<Surrogate> s = Surrogate::Fit(obs);
//   SurrogatePrediction p = s->Predict(ScheduleFeatures(d_model, base, x));
//
// Thread-safety: ScheduleFeatures is a pure function; a fitted Surrogate is
// immutable, so Predict may be called from any thread.
#ifndef PRISM_SCHEDULER_STRATEGY_SURROGATE_H_
#define PRISM_SCHEDULER_STRATEGY_SURROGATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/space/schedule.h"

namespace prism {

// The fewest observed schedules (non-baseline, with a paired delta) the
// surrogate fits on.
inline constexpr int kMinSurrogateSchedules = 5;

// ScheduleFeatures returns the features the header lists, in that order
// (layers + 5 values). `s` should satisfy the hard constraints of a space
// with this d_model (h_l divides d_model).
std::vector<double> ScheduleFeatures(int d_model, int base_heads,
                                     const Schedule& s);

// ScheduleFeatureNames names them: "log2_dhead_1".."log2_dhead_L",
// "transitions", "min_run", "max_run", "mean_run", "baseline_fraction".
std::vector<std::string> ScheduleFeatureNames(int layers);

// SurrogateObservation is one observed schedule.
struct SurrogateObservation {
  std::vector<double> features;
  double delta = 0.0;    // mean paired delta vs the baseline
  int paired_seeds = 1;  // its weight; >= 1
};

struct SurrogateOptions {
  double lambda = 1.0;  // ridge penalty, on standardized features
  int bootstrap = 64;   // ensemble size
  uint64_t seed = 1;    // the resampling's seed (deterministic for it)
};

struct SurrogatePrediction {
  double delta = 0.0;  // predicted mean paired delta
  double sd = 0.0;     // the ensemble's standard deviation
};

class Surrogate {
 public:
  // Fit fits the model the header describes. FailedPrecondition "the
  // surrogate needs at least 5 finished schedules with a paired delta vs the
  // baseline (there are N)" with fewer than kMinSurrogateSchedules
  // observations; InvalidArgument when observations' feature counts differ,
  // a value is not finite, paired_seeds < 1, lambda <= 0 or bootstrap < 2.
  static absl::StatusOr<Surrogate> Fit(
      const std::vector<SurrogateObservation>& observations,
      const SurrogateOptions& options = {});

  // Predict returns the prediction for `features` (as many as were fitted).
  SurrogatePrediction Predict(const std::vector<double>& features) const;

  int observations() const { return observations_; }
  // residual_sd is the weighted root mean square residual of the fit on all
  // observations: how far observed deltas sit from the model.
  double residual_sd() const { return residual_sd_; }
  // Describe is one line for users: the model, its size and fit.
  std::string Describe() const;

 private:
  Surrogate() = default;
  double Evaluate(const std::vector<double>& coefficients,
                  const std::vector<double>& features) const;

  int observations_ = 0;
  double lambda_ = 0.0;
  double residual_sd_ = 0.0;
  // Standardization: z_j = (x_j - center_j) * inverse_scale_j; 0 for a
  // feature constant over the observations.
  std::vector<double> center_;
  std::vector<double> inverse_scale_;
  std::vector<double> full_;  // intercept first
  int ensemble_size_ = 0;
  // The sample covariance of the bootstrap fits' coefficients: a linear
  // prediction z'b has the ensemble variance z' covariance_ z, so Predict
  // costs O(features^2) rather than O(ensemble x features).
  std::vector<std::vector<double>> covariance_;
};

}  // namespace prism

#endif  // PRISM_SCHEDULER_STRATEGY_SURROGATE_H_
