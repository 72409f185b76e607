#include "scheduler/known_truth.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "scheduler/surrogate.h"

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

  KnownTruth truth;
  truth.spec = spec;
  truth.baseline = uniform.ToString();
  std::vector<double> sd(n, spec.noise_sd);
  for (size_t i = 0; i < n; ++i) {
    if (spec.variance_spread > 0.0) {
      sd[i] = spec.noise_sd * std::exp(spec.variance_spread * normal(rng));
    }
    const std::string name = schedules[i].ToString();
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
  truth.trials.reserve(n * spec.seeds);
  for (size_t i = 0; i < n; ++i) {
    for (int s = 0; s < spec.seeds; ++s) {
      KnownTruthTrial& trial = truth.trials.emplace_back();
      trial.schedule = truth.schedules[i];
      trial.seed = s + 1;
      trial.is_baseline = i == baseline;
      const double level = normal(rng);
      for (int64_t t : steps) {
        const double x = static_cast<double>(t);
        const double fade = std::pow(std::max(0.0, 1.0 - x / fade_steps), 2.0);
        const double e = (level + normal(rng)) / std::sqrt(2.0);
        trial.val_steps.push_back(t);
        trial.val_losses.push_back(BaseCurve(x, total) + offset[s] +
                                   delta[i] * x / total + trap[i] * fade +
                                   sd[i] * e);
      }
    }
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
