#include "scheduler/space/space.h"

#include <algorithm>
#include <limits>
#include <random>
#include <unordered_set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace prism {
namespace {

// Counts are unsigned 128-bit, saturated at kSaturated = 2^64, which stands
// for "more than 2^64-1". Inputs of every sum are <= 2^64, so a sum of up to
// 2^63 of them cannot overflow and saturation is a final min().
using Count = unsigned __int128;
constexpr Count kSaturated = Count(1) << 64;

Count Saturate(Count c) { return c > kSaturated ? kSaturated : c; }

bool IsPowerOfTwo(int x) { return x > 0 && (x & (x - 1)) == 0; }

int CeilHalf(int n) { return (n + 1) / 2; }

// SpaceModel is the dynamic programme behind counting, ranking, unranking and
// enumeration.
//
// A valid schedule is a sequence of blocks with strictly increasing head
// counts: zero or more non-base blocks (lengths in [run_lo, run_hi]) and one
// final base block (length >= min_base). Let M(x, q) be the number of ways to
// fill x layers with such blocks when the next block's head count may be
// the base or any of q given non-base values (the q largest non-base
// candidates above the previous block). Then M(0, q) = 0 and, for x >= 1,
//
//   M(x, q) = [x >= min_base] + sum_{j < q} sum_{t = run_lo..min(run_hi, x-1)}
//                                 M(x - t, j)
//
// because a non-base block of the j-th largest candidate leaves exactly j
// larger non-base candidates. M depends on how many candidates are left, not
// on which, so the table is (non-base candidates + 1) x (L + 1), built in
// O(candidates * L) with prefix sums over x. Prefix sums of saturated entries
// stay exact in 128 bits (at most kMaxLayers + 1 terms of <= 2^64), and a
// window of them is >= 2^64 exactly when the true sum is, so window sums
// saturate correctly.
//
// Head counts are handled as indices into `values` (ascending); the base is
// the last index. Lexicographic order of head counts is therefore the order
// of indices, and at every layer the choices in canonical order are: continue
// the current block, then start a block of each larger value.
class SpaceModel {
 public:
  // Build assumes ValidateSpace(spec) passed. With keep_rows false only the
  // total is kept (O(L) memory), which is all CountSchedules needs.
  SpaceModel(const SpaceSpec& spec, bool keep_rows)
      : layers_(spec.layers),
        run_lo_(spec.principles.smooth ? spec.min_run : 1),
        run_hi_(spec.principles.smooth ? spec.max_run : spec.layers),
        min_base_(spec.principles.baseline ? CeilHalf(spec.layers) : 1) {
    // Divisors come in pairs (h, d_model / h) with h <= sqrt(d_model), so
    // the scan is O(sqrt(d_model)) even for a d_model near 2^31.
    for (int h = 1; static_cast<int64_t>(h) * h <= spec.d_model; ++h) {
      if (spec.d_model % h != 0) continue;
      for (int divisor : {h, spec.d_model / h}) {
        if (divisor > spec.base_heads) continue;
        if (spec.principles.pow2 && !IsPowerOfTwo(spec.d_model / divisor)) {
          continue;
        }
        values_.push_back(divisor);
      }
    }
    // A square d_model yields its root twice.
    std::sort(values_.begin(), values_.end());
    values_.erase(std::unique(values_.begin(), values_.end()), values_.end());
    // Boundary convergence needs the base itself to be a candidate; pow2 can
    // exclude it, and then the space is empty.
    if (values_.empty() || values_.back() != spec.base_heads) {
      values_.clear();
      return;
    }
    base_ = static_cast<int>(values_.size()) - 1;
    const int width = layers_ + 1;
    std::vector<Count> row(width);
    std::vector<Count> larger(width, 0);  // sum over j < q of block counts
    if (keep_rows) prefix_.resize(static_cast<size_t>(base_ + 1) * width);
    for (int q = 0; q <= base_; ++q) {
      Count* prefix =
          keep_rows ? &prefix_[static_cast<size_t>(q) * width] : row.data();
      prefix[0] = 0;
      for (int x = 1; x <= layers_; ++x) {
        const Count m = Saturate((x >= min_base_ ? 1 : 0) + larger[x]);
        prefix[x] = prefix[x - 1] + m;
      }
      if (q == base_) {
        total_ = Saturate(prefix[layers_] - prefix[layers_ - 1]);
        break;
      }
      for (int x = 1; x <= layers_; ++x) {
        larger[x] = Saturate(
            larger[x] + Window(prefix, std::max(1, x - run_hi_), x - run_lo_));
      }
    }
  }

