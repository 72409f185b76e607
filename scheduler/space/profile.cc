#include "scheduler/space/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace prism {
namespace {

// Sums of errors closer than this are equal (they differ by rounding only).
constexpr double kTieEpsilon = 1e-12;

double Log2Ratio(int heads, int base_heads) {
  return std::log2(static_cast<double>(heads) / base_heads);
}

// Overlap is the length, in units of 1 / (source_layers * target_layers), of
// target layer j's depth interval and source layer i's.
int64_t Overlap(int j, int i, int source_layers, int target_layers) {
  const int64_t begin =
      std::max<int64_t>(int64_t{j} * source_layers, int64_t{i} * target_layers);
  const int64_t end = std::min<int64_t>(int64_t{j + 1} * source_layers,
                                        int64_t{i + 1} * target_layers);
  return std::max<int64_t>(0, end - begin);
}

// LayerError is e over target layer j of `layers` when it has log2 ratio
// `log_ratio`: its sup and its integral over the layer (not divided by the
// layer's width).
struct LayerError {
  double max = 0.0;
  double integral = 0.0;
};

LayerError ErrorOverLayer(const std::vector<double>& profile_log, int j,
                          int layers, double log_ratio) {
  const int source_layers = static_cast<int>(profile_log.size());
  const double unit =
      1.0 / (static_cast<double>(source_layers) * static_cast<double>(layers));
  LayerError e;
  // Source layers meeting [j / layers, (j + 1) / layers).
  const int first = static_cast<int>(int64_t{j} * source_layers / layers);
  for (int i = first; i < source_layers; ++i) {
    const int64_t overlap = Overlap(j, i, source_layers, layers);
    if (overlap == 0) {
      if (int64_t{i} * layers >= int64_t{j + 1} * source_layers) break;
      continue;
    }
    const double err = std::abs(log_ratio - profile_log[i]);
    e.max = std::max(e.max, err);
    e.integral += err * static_cast<double>(overlap) * unit;
  }
  return e;
}

std::vector<double> LogProfile(const ScheduleProfile& profile) {
  std::vector<double> out;
  out.reserve(profile.ratios.size());
  for (double r : profile.ratios) out.push_back(std::log2(r));
  return out;
}

// Cost is a DP path's objective: the mean error, then the max.
struct Cost {
  double sum = std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool feasible() const { return std::isfinite(sum); }
  bool Better(const Cost& o) const {
    if (sum < o.sum - kTieEpsilon) return true;
    if (sum > o.sum + kTieEpsilon) return false;
    return max < o.max - kTieEpsilon;
  }
};

struct DpResult {
  std::vector<int> heads;
  Cost cost;
};

// FitSchedule returns the valid schedule of `to` closest to the profile
// (per-layer costs given) that holds `required`, or nullopt when none does.
std::optional<DpResult> FitSchedule(
    const SpaceSpec& to, const std::vector<int>& values,
    const std::vector<std::vector<LayerError>>& cost,  // [layer][value index]
    const PrincipleSet& required) {
  const int layers = to.layers;
  std::vector<int> allowed;  // indices into values
  for (size_t v = 0; v < values.size(); ++v) {
    const int dim = to.d_model / values[v];
    const bool pow2 = (dim & (dim - 1)) == 0;
    if (!required.pow2 || pow2) allowed.push_back(static_cast<int>(v));
  }
  const int base = static_cast<int>(values.size()) - 1;  // values end at B'
  if (allowed.empty() || allowed.back() != base) return std::nullopt;
  const int runs = required.smooth ? to.max_run : 1;
  const int first_forced_base =
      required.baseline ? layers - (layers + 1) / 2 : layers - 1;
  const int na = static_cast<int>(allowed.size());
  auto index = [runs](int a, int r) { return a * runs + (r - 1); };
  const int states = na * runs;
  // best[j][state], parent[j][state].
  std::vector<std::vector<Cost>> best(layers, std::vector<Cost>(states));
  std::vector<std::vector<int>> parent(layers, std::vector<int>(states, -1));
  auto cell = [&](int j, int a) {
    const LayerError& e = cost[j][allowed[a]];
    return e;
  };
  for (int a = 0; a < na; ++a) {
    if (0 >= first_forced_base && allowed[a] != base) continue;
    const LayerError e = cell(0, a);
    best[0][index(a, 1)] = Cost{e.integral, e.max};
  }
  for (int j = 1; j < layers; ++j) {
    for (int a = 0; a < na; ++a) {
      for (int r = 1; r <= runs; ++r) {
        const Cost& from = best[j - 1][index(a, r)];
        if (!from.feasible()) continue;
        const bool at_base = allowed[a] == base;
        for (int b = a; b < na; ++b) {
          if (j >= first_forced_base && allowed[b] != base) continue;
          int next_run = 1;
          if (b == a) {
            if (!at_base && required.smooth) {
              if (r + 1 > to.max_run) continue;
              next_run = r + 1;
            }
          } else if (!at_base && required.smooth && r < to.min_run) {
            continue;
          }
          const LayerError e = cell(j, b);
          const Cost c{from.sum + e.integral, std::max(from.max, e.max)};
          const int s = index(b, next_run);
          if (c.Better(best[j][s])) {
            best[j][s] = c;
            parent[j][s] = index(a, r);
          }
        }
      }
    }
  }
  int end = -1;
  for (int r = 1; r <= runs; ++r) {
    const int s = index(na - 1, r);
    if (best[layers - 1][s].feasible() &&
        (end < 0 || best[layers - 1][s].Better(best[layers - 1][end]))) {
      end = s;
    }
  }
  if (end < 0) return std::nullopt;
  DpResult result;
  result.cost = best[layers - 1][end];
  result.heads.assign(layers, 0);
  for (int j = layers - 1, s = end; j >= 0; --j) {
    result.heads[j] = values[allowed[s / runs]];
    s = parent[j][s];
  }
  return result;
}

std::string RatioText(int heads, int base_heads) {
  return absl::StrFormat("%.4g (%d of %d heads)",
                         static_cast<double>(heads) / base_heads, heads,
                         base_heads);
}

std::string ShapeText(const ModelShape& shape) {
  return absl::StrCat(shape.name.empty() ? "custom" : shape.name, " (d_model ",
                      shape.d_model, ", ", shape.layers, " layers, ",
                      shape.base_heads, " base heads)");
}

}  // namespace

