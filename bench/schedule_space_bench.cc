// Schedule space and ranking benchmarks (Google Benchmark). Results and the
// exact command are recorded in bench/RESULTS.md, section "Schedule space".
//
//   ninja -C build schedule_space_bench
//   build/bench/schedule_space_bench --benchmark_min_time=1
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "scheduler/ranking.h"
#include "scheduler/space.h"

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

}  // namespace
}  // namespace prism

BENCHMARK_MAIN();