  bool empty() const { return values_.empty(); }
  Count total() const { return empty() ? 0 : total_; }
  int layers() const { return layers_; }
  int base() const { return base_; }
  int value(int index) const { return values_[index]; }
  const std::vector<int>& values() const { return values_; }

  // NewBlock counts the schedules that start a block of value index w at
  // layer p, given that layers before p are fixed and may be followed by w.
  Count NewBlock(int p, int w) const {
    const int m = layers_ - p;
    if (w == base_) return m >= min_base_ ? 1 : 0;
    return Window(Row(w), std::max(1, m - run_hi_), m - run_lo_);
  }

  // Continue counts the schedules that repeat value index v at layer p, when
  // v's block already covers the r layers before p.
  Count Continue(int p, int v, int r) const {
    if (v == base_) return 1;
    const int len = r + 1;  // the block's length including layer p
    if (len > run_hi_) return 0;
    const int rest = layers_ - p - 1;  // layers after p
    const int extra_lo = std::max(0, run_lo_ - len);
    const int extra_hi = std::min(run_hi_ - len, rest - 1);
    if (extra_lo > extra_hi) return 0;
    return Window(Row(v), rest - extra_hi, rest - extra_lo);
  }

  // CanEnd is true when a non-base block of r layers may be followed by a
  // larger value.
  bool CanEnd(int r) const { return r >= run_lo_; }

 private:
  const Count* Row(int w) const {
    // Value index w leaves base_ - 1 - w larger non-base values.
    return &prefix_[static_cast<size_t>(base_ - 1 - w) * (layers_ + 1)];
  }

  // Window returns sum_{x = lo..hi} M(x, q) for q's prefix row, saturated.
  static Count Window(const Count* prefix, int lo, int hi) {
    if (lo > hi) return 0;
    return Saturate(prefix[hi] - prefix[lo - 1]);
  }

  int layers_;
  int run_lo_;
  int run_hi_;
  int min_base_;
  std::vector<int> values_;
  int base_ = -1;
  Count total_ = 0;
  std::vector<Count> prefix_;  // (base_ + 1) rows of layers_ + 1
};

// Walk is the per-layer state shared by unranking and enumeration: the value
// index at each layer and the length of its block up to that layer.
struct Walk {
  std::vector<int> index;
  std::vector<int> run;
  std::vector<int> heads;

  explicit Walk(int layers) : index(layers), run(layers), heads(layers) {}

