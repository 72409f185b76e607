#include "scheduler/simulate/known_truth.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "scheduler/analysis/transfer.h"
#include "scheduler/space/profile.h"
#include "scheduler/strategy/surrogate.h"

namespace prism {
namespace {

constexpr double kDivergedLoss = 20.0;
// The near-ties structure sets this many of the best within noise_sd / 2.
constexpr int kNearTies = 10;

struct StructureName {
  TruthStructure structure;
  const char* name;
};
constexpr StructureName kStructureNames[] = {
    {TruthStructure::kNull, "null"},
    {TruthStructure::kPlanted, "planted"},
    {TruthStructure::kSmooth, "smooth"},
    {TruthStructure::kIsolatedBest, "isolated-best"},
    {TruthStructure::kFadingTrap, "fading-trap"},
    {TruthStructure::kNearTies, "near-ties"},
};

double BaseCurve(double t, double steps) {
  return 3.3 + 2.2 * std::pow(1.0 + t / (0.08 * steps), -0.7);
}

absl::Status ValidateTruthSpec(const KnownTruthSpec& spec) {
  if (absl::Status s = ValidateSpace(spec.space); !s.ok()) return s;
  auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("known truth: ", what));
  };
  if (spec.seeds < 1) return bad("seeds must be at least 1");
  if (spec.extra_seeds < 0) return bad("extra_seeds must not be negative");
  if (spec.steps < 1) return bad("steps must be at least 1");
  if (spec.eval_every < 1) return bad("eval_every must be at least 1");
  for (auto [name, v] :
       {std::pair<const char*, double>{"noise_sd", spec.noise_sd},
        {"seed_offset_sd", spec.seed_offset_sd},
        {"variance_spread", spec.variance_spread},
        {"effect", spec.effect},
        {"best_gap", spec.best_gap},
        {"trap_strength", spec.trap_strength}}) {
    if (!(v >= 0.0) || !std::isfinite(v)) {
      return bad(absl::StrCat(name, " must be finite and >= 0, not ", v));
    }
  }
  if (!(spec.trap_fade > 0.0 && spec.trap_fade <= 1.0)) {
    return bad("trap_fade must be in (0, 1]");
  }
  if (!(spec.effect_growth > 0.0) || !std::isfinite(spec.effect_growth)) {
    return bad("effect_growth must be finite and > 0");
  }
  if (!(spec.planted_fraction >= 0.0 && spec.worse_fraction >= 0.0 &&
        spec.planted_fraction + spec.worse_fraction <= 1.0)) {
    return bad(
        "planted_fraction and worse_fraction must be in [0, 1] and "
        "sum to at most 1");
  }
  if (spec.diverged_trials < 0) return bad("diverged_trials must be >= 0");
  return absl::OkStatus();
}

// SmoothDeltas returns the kSmooth effect of each schedule (non-baseline
// ones; the baseline's is 0), scaled so the lowest is -effect, with a small
// jitter that breaks ties between schedules of equal features.
std::vector<double> SmoothDeltas(const KnownTruthSpec& spec,
                                 const std::vector<Schedule>& schedules,
                                 size_t baseline, std::mt19937_64& rng) {
  std::vector<double> raw(schedules.size(), 0.0);
  std::normal_distribution<double> jitter(0.0, 1.0);
  double lowest = 0.0;
  for (size_t i = 0; i < schedules.size(); ++i) {
    const std::vector<double> f = ScheduleFeatures(
        spec.space.d_model, spec.space.base_heads, schedules[i]);
    const double base_log2 = std::log2(
        static_cast<double>(spec.space.d_model / spec.space.base_heads));
    // Wider first layers better, each transition costs 0.4 of a doubling.
    raw[i] = -(f[0] - base_log2) + 0.4 * f[spec.space.layers];
    raw[i] += 0.05 * jitter(rng);
    if (i != baseline) lowest = std::min(lowest, raw[i]);
  }
  std::vector<double> delta(schedules.size(), 0.0);
  const double scale = lowest < 0.0 ? spec.effect / -lowest : 0.0;
  for (size_t i = 0; i < schedules.size(); ++i) {
    if (i != baseline) delta[i] = raw[i] * scale;
  }
  return delta;
}