double ScheduleProfile::RatioAt(double depth) const {
  if (ratios.empty()) return 0.0;
  const double n = static_cast<double>(ratios.size());
  const int l = static_cast<int>(std::floor(std::clamp(depth, 0.0, 1.0) * n));
  return ratios[std::clamp<int>(l, 0, static_cast<int>(ratios.size()) - 1)];
}

ScheduleProfile ProfileOf(const Schedule& s, int base_heads) {
  ScheduleProfile p;
  for (int h : s.heads()) {
    p.ratios.push_back(static_cast<double>(h) / base_heads);
  }
  return p;
}

Distortion ProfileDistortion(const ScheduleProfile& profile, const Schedule& s,
                             int base_heads) {
  Distortion d;
  if (profile.ratios.empty() || s.layers() == 0) return d;
  const std::vector<double> log_profile = LogProfile(profile);
  for (int j = 0; j < s.layers(); ++j) {
    const LayerError e = ErrorOverLayer(log_profile, j, s.layers(),
                                        Log2Ratio(s.heads(j), base_heads));
    d.max_error = std::max(d.max_error, e.max);
    d.mean_error += e.integral;
  }
  return d;
}

SpaceSpec ShapeSpace(const ModelShape& shape, const MapOptions& options) {
  SpaceSpec spec;
  spec.d_model = shape.d_model;
  spec.layers = shape.layers;
  spec.base_heads = shape.base_heads;
  spec.min_run = options.min_run;
  spec.max_run = options.max_run;
  return spec;
}