  void Set(const SpaceModel& model, int p, int v) {
    run[p] = (p > 0 && index[p - 1] == v) ? run[p - 1] + 1 : 1;
    index[p] = v;
    heads[p] = model.value(v);
  }
};

// UnrankInto fills `walk` with the schedule at `rank` (< model.total()).
void UnrankInto(const SpaceModel& model, Count rank, Walk* walk) {
  int v = -1;
  int r = 0;
  for (int p = 0; p < model.layers(); ++p) {
    int chosen = -1;
    if (v >= 0) {
      const Count c = model.Continue(p, v, r);
      if (rank < c) {
        chosen = v;
      } else {
        rank -= c;
      }
    }
    if (chosen < 0) {
      // rank < total guarantees a block of some larger value fits here.
      for (int w = v + 1; w <= model.base(); ++w) {
        const Count c = model.NewBlock(p, w);
        if (rank < c) {
          chosen = w;
          break;
        }
        rank -= c;
      }
    }
    walk->Set(model, p, chosen);
    r = walk->run[p];
    v = chosen;
  }
}

SpaceCount ToSpaceCount(Count total) {
  SpaceCount count;
  count.exceeds_uint64 = total >= kSaturated;
  count.value = count.exceeds_uint64 ? std::numeric_limits<uint64_t>::max()
                                     : static_cast<uint64_t>(total);
  return count;
}

absl::Status ValidateStart(const SpaceModel& model, uint64_t index) {
  if (Count(index) >= model.total()) {
    return absl::OutOfRangeError(
        absl::StrCat("index ", index, " is past the end of the space (",
                     ToSpaceCount(model.total()).ToString(), " schedules)"));
  }
  return absl::OkStatus();
}

// SpaceFingerprint identifies the set of schedules a spec describes (run
// bounds only matter when smoothness is on), FNV-1a over its fields.
uint64_t SpaceFingerprint(const SpaceSpec& spec) {
  const int fields[] = {spec.d_model,
                        spec.layers,
                        spec.base_heads,
                        spec.principles.smooth,
                        spec.principles.baseline,
                        spec.principles.pow2,
                        spec.principles.smooth ? spec.min_run : 0,
                        spec.principles.smooth ? spec.max_run : 0};
  uint64_t hash = 1469598103934665603ull;
  for (int field : fields) {
    for (int byte = 0; byte < 4; ++byte) {
      hash ^= static_cast<uint8_t>(static_cast<uint32_t>(field) >> (8 * byte));
      hash *= 1099511628211ull;
    }
  }
  return hash;
}

constexpr uint8_t kTokenVersion = 1;
constexpr size_t kTokenBytes = 17;  // version, index, fingerprint

std::string EncodePageToken(const SpaceSpec& spec, uint64_t index) {
  std::string raw(kTokenBytes, '\0');
  raw[0] = static_cast<char>(kTokenVersion);
  const uint64_t fingerprint = SpaceFingerprint(spec);
  for (int i = 0; i < 8; ++i) {
    raw[1 + i] = static_cast<char>(index >> (8 * i));
    raw[9 + i] = static_cast<char>(fingerprint >> (8 * i));
  }
  return absl::WebSafeBase64Escape(raw);
}

absl::StatusOr<uint64_t> DecodePageToken(const SpaceSpec& spec,
                                         absl::string_view token) {
  std::string raw;
  if (!absl::WebSafeBase64Unescape(token, &raw) || raw.size() != kTokenBytes ||
      static_cast<uint8_t>(raw[0]) != kTokenVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("page token '", token.substr(0, 64), "' is malformed"));
  }
  uint64_t index = 0;
  uint64_t fingerprint = 0;
  for (int i = 0; i < 8; ++i) {
    index |= uint64_t{static_cast<uint8_t>(raw[1 + i])} << (8 * i);
    fingerprint |= uint64_t{static_cast<uint8_t>(raw[9 + i])} << (8 * i);
  }
  if (fingerprint != SpaceFingerprint(spec)) {
    return absl::InvalidArgumentError(
        "page token belongs to a different space (d_model, layers, base "
        "heads, principles or run bounds differ)");
  }
  return index;
}

// UniformBelow returns a uniform draw from [0, bound) (bound >= 1) by
// rejection, so results do not depend on the standard library's
// distributions, which differ between implementations.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() -
      (std::numeric_limits<uint64_t>::max() % bound + 1) % bound;
  uint64_t draw;
  do {
    draw = rng();
  } while (draw > limit);
  return draw % bound;
}

}  // namespace

absl::Status ValidateSpace(const SpaceSpec& spec) {
  if (spec.d_model <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("d_model must be positive, got ", spec.d_model));
  }
  if (spec.layers <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("layers must be positive, got ", spec.layers));
  }
  if (spec.layers > kMaxLayers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layers must be at most ", kMaxLayers, ", got ", spec.layers));
  }
  if (spec.base_heads <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("base heads must be positive, got ", spec.base_heads));
  }
  if (spec.d_model % spec.base_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("base heads ", spec.base_heads, " do not divide d_model ",
                     spec.d_model));
  }
  if (spec.min_run < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_run must be at least 1, got ", spec.min_run));
  }
  if (spec.min_run > spec.max_run) {
    return absl::InvalidArgumentError(absl::StrCat(
        "min_run ", spec.min_run, " is greater than max_run ", spec.max_run));
  }
  return absl::OkStatus();
}