// ArgMin returns the non-baseline index of the lowest delta.
size_t ArgMin(const std::vector<double>& delta, size_t baseline) {
  size_t best = baseline == 0 ? 1 : 0;
  for (size_t i = 0; i < delta.size(); ++i) {
    if (i != baseline && delta[i] < delta[best]) best = i;
  }
  return best;
}

// SecondLowest returns the lowest delta of the non-baseline schedules other
// than `best`.
double SecondLowest(const std::vector<double>& delta, size_t baseline,
                    size_t best) {
  double second = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < delta.size(); ++i) {
    if (i != baseline && i != best) second = std::min(second, delta[i]);
  }
  return second;
}

// FillTruth draws the trials of `names` (baseline at `baseline`) with true
// final deltas `delta` and early traps `trap`, continuing `rng` and `normal`
// (which may hold a cached draw, so the caller's is passed on).
KnownTruth FillTruth(const KnownTruthSpec& spec,
                     const std::vector<std::string>& names, size_t baseline,
                     const std::vector<double>& delta,
                     const std::vector<double>& trap, std::mt19937_64& rng,
                     std::normal_distribution<double>& normal) {
  const size_t n = names.size();
  KnownTruth truth;
  truth.spec = spec;
  truth.baseline = names[baseline];
  std::vector<double> sd(n, spec.noise_sd);
  for (size_t i = 0; i < n; ++i) {
    if (spec.variance_spread > 0.0) {
      sd[i] = spec.noise_sd * std::exp(spec.variance_spread * normal(rng));
    }
    const std::string& name = names[i];
    truth.schedules.push_back(name);
    truth.true_delta[name] = delta[i];
    truth.noise_sd[name] = sd[i];
  }
  truth.best = truth.baseline;
  for (size_t i = 0; i < n; ++i) {
    if (delta[i] < truth.true_delta[truth.best])
      truth.best = truth.schedules[i];
  }

  std::vector<double> offset(spec.seeds);
  for (double& o : offset) o = spec.seed_offset_sd * normal(rng);
  std::vector<int64_t> steps;
  if (spec.curves) {
    for (int64_t t = 0; t < spec.steps; t += spec.eval_every)
      steps.push_back(t);
  }
  steps.push_back(spec.steps);
  const double total = static_cast<double>(spec.steps);
  const double fade_steps = spec.trap_fade * total;
  // One trial's curve, drawn from `draw`: a per-trial level, then per-eval
  // jitter.
  auto add_trial = [&](size_t i, int64_t seed, double seed_offset,
                       std::mt19937_64& draw,
                       std::normal_distribution<double>& z) {
    KnownTruthTrial& trial = truth.trials.emplace_back();
    trial.schedule = truth.schedules[i];
    trial.seed = seed;
    trial.is_baseline = i == baseline;
    const double level = z(draw);
    for (int64_t t : steps) {
      const double x = static_cast<double>(t);
      const double fade = std::pow(std::max(0.0, 1.0 - x / fade_steps), 2.0);
      const double e = (level + z(draw)) / std::sqrt(2.0);
      // pow is skipped at the default so the default's curves stay
      // bit-for-bit those drawn before effect_growth existed.
      const double grown = spec.effect_growth == 1.0
                               ? x / total
                               : std::pow(x / total, spec.effect_growth);
      trial.val_steps.push_back(t);
      trial.val_losses.push_back(BaseCurve(x, total) + seed_offset +
                                 delta[i] * grown + trap[i] * fade + sd[i] * e);
    }
  };
  truth.trials.reserve(n * (spec.seeds + spec.extra_seeds));
  for (size_t i = 0; i < n; ++i) {
    for (int s = 0; s < spec.seeds; ++s)
      add_trial(i, s + 1, offset[s], rng, normal);
  }

  // Divergences: distinct non-baseline trials, mid-run.
  std::vector<size_t> candidates;
  for (size_t k = 0; k < truth.trials.size(); ++k) {
    if (!truth.trials[k].is_baseline) candidates.push_back(k);
  }
  std::shuffle(candidates.begin(), candidates.end(), rng);
  const size_t diverging =
      std::min(candidates.size(), static_cast<size_t>(spec.diverged_trials));
  for (size_t k = 0; k < diverging; ++k) {
    KnownTruthTrial& trial = truth.trials[candidates[k]];
    const size_t keep = std::max<size_t>(1, trial.val_steps.size() / 2);
    trial.val_steps.resize(keep);
    trial.val_losses.resize(keep);
    trial.val_losses.back() = kDivergedLoss;
    trial.diverged = true;
    trial.diverged_step = trial.val_steps.back();
  }

  // Further seeds (racing's) from a stream of their own, so the first
  // `seeds` are the same draws whatever extra_seeds is; none diverges.
  if (spec.extra_seeds > 0) {
    std::mt19937_64 more(spec.seed ^ 0x9e3779b97f4a7c15ULL);
    std::normal_distribution<double> z(0.0, 1.0);
    std::vector<double> more_offset(spec.extra_seeds);
    for (double& o : more_offset) o = spec.seed_offset_sd * z(more);
    for (size_t i = 0; i < n; ++i) {
      for (int s = 0; s < spec.extra_seeds; ++s) {
        add_trial(i, spec.seeds + s + 1, more_offset[s], more, z);
      }
    }
  }
  return truth;
}

}  // namespace

