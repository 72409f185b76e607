// Statistics for comparing schedules across seeds: means with Student-t
// confidence intervals, paired t-tests, Holm-Bonferroni and
// Benjamini-Hochberg adjustment, the empirical-Bayes variance prior of
// limma's moderated t (Smyth 2004; fitted by moments or by maximum
// likelihood) with its posterior variances, and Dunnett's one-sided critical
// value for Hsu's multiple comparisons with the best.
//
//   Interval ci = MeanInterval({3.36, 3.35, 3.37});  // mean 3.36, 95% CI
//   std::optional<double> p = PairedTTestP({-0.01, -0.02, -0.015});
//   std::vector<double> adjusted = HolmAdjust({0.01, 0.04, 0.03});
//   VariancePrior prior = FitVariancePrior({1e-4, 3e-4, 2e-4}, {2, 2, 2});
//   VariancePrior ml = FitVariancePriorMaximumLikelihood(...);  // ranking's
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STATS_STATISTICS_H_
#define PRISM_SCHEDULER_STATS_STATISTICS_H_

#include <optional>
#include <vector>

namespace prism {

// Interval is a sample mean and, from 2 values on, its confidence interval.
struct Interval {
  double mean = 0.0;
  // Confidence interval bounds; meaningful only when has_bounds (n >= 2),
  // 0 otherwise: one value has no spread to build an interval from.
  double low = 0.0;
  double high = 0.0;
  bool has_bounds = false;
  int n = 0;
};

// MeanInterval returns the sample mean and its two-sided Student-t confidence
// interval at `confidence` (0 < confidence < 1; NaN bounds otherwise). With
// one value there is no interval (has_bounds false, bounds 0); with none, all
// fields are 0.
Interval MeanInterval(const std::vector<double>& values,
                      double confidence = 0.95);

// StudentTQuantile returns the two-sided critical value t such that
// P(|T| <= t) = confidence for `dof` degrees of freedom (real, dof >= 1;
// infinite: the normal), e.g. 12.706 for (1, 0.95). Computed numerically
// (regularized incomplete beta and bisection) to about 1e-10 relative; NaN for
// dof < 1 or confidence outside (0, 1).
double StudentTQuantile(double dof, double confidence);

// MeanIntervalWithCritical is MeanInterval with the critical value given
// (StudentTQuantile(values.size() - 1, confidence)), for callers that build
// many intervals with the same n and would otherwise recompute it.
Interval MeanIntervalWithCritical(const std::vector<double>& values,
                                  double t_critical);

// StudentTCdf returns P(T <= t) for Student's t with `dof` degrees of freedom
// (dof >= 1), through the regularized incomplete beta function; NaN for
// dof < 1 or a NaN t. StudentTCdf(2.776, 4) is about 0.975.
double StudentTCdf(double t, double dof);

// StudentTTwoSidedP returns P(|T| >= |t|) for `dof` degrees of freedom, e.g.
// about 0.05 for (12.706, 1); NaN for dof < 1 or a NaN t.
double StudentTTwoSidedP(double t, double dof);

// PairedTTestP returns the two-sided p-value of the one-sample t-test of
// `deltas` (paired differences) against a mean of 0, with n - 1 degrees of
// freedom; nullopt with fewer than 2 values. When all deltas are equal the
// statistic is infinite (p 0) unless they are all 0 (p 1).
std::optional<double> PairedTTestP(const std::vector<double>& deltas);

// HolmAdjust returns Holm-Bonferroni adjusted p-values, in the order of `p`:
// with the m values sorted ascending p_(1) <= ... <= p_(m), the adjusted
// p_(i) = min(1, max over j <= i of (m - j + 1) * p_(j)). Rejecting where
// the adjusted value is below alpha controls the familywise error rate at
// alpha under any dependence between the tests.
std::vector<double> HolmAdjust(const std::vector<double>& p);

// BenjaminiHochbergAdjust returns Benjamini-Hochberg adjusted p-values
// (R's p.adjust(method = "BH")), in the order of `p`: sorted ascending,
// adjusted p_(i) = min over j >= i of min(1, m p_(j) / j). Rejecting where
// the adjusted value is at most alpha controls the false discovery rate at
// alpha for independent or positively dependent tests. NaN values stay NaN
// and are not counted in m (as R does).
std::vector<double> BenjaminiHochbergAdjust(const std::vector<double>& p);

// NormalCdf is P(Z <= z) for the standard normal; NormalQuantile its inverse
// (NaN outside (0, 1)), to about 1e-12.
double NormalCdf(double z);
double NormalQuantile(double p);

// Digamma, Trigamma and Tetragamma are the first three derivatives of
// ln Gamma(x) for x > 0 (NaN otherwise), to about 1e-12 relative.
double Digamma(double x);
double Trigamma(double x);
double Tetragamma(double x);

// TrigammaInverse returns the y > 0 with Trigamma(y) = x, for x > 0 (Smyth's
// Newton iteration, as limma's trigammaInverse); NaN for x <= 0.
double TrigammaInverse(double x);

// VariancePrior is the scaled inverse-chi-square prior that limma's eBayes
// fits to many features' residual variances: s0^2 (`variance`) with `dof`
// prior degrees of freedom, infinite when the variances are no more spread
// than sampling alone explains (then every posterior is s0^2).
struct VariancePrior {
  double variance = 0.0;
  double dof = 0.0;  // may be +infinity
  bool fitted = false;
};

// FitVariancePrior fits the prior to `variances` (each a sample variance with
// `dofs` degrees of freedom, > 0) by the method of moments on the log scale
// (Smyth 2004, limma's fitFDist without covariates), with one conservative
// change: the spread of the log variances beyond sampling is taken half a
// standard error (from the fourth moment) above its point estimate. With 2
// dof per schedule the spread is poorly resolved, a point estimate at or
// below 0 pools every variance into one, and then the truly noisier
// schedules' variances are underestimated: on known truth with a log-sd
// spread of 0.25 across schedules that gave a familywise error of 0.055
// under Holm, 0.040 with the bound (bench/RESULTS.md). Variances of 0 are
// raised to 1e-5 times the median first, as limma does. Returns fitted = false
// with fewer than 2 usable (finite, positive-dof) values. RankSchedules fits
// by maximum likelihood instead (below; bench/RESULTS.md compares them).
VariancePrior FitVariancePrior(const std::vector<double>& variances,
                               const std::vector<double>& dofs);

// FitVariancePriorMaximumLikelihood fits the same prior by maximum
// likelihood: under it each variance over s0^2 is F-distributed on (its dof,
// d0), the marginal Smyth 2004 derives (limma fits its log moments instead,
// for speed). With 2 dof per value the log variances' moments are noisy,
// dominated by the few values near 0 (the log of a chi-square on 2 dof has a
// long lower tail); the likelihood is less swayed by them and pools equal
// variances more often (bench/RESULTS.md, "Verdicts on known truth"). d0 is
// searched over [0.2, 1e4] on the log scale, s0^2 profiled out; an infinite
// d0 (chi-square: the variances are pooled) is taken when it is as likely as
// the best finite one. Variances of 0 are raised to 1e-5 times the median
// first; fitted = false with fewer than 2 usable values.
VariancePrior FitVariancePriorMaximumLikelihood(
    const std::vector<double>& variances, const std::vector<double>& dofs);

// PosteriorVariance is the moderated variance of a feature with sample
// variance `variance` on `dof` degrees of freedom: (d0 s0^2 + d s^2) /
// (d0 + d); s0^2 when the prior's dof is infinite, s^2 without a fitted
// prior.
double PosteriorVariance(const VariancePrior& prior, double variance,
                         double dof);

// PosteriorMeanVariance is E[sigma^2 | s^2] under the prior: (d0 s0^2 +
// d s^2) / (d0 + d - 2), PosteriorVariance's numerator over 2 fewer dof
// (that one is E[1 / sigma^2 | s^2]^-1, what the moderated t assumes). It is
// larger by (d0 + d) / (d0 + d - 2): nothing when the prior pools (infinite
// d0), 1.17 at d0 = 12 and d = 2, 2 at d0 = 2. The denominator is kept at 1
// or more (the mean is infinite below 2 dof). s0^2 when d0 is infinite, s^2
// times d / max(d - 2, 1) without a fitted prior.
double PosteriorMeanVariance(const VariancePrior& prior, double variance,
                             double dof);

// DunnettOneSidedCritical returns d such that, for k + 1 independent normal
// means with equal variance estimated on `dof` degrees of freedom (infinite:
// known), P(every (mean_0 - mean_j) / SE of the difference <= d for j = 1..k)
// = confidence: the one-sided many-to-one critical value (correlation 1/2)
// that Hsu's MCB uses with k = the number of other candidates. Numerical
// integration, about 1e-4 absolute; NaN for k < 1, dof < 1 or confidence
// outside (0, 1). k = 1 gives the one-sided t quantile.
double DunnettOneSidedCritical(int k, double dof, double confidence);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STATS_STATISTICS_H_