absl::Status CheckHardConstraints(const SpaceSpec& spec, const Schedule& s) {
  if (absl::Status valid = ValidateSpace(spec); !valid.ok()) return valid;
  if (s.layers() != spec.layers) {
    return absl::InvalidArgumentError(absl::StrCat("schedule has ", s.layers(),
                                                   " layers but the space has ",
                                                   spec.layers));
  }
  for (int l = 0; l < s.layers(); ++l) {
    const int h = s.heads(l);
    if (h <= 0 || spec.d_model % h != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer ", l + 1, ": ", h, " heads do not divide d_model ",
          spec.d_model, " (divisibility)"));
    }
    if (l > 0 && h < s.heads(l - 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer ", l + 1, ": ", h, " heads after ", s.heads(l - 1),
          " in layer ", l, " (monotonicity: heads must not decrease)"));
    }
  }
  if (s.heads().back() != spec.base_heads) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer ", s.layers(), ": ", s.heads().back(),
                     " heads, but the last layer must have the base ",
                     spec.base_heads, " heads (boundary convergence)"));
  }
  return absl::OkStatus();
}

bool SchedulePrinciples::Satisfies(Principle p) const {
  return PrincipleSet{smooth, baseline, pow2}.Has(p);
}

SchedulePrinciples ReportPrinciples(const SpaceSpec& spec, const Schedule& s) {
  SchedulePrinciples report;
  const int layers = s.layers();
  report.smooth = true;
  report.pow2 = true;
  int at_base = 0;
  for (int l = 0; l < layers; ++l) {
    const int h = s.heads(l);
    report.head_dims.push_back(h > 0 ? spec.d_model / h : 0);
    if (h <= 0 || spec.d_model % h != 0 || !IsPowerOfTwo(spec.d_model / h)) {
      report.pow2 = false;
    }
    if (h == spec.base_heads) ++at_base;
    if (l + 1 < layers && s.heads(l + 1) != h) {
      ++report.transitions;
      if (h > 0) {
        report.max_adjacent_ratio = std::max(
            report.max_adjacent_ratio, static_cast<double>(s.heads(l + 1)) / h);
      }
    }
  }
  for (int l = 0; l < layers;) {
    int end = l;
    while (end < layers && s.heads(end) == s.heads(l)) ++end;
    const int run = end - l;
    if (s.heads(l) != spec.base_heads &&
        (run < spec.min_run || run > spec.max_run)) {
      report.smooth = false;
    }
    l = end;
  }
  report.baseline = layers > 0 && at_base >= CeilHalf(layers);
  report.baseline_fraction =
      layers > 0 ? static_cast<double>(at_base) / layers : 0.0;
  return report;
}

bool InSpace(const SpaceSpec& spec, const Schedule& s) {
  if (!CheckHardConstraints(spec, s).ok()) return false;
  const SchedulePrinciples report = ReportPrinciples(spec, s);
  for (Principle p : kAllPrinciples) {
    if (spec.principles.Has(p) && !report.Satisfies(p)) return false;
  }
  return true;
}

std::string SpaceCount::ToString() const {
  if (exceeds_uint64) {
    return absl::StrCat("more than ", std::numeric_limits<uint64_t>::max());
  }
  return absl::StrCat(value);
}

absl::StatusOr<SpaceCount> CountSchedules(const SpaceSpec& spec) {
  if (absl::Status valid = ValidateSpace(spec); !valid.ok()) return valid;
  return ToSpaceCount(SpaceModel(spec, /*keep_rows=*/false).total());
}

// State holds the model, the current schedule and a table that makes every
// step of Next() a lookup: first_new[p * (base + 2) + w] is the smallest
// value index >= w that can start a block at layer p and still complete, or
// -1. With it Next() never walks into a dead end. It also skips the final
// base block, which has no larger choice, and never rewrites a layer that
// already holds the base, so a step costs the layers that really change plus
// forced smoothness runs: amortised O(min_run), not O(layers).
struct ScheduleEnumerator::State {
  explicit State(const SpaceSpec& spec)
      : model(spec, /*keep_rows=*/true), walk(spec.layers) {
    const int width = model.base() + 2;
    first_new.assign(static_cast<size_t>(model.layers()) * std::max(width, 0),
                     -1);
    for (int p = 0; p < model.layers() && !model.empty(); ++p) {
      int* row = &first_new[static_cast<size_t>(p) * width];
      for (int w = model.base(); w >= 0; --w) {
        row[w] = model.NewBlock(p, w) > 0 ? w : row[w + 1];
      }
    }
  }

