// Schedule space, ranking and suggestion benchmarks (Google Benchmark). Results
// and the exact command are recorded in bench/RESULTS.md, section "Schedule
// space".
//
//   ninja -C build schedule_space_bench
//   build/bench/schedule_space_bench --benchmark_min_time=1
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/space/space.h"
#include "scheduler/strategy/suggest.h"

namespace prism {
namespace {

SpaceSpec Space(int d_model, int layers, int base_heads, bool principles) {
  SpaceSpec spec;
  spec.d_model = d_model;
  spec.layers = layers;
  spec.base_heads = base_heads;
  if (principles) spec.principles = PrincipleSet::All();
  return spec;
}

// Args: d_model, layers, base heads, principles (0 none, 1 all).
void BM_Count(benchmark::State& state) {
  const SpaceSpec spec =
      Space(state.range(0), state.range(1), state.range(2), state.range(3));
  uint64_t count = 0;
  for (auto _ : state) {
    count = CountSchedules(spec)->value;
    benchmark::DoNotOptimize(count);
  }
  state.counters["schedules"] = static_cast<double>(count);
}
BENCHMARK(BM_Count)
    ->Args({768, 12, 12, 0})
    ->Args({1280, 36, 20, 0})
    ->Args({12288, 96, 96, 0})
    ->Args({12288, 96, 96, 1})
    ->Args({1280, 36, 20, 1})
    ->Unit(benchmark::kMicrosecond);

// Streams the whole space once per iteration. Args: d_model, layers, base
// heads, principle mask (1 smooth, 2 baseline, 4 pow2).
void BM_Enumerate(benchmark::State& state) {
  SpaceSpec spec = Space(state.range(0), state.range(1), state.range(2), false);
  spec.principles.smooth = state.range(3) & 1;
  spec.principles.baseline = state.range(3) & 2;
  spec.principles.pow2 = state.range(3) & 4;
  uint64_t total = 0;
  for (auto _ : state) {
    ScheduleEnumerator e = *ScheduleEnumerator::Create(spec);
    uint64_t checksum = 0;
    while (e.Next()) checksum += e.heads()[0];
    benchmark::DoNotOptimize(checksum);
    total += e.index() + 1;
  }
  state.SetItemsProcessed(static_cast<int64_t>(total));
  state.counters["schedules"] =
      static_cast<double>(CountSchedules(spec)->value);
}
BENCHMARK(BM_Enumerate)
    ->Args({768, 12, 12, 0})
    ->Args({1280, 36, 20, 0})
    ->Args({768, 12, 12, 1})
    ->Args({1280, 36, 20, 1})
    ->Args({1280, 36, 20, 2})
    ->Args({1280, 36, 20, 7})
    ->Args({12288, 96, 96, 1})
    ->Args({12288, 96, 96, 7})
    ->Unit(benchmark::kMillisecond);

// Unranks uniformly random indices of a space too large to enumerate.
void BM_Unrank(benchmark::State& state) {
  const SpaceSpec spec = Space(12288, 96, 96, false);
  const uint64_t count = CountSchedules(spec)->value;
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(UnrankSchedule(spec, rng() % count));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Unrank);

void BM_Sample(benchmark::State& state) {
  const SpaceSpec spec = Space(12288, 96, 96, false);
  uint64_t seed = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(SampleSchedules(spec, state.range(0), ++seed));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Sample)->Arg(1000)->Unit(benchmark::kMillisecond);

// 10,000 finished trials: 2,500 schedules (the baseline among them) x 4
// seeds, each with `points` val points.
std::vector<TrialOutcome> SyntheticTrials(int points) {
  const SpaceSpec spec = Space(768, 12, 12, false);
  std::vector<TrialOutcome> trials;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(-0.02, 0.02);
  ScheduleEnumerator e = *ScheduleEnumerator::Create(spec, 12376 - 2500);
  int64_t id = 0;
  while (e.Next()) {
    const std::string schedule = Schedule(e.heads()).ToString();
    for (int seed = 0; seed < 4; ++seed) {
      TrialOutcome t;
      t.trial_id = ++id;
      t.schedule = schedule;
      t.seed = seed;
      t.is_baseline = schedule == "12x12";
      t.tokens_per_second = 50000 + 1000 * noise(rng);
      for (int i = 0; i < points; ++i) {
        t.val_steps.push_back(10 * (i + 1));
        t.val_losses.push_back(3.3 + 8.0 / (i + 1) + noise(rng));
      }
      t.final_val_loss = t.val_losses.back();
      t.min_val_loss = t.final_val_loss;
      t.attention_distance.assign(12, 100 + noise(rng));
      trials.push_back(std::move(t));
    }
  }
  return trials;
}

void BM_RankSchedules(benchmark::State& state) {
  const std::vector<TrialOutcome> trials = SyntheticTrials(state.range(0));
  const SpaceSpec spec = Space(768, 12, 12, false);
  for (auto _ : state) {
    benchmark::DoNotOptimize(RankSchedules(spec, "12x12", trials));
  }
  state.counters["trials"] = static_cast<double>(trials.size());
}
BENCHMARK(BM_RankSchedules)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

// One Suggest: fit the surrogate on `observed` schedules x 3 seeds of the
// 768/12/12 space (deltas linear in the features plus noise) and score the
// untried rest, every one of the 12,376, or (Args {-1}) draw and score 4,096
// of the 1536/24/24 space's 7.9 million. Args: observed schedules.
void BM_Suggest(benchmark::State& state) {
  const bool huge = state.range(0) < 0;
  const int observed = huge ? 40 : static_cast<int>(state.range(0));
  const SpaceSpec spec =
      huge ? Space(1536, 24, 24, false) : Space(768, 12, 12, false);
  const std::string baseline =
      Schedule::Uniform(spec.base_heads, spec.layers).ToString();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(-0.002, 0.002);
  std::vector<TrialOutcome> trials;
  std::set<std::string> tried = {baseline};
  int64_t id = 0;
  const std::vector<Schedule> sample = *SampleSchedules(spec, observed, 3);
  for (const Schedule& s : sample) {
    const std::vector<double> f =
        ScheduleFeatures(spec.d_model, spec.base_heads, s);
    tried.insert(s.ToString());
    for (int seed = 0; seed < 3; ++seed) {
      for (const bool is_baseline : {true, false}) {
        TrialOutcome t;
        t.trial_id = ++id;
        t.schedule = is_baseline ? baseline : s.ToString();
        t.seed = seed;
        t.is_baseline = is_baseline;
        t.final_val_loss = 3.3 +
                           (is_baseline ? 0.0 : 0.01 * (f.back() - f[0] / 8)) +
                           noise(rng);
        trials.push_back(std::move(t));
      }
    }
  }
  const Ranking ranking = RankSchedules(spec, baseline, trials);
  size_t scored = 0;
  for (auto _ : state) {
    absl::StatusOr<SuggestionSet> s =
        SuggestSchedules(spec, ranking, tried, 10, 1);
    scored = s->pool.schedules.size();
    benchmark::DoNotOptimize(s);
  }
  state.counters["candidates"] = static_cast<double>(scored);
}
BENCHMARK(BM_Suggest)
    ->Arg(10)
    ->Arg(40)
    ->Arg(200)
    ->Arg(-1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace prism

BENCHMARK_MAIN();