const char* TruthStructureName(TruthStructure s) {
  for (const StructureName& n : kStructureNames) {
    if (n.structure == s) return n.name;
  }
  return "";
}

absl::StatusOr<TruthStructure> ParseTruthStructure(const std::string& word) {
  std::string choices;
  for (const StructureName& n : kStructureNames) {
    if (word == n.name) return n.structure;
    absl::StrAppend(&choices, choices.empty() ? "" : ", ", n.name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown known-truth structure '", word, "' (one of ", choices, ")"));
}

absl::StatusOr<KnownTruth> GenerateKnownTruth(const KnownTruthSpec& spec) {
  if (absl::Status s = ValidateTruthSpec(spec); !s.ok()) return s;
  absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(spec.space);
  if (!e.ok()) return e.status();
  std::vector<Schedule> schedules;
  while (e->Next()) schedules.emplace_back(e->heads());
  const Schedule uniform =
      Schedule::Uniform(spec.space.base_heads, spec.space.layers);
  auto found = std::find(schedules.begin(), schedules.end(), uniform);
  if (found == schedules.end()) {
    // A space with principles may exclude nothing uniform; add it first.
    schedules.insert(schedules.begin(), uniform);
    found = schedules.begin();
  }
  const size_t baseline = static_cast<size_t>(found - schedules.begin());
  const size_t n = schedules.size();
  if (n < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("known truth: the space has ", n - 1,
                     " non-baseline schedule(s); at least 2 are needed"));
  }

  std::mt19937_64 rng(spec.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform01(0.0, 1.0);

  // Non-baseline indices in a random order: who gets planted effects.
  std::vector<size_t> others;
  for (size_t i = 0; i < n; ++i) {
    if (i != baseline) others.push_back(i);
  }
  std::shuffle(others.begin(), others.end(), rng);

  std::vector<double> delta(n, 0.0);
  std::vector<double> trap(n, 0.0);
  switch (spec.structure) {
    case TruthStructure::kNull:
      break;
    case TruthStructure::kPlanted: {
      const size_t m = others.size();
      const size_t better =
          static_cast<size_t>(std::lround(spec.planted_fraction * m));
      const size_t worse =
          std::min(m - better,
                   static_cast<size_t>(std::lround(spec.worse_fraction * m)));
      for (size_t k = 0; k < better; ++k) delta[others[k]] = -spec.effect;
      for (size_t k = better; k < better + worse; ++k) {
        delta[others[k]] = spec.effect;
      }
      if (better > 0) delta[others[0]] -= spec.best_gap;
      break;
    }
    case TruthStructure::kSmooth:
    case TruthStructure::kIsolatedBest:
    case TruthStructure::kFadingTrap:
    case TruthStructure::kNearTies: {
      delta = SmoothDeltas(spec, schedules, baseline, rng);
      size_t best = ArgMin(delta, baseline);
      if (spec.structure == TruthStructure::kIsolatedBest) {
        // The median of the smooth effect: nothing about it stands out.
        std::vector<size_t> by_delta = others;
        std::sort(by_delta.begin(), by_delta.end(),
                  [&delta](size_t a, size_t b) { return delta[a] < delta[b]; });
        const size_t median = by_delta[by_delta.size() / 2];
        delta[median] = delta[best] - spec.best_gap;
        best = median;
      } else if (spec.structure == TruthStructure::kNearTies) {
        std::vector<size_t> by_delta = others;
        std::sort(by_delta.begin(), by_delta.end(),
                  [&delta](size_t a, size_t b) { return delta[a] < delta[b]; });
        const double top = delta[best];
        for (size_t k = 1; k < std::min<size_t>(kNearTies, by_delta.size());
             ++k) {
          delta[by_delta[k]] =
              top + spec.best_gap / 10.0 + uniform01(rng) * spec.noise_sd / 2.0;
        }
      } else {
        // The best leads the next by best_gap.
        delta[best] = SecondLowest(delta, baseline, best) - spec.best_gap;
      }
      if (spec.structure == TruthStructure::kFadingTrap) {
        for (size_t k = 0; k < others.size() / 3; ++k) {
          if (others[k] != best) trap[others[k]] = -spec.trap_strength;
        }
        trap[best] = spec.trap_strength;
      }
      break;
    }
  }

  std::vector<std::string> names;
  for (const Schedule& s : schedules) names.push_back(s.ToString());
  return FillTruth(spec, names, baseline, delta, trap, rng, normal);
}

absl::StatusOr<KnownTruth> GenerateSecondSize(const KnownTruth& first,
                                              const TransferTruthSpec& spec) {
  if (absl::Status s = ValidateTruthSpec(spec.second); !s.ok()) return s;
  if (!(spec.correlation >= -1.0 && spec.correlation <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("known truth: the second size's correlation must be in "
                     "[-1, 1], not ",
                     spec.correlation));
  }
  auto shape = [](const char* name, const SpaceSpec& space) {
    ModelShape s;
    s.name = name;
    s.d_model = space.d_model;
    s.layers = space.layers;
    s.base_heads = space.base_heads;
    return s;
  };
  const ModelShape from = shape("first", first.spec.space);
  const ModelShape to = shape("second", spec.second.space);
  MapOptions options;
  options.min_run = spec.second.space.min_run;
  options.max_run = spec.second.space.max_run;

  // The baseline first, so that it claims the uniform image.
  std::vector<std::string> order = {first.baseline};
  for (const std::string& s : first.schedules) {
    if (s != first.baseline) order.push_back(s);
  }
  std::vector<std::string> names;   // second-size schedules
  std::vector<std::string> origin;  // their first-size schedules
  std::set<std::string> taken;
  for (const std::string& s : order) {
    absl::StatusOr<Schedule> parsed = ParseSchedule(s);
    if (!parsed.ok()) return parsed.status();
    absl::StatusOr<ScheduleMapping> m = MapSchedule(*parsed, from, to, options);
    if (!m.ok()) {
      if (s == first.baseline) return m.status();
      continue;
    }
    const std::string image = m->mapped.ToString();
    if (!taken.insert(image).second) continue;
    names.push_back(image);
    origin.push_back(s);
  }
  const size_t n = names.size();
  if (n < 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "known truth: ", n - 1,
        " non-baseline schedule(s) transfer to the second size; at least 3 "
        "are needed"));
  }

  std::mt19937_64 rng(spec.second.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  // a: the first-size deltas of the transferred non-baseline schedules.
  std::vector<double> a;
  for (size_t i = 1; i < n; ++i) a.push_back(first.true_delta.at(origin[i]));
  const size_t m = a.size();
  // Gaussian copula: z2 = rho z1 + sqrt(1 - rho^2) w, w orthogonal to z1.
  auto standardize = [](std::vector<double>& v) {
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) /
                        static_cast<double>(v.size());
    double ss = 0.0;
    for (double& x : v) {
      x -= mean;
      ss += x * x;
    }
    if (ss > 0.0) {
      for (double& x : v) x /= std::sqrt(ss);
    }
  };
  std::vector<double> z1 = a;
  standardize(z1);
  std::vector<double> w(m);
  for (double& x : w) x = normal(rng);
  standardize(w);
  double projection = 0.0;
  for (size_t i = 0; i < m; ++i) projection += w[i] * z1[i];
  for (size_t i = 0; i < m; ++i) w[i] -= projection * z1[i];
  standardize(w);
  const double rho = spec.correlation;
  std::vector<double> z2(m);
  for (size_t i = 0; i < m; ++i) {
    z2[i] = rho * z1[i] + std::sqrt(std::max(0.0, 1.0 - rho * rho)) * w[i];
  }
  // The sorted first-size deltas, assigned in z2's order.
  std::vector<double> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> by_z2(m);
  std::iota(by_z2.begin(), by_z2.end(), 0);
  std::stable_sort(by_z2.begin(), by_z2.end(),
                   [&z2](size_t x, size_t y) { return z2[x] < z2[y]; });
  std::vector<double> b(m);
  for (size_t k = 0; k < m; ++k) b[by_z2[k]] = sorted[k];
  // Random swaps, kept when they bring Spearman nearer rho.
  double gap = std::abs(SpearmanRho(a, b) - rho);
  std::uniform_int_distribution<size_t> pick(0, m - 1);
  for (size_t step = 0; step < 200 * m && gap > kTransferTolerance; ++step) {
    const size_t i = pick(rng);
    const size_t j = pick(rng);
    if (i == j || b[i] == b[j]) continue;
    std::swap(b[i], b[j]);
    const double swapped = std::abs(SpearmanRho(a, b) - rho);
    if (swapped < gap) {
      gap = swapped;
    } else {
      std::swap(b[i], b[j]);
    }
  }

  std::vector<double> delta(n, 0.0);
  for (size_t i = 1; i < n; ++i) delta[i] = b[i - 1];
  const std::vector<double> trap(n, 0.0);
  KnownTruth truth =
      FillTruth(spec.second, names, /*baseline=*/0, delta, trap, rng, normal);
  for (size_t i = 0; i < n; ++i) truth.transferred_from[names[i]] = origin[i];
  truth.true_spearman = SpearmanRho(a, b);
  truth.true_kendall = KendallTauB(a, b);
  return truth;
}