  // Choice returns the smallest value index >= min_w that may follow the
  // layers before p and still complete, or -1.
  int Choice(int p, int min_w) const {
    if (p > 0) {
      const int v = walk.index[p - 1];
      if (min_w <= v) {
        if (model.Continue(p, v, walk.run[p - 1]) > 0) return v;
        min_w = v + 1;
      }
      if (v == model.base() || !model.CanEnd(walk.run[p - 1])) return -1;
    }
    return first_new[static_cast<size_t>(p) * (model.base() + 2) + min_w];
  }

  // Fill completes layers p.. with the smallest completion.
  void Fill(int p) {
    for (; p < model.layers(); ++p) {
      const int c = Choice(p, 0);
      if (c == model.base()) {
        FillBase(p);
        return;
      }
      walk.Set(model, p, c);
    }
  }

  // FillBase starts the base block at layer p. Layers from the previous
  // schedule's base block on already hold the base (the previous schedule
  // differs only after its own base start otherwise), so the loop stops
  // there. walk.run is left stale inside the base block: nothing reads a
  // base layer's run length.
  void FillBase(int p) {
    base_start = p;
    for (int q = p; q < model.layers() && walk.index[q] != model.base(); ++q) {
      walk.index[q] = model.base();
      walk.heads[q] = model.value(model.base());
    }
  }

  SpaceModel model;
  Walk walk;
  std::vector<int> first_new;
  int base_start = 0;  // first layer of the current schedule's base block
  uint64_t index = 0;
  bool started = false;  // Next() has produced the schedule at `index`
  bool done = false;
};

absl::StatusOr<ScheduleEnumerator> ScheduleEnumerator::Create(
    const SpaceSpec& spec, uint64_t start_index) {
  if (absl::Status valid = ValidateSpace(spec); !valid.ok()) return valid;
  auto state = std::make_unique<State>(spec);
  const Count total = state->model.total();
  if (Count(start_index) > total) {
    return ValidateStart(state->model, start_index);
  }
  state->index = start_index;
  if (Count(start_index) == total) {
    state->done = true;
  } else {
    UnrankInto(state->model, start_index, &state->walk);
    const std::vector<int>& index = state->walk.index;
    state->base_start = static_cast<int>(
        std::find(index.begin(), index.end(), state->model.base()) -
        index.begin());
  }
  return ScheduleEnumerator(std::move(state));
}