absl::StatusOr<ScheduleMapping> MapSchedule(const Schedule& s,
                                            const ModelShape& from,
                                            const ModelShape& to,
                                            const MapOptions& options) {
  if (!(options.max_ratio_error > 0.0) ||
      !std::isfinite(options.max_ratio_error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max ratio error must be a positive number of doublings, "
                     "got ",
                     options.max_ratio_error));
  }
  const SpaceSpec from_spec = ShapeSpace(from, options);
  const SpaceSpec to_spec = ShapeSpace(to, options);
  if (absl::Status ok = ValidateSpace(from_spec); !ok.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("source shape ", from.name, ": ", ok.message()));
  }
  if (absl::Status ok = ValidateSpace(to_spec); !ok.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("target shape ", to.name, ": ", ok.message()));
  }
  if (absl::Status ok = CheckHardConstraints(from_spec, s); !ok.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule '", s.ToString(), "' is not a schedule of ",
                     ShapeText(from), ": ", ok.message()));
  }
  const std::string what =
      absl::StrCat("schedule '", s.ToString(), "' of ", from.name,
                   " cannot be mapped to ", ShapeText(to), ": ");

  // The target's head counts: divisors of d_model' up to B', ascending.
  std::vector<int> values;
  for (int h = 1; h <= to.base_heads; ++h) {
    if (to.d_model % h == 0) values.push_back(h);
  }
  const std::vector<double> log_profile =
      LogProfile(ProfileOf(s, from.base_heads));
  std::set<int> distinct;
  for (int l = 0; l < s.layers(); ++l) {
    distinct.insert(s.heads(l));
    if (l > 0 && s.heads(l) == s.heads(l - 1)) continue;
    double nearest = std::numeric_limits<double>::infinity();
    int nearest_heads = 0;
    for (int h : values) {
      const double err = std::abs(Log2Ratio(h, to.base_heads) - log_profile[l]);
      if (err < nearest) {
        nearest = err;
        nearest_heads = h;
      }
    }
    if (nearest > options.max_ratio_error + kTieEpsilon) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%slayer %d's ratio %s has no head count within %.4g doubling(s) "
          "(nearest: %s, %.3g doublings away)",
          what, l + 1, RatioText(s.heads(l), from.base_heads),
          options.max_ratio_error, RatioText(nearest_heads, to.base_heads),
          nearest));
    }
  }
  if (to.layers < static_cast<int>(distinct.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, "it has ", to.layers, " layers, fewer than the schedule's ",
        distinct.size(), " distinct head counts"));
  }

  std::vector<std::vector<LayerError>> cost(
      to.layers, std::vector<LayerError>(values.size()));
  for (int j = 0; j < to.layers; ++j) {
    for (size_t v = 0; v < values.size(); ++v) {
      cost[j][v] = ErrorOverLayer(log_profile, j, to.layers,
                                  Log2Ratio(values[v], to.base_heads));
    }
  }

  const SchedulePrinciples held = ReportPrinciples(from_spec, s);
  std::vector<Principle> held_list;
  for (Principle p : kAllPrinciples) {
    if (held.Satisfies(p)) held_list.push_back(p);
  }
  // Keep as many held principles as the target allows: the largest subsets
  // first, the least distorted among a size's feasible ones.
  const int n_held = static_cast<int>(held_list.size());
  std::optional<DpResult> fit;
  PrincipleSet kept;
  for (int size = n_held; size >= 0 && !fit.has_value(); --size) {
    for (int mask = 0; mask < (1 << n_held); ++mask) {
      if (__builtin_popcount(mask) != size) continue;
      PrincipleSet required;
      for (int k = 0; k < n_held; ++k) {
        if (mask & (1 << k)) required.Set(held_list[k], true);
      }
      std::optional<DpResult> candidate =
          FitSchedule(to_spec, values, cost, required);
      if (candidate.has_value() &&
          (!fit.has_value() || candidate->cost.Better(fit->cost))) {
        fit = std::move(candidate);
        kept = required;
      }
    }
  }
  if (!fit.has_value()) {
    // Unreachable for a valid target: the uniform schedule needs no principle.
    return absl::InternalError(absl::StrCat(what, "no valid schedule found"));
  }

  ScheduleMapping m;
  m.from = from.name;
  m.to = to.name;
  m.source = s;
  m.mapped = Schedule(fit->heads);
  for (int h : s.heads()) {
    m.source_ratios.push_back(static_cast<double>(h) / from.base_heads);
  }
  const ScheduleProfile profile = ProfileOf(s, from.base_heads);
  for (int j = 0; j < to.layers; ++j) {
    LayerMapping layer;
    layer.depth_begin = static_cast<double>(j) / to.layers;
    layer.depth_end = static_cast<double>(j + 1) / to.layers;
    layer.profile_ratio = profile.RatioAt((j + 0.5) / to.layers);
    layer.heads = fit->heads[j];
    layer.ratio = static_cast<double>(layer.heads) / to.base_heads;
    const LayerError e = ErrorOverLayer(log_profile, j, to.layers,
                                        Log2Ratio(layer.heads, to.base_heads));
    layer.max_error = e.max;
    layer.mean_error = e.integral * to.layers;
    m.layers.push_back(layer);
  }
  m.distortion = ProfileDistortion(profile, m.mapped, to.base_heads);
  const SchedulePrinciples mapped = ReportPrinciples(to_spec, m.mapped);
  for (Principle p : kAllPrinciples) {
    m.source_principles.Set(p, held.Satisfies(p));
    m.mapped_principles.Set(p, mapped.Satisfies(p));
  }
  m.kept = kept;
  for (Principle p : held_list) {
    if (kept.Has(p)) continue;
    m.dropped.push_back(absl::StrCat(PrincipleName(p), ": no schedule of ",
                                     ShapeText(to), " holds ", PrincipleName(p),
                                     kept.empty() ? "" : " together with ",
                                     kept.empty() ? "" : kept.ToString()));
  }
  return m;
}

}  // namespace prism