TrialOutcome TruthOutcome(const KnownTruthTrial& trial, int64_t trial_id) {
  TrialOutcome o;
  o.trial_id = trial_id;
  o.schedule = trial.schedule;
  o.seed = trial.seed;
  o.is_baseline = trial.is_baseline;
  o.state = trial.diverged ? OutcomeState::kDiverged : OutcomeState::kCompleted;
  o.final_val_loss = trial.val_losses.back();
  o.min_val_loss =
      *std::min_element(trial.val_losses.begin(), trial.val_losses.end());
  o.val_steps = trial.val_steps;
  o.val_losses = trial.val_losses;
  return o;
}

std::vector<TrialOutcome> TruthOutcomes(const KnownTruth& truth, int seeds) {
  std::vector<TrialOutcome> out;
  int64_t id = 1;
  for (const KnownTruthTrial& t : truth.trials) {
    if (seeds > 0 && t.seed > seeds) continue;
    out.push_back(TruthOutcome(t, id++));
  }
  return out;
}

double ValLossAt(const KnownTruthTrial& trial, int64_t step) {
  double loss = std::numeric_limits<double>::quiet_NaN();
  for (size_t k = 0; k < trial.val_steps.size(); ++k) {
    if (trial.val_steps[k] > step) break;
    loss = trial.val_losses[k];
  }
  return loss;
}

}  // namespace prism