ScheduleEnumerator::ScheduleEnumerator(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
ScheduleEnumerator::ScheduleEnumerator(ScheduleEnumerator&&) noexcept = default;
ScheduleEnumerator& ScheduleEnumerator::operator=(
    ScheduleEnumerator&&) noexcept = default;
ScheduleEnumerator::~ScheduleEnumerator() = default;

bool ScheduleEnumerator::Next() {
  State& s = *state_;
  if (s.done) return false;
  if (!s.started) {
    s.started = true;
    return true;
  }
  // Layers from the base block on have no larger choice.
  for (int p = s.base_start - 1; p >= 0; --p) {
    const int c = s.Choice(p, s.walk.index[p] + 1);
    if (c < 0) continue;
    if (c == s.model.base()) {
      s.FillBase(p);
    } else {
      s.walk.Set(s.model, p, c);
      s.Fill(p + 1);
    }
    ++s.index;
    return true;
  }
  s.done = true;
  return false;
}

const std::vector<int>& ScheduleEnumerator::heads() const {
  return state_->walk.heads;
}

uint64_t ScheduleEnumerator::index() const { return state_->index; }

absl::StatusOr<Schedule> UnrankSchedule(const SpaceSpec& spec, uint64_t index) {
  if (absl::Status valid = ValidateSpace(spec); !valid.ok()) return valid;
  const SpaceModel model(spec, /*keep_rows=*/true);
  if (absl::Status in_range = ValidateStart(model, index); !in_range.ok()) {
    return in_range;
  }
  Walk walk(spec.layers);
  UnrankInto(model, index, &walk);
  return Schedule(std::move(walk.heads));
}

absl::StatusOr<uint64_t> RankSchedule(const SpaceSpec& spec,
                                      const Schedule& s) {
  if (absl::Status valid = ValidateSpace(spec); !valid.ok()) return valid;
  if (!InSpace(spec, s)) {
    return absl::NotFoundError(
        absl::StrCat("schedule '", s.ToString(), "' is not in the space"));
  }
  const SpaceModel model(spec, /*keep_rows=*/true);
  const std::vector<int>& values = model.values();
  Count rank = 0;
  int v = -1;
  int r = 0;
  for (int p = 0; p < s.layers(); ++p) {
    const int chosen = static_cast<int>(
        std::lower_bound(values.begin(), values.end(), s.heads(p)) -
        values.begin());
    if (v >= 0 && chosen != v) rank += model.Continue(p, v, r);
    for (int w = v + 1; w < chosen; ++w) rank += model.NewBlock(p, w);
    r = chosen == v ? r + 1 : 1;
    v = chosen;
    if (v == model.base()) break;
  }
  if (rank >= kSaturated) {
    return absl::OutOfRangeError(
        absl::StrCat("schedule '", s.ToString(),
                     "' has a rank beyond 2^64-1 in this space"));
  }
  return static_cast<uint64_t>(rank);
}

absl::StatusOr<SchedulePage> ListSchedules(const SpaceSpec& spec, int page_size,
                                           absl::string_view page_token) {
  if (absl::Status valid = ValidateSpace(spec); !valid.ok()) return valid;
  if (page_size < 1 || page_size > kMaxPageSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page size must be between 1 and ", kMaxPageSize, ", got ", page_size));
  }
  uint64_t start = 0;
  if (!page_token.empty()) {
    absl::StatusOr<uint64_t> decoded = DecodePageToken(spec, page_token);
    if (!decoded.ok()) return decoded.status();
    start = *decoded;
  }
  absl::StatusOr<ScheduleEnumerator> e =
      ScheduleEnumerator::Create(spec, start);
  if (!e.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page token is past the end of the space: ", e.status().message()));
  }
  SchedulePage page;
  while (static_cast<int>(page.schedules.size()) < page_size && e->Next()) {
    page.schedules.emplace_back(e->heads());
  }
  if (static_cast<int>(page.schedules.size()) == page_size && e->Next()) {
    page.next_page_token = EncodePageToken(spec, e->index());
  }
  return page;
}

absl::StatusOr<std::vector<Schedule>> SampleSchedules(const SpaceSpec& spec,
                                                      int n, uint64_t seed) {
  if (absl::Status valid = ValidateSpace(spec); !valid.ok()) return valid;
  if (n < 0 || n > kMaxSampleSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sample size must be between 0 and ", kMaxSampleSize, ", got ", n));
  }
  const SpaceModel model(spec, /*keep_rows=*/true);
  const Count total = model.total();
  if (total >= kSaturated) {
    return absl::InvalidArgumentError(
        "space has more than 2^64-1 schedules; uniform sampling needs a "
        "smaller space (fewer layers or a principle filter)");
  }
  std::vector<Schedule> out;
  if (Count(n) >= total) {
    // Every schedule is drawn: stream them instead of unranking each.
    absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(spec);
    if (!e.ok()) return e.status();
    while (e->Next()) out.emplace_back(e->heads());
    return out;
  }
  // Floyd's algorithm: n distinct indices from [0, total) in n draws.
  const uint64_t count = static_cast<uint64_t>(total);
  std::mt19937_64 rng(seed);
  std::unordered_set<uint64_t> chosen;
  chosen.reserve(static_cast<size_t>(n) * 2);
  std::vector<uint64_t> indices;
  indices.reserve(n);
  for (uint64_t j = count - n; j < count; ++j) {
    const uint64_t t = UniformBelow(rng, j + 1);
    const uint64_t pick = chosen.count(t) ? j : t;
    chosen.insert(pick);
    indices.push_back(pick);
  }
  std::sort(indices.begin(), indices.end());
  Walk walk(spec.layers);
  out.reserve(n);
  for (uint64_t index : indices) {
    UnrankInto(model, index, &walk);
    out.emplace_back(walk.heads);
  }
  return out;
}

std::vector<Schedule> ShuffleSchedules(std::vector<Schedule> schedules,
                                       uint64_t seed) {
  // A stream of its own, so the order is not the sample's draws again.
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  for (size_t i = schedules.size(); i > 1; --i) {
    const uint64_t j = UniformBelow(rng, i);
    std::swap(schedules[i - 1], schedules[j]);
  }
  return schedules;
}

}  // namespace prism
