// The bill: what a resolved spec costs before it runs (v1::PlanEstimate on
// SubmitResponse and ExtendResponse). Counts are exact where the strategy
// fixes them (a grid, a list, random draws, guided's schedule budget,
// synchronous ASHA's quotas); an adaptive strategy's expected steps come from
// the known-truth benchmark (bench/RESULTS.md, named in share_source) and its
// maximum from its own limits. Worker-hours divide the tokens by a
// throughput that is measured (the median tokens/s of stored finished trials
// of the same model shape and batch, on the devices of live workers when
// any ran it) or assumed from the table in docs/search.md ("What it costs
// before it runs"). The corpus is read only as far as its shard headers and a
// bounded sample of tokens (kCorpusSampleTokens from each of the first
// kCorpusSampleFiles shards), never whole.
//
//   PRISM_ASSIGN_OR_RETURN(PlanContext context, LoadPlanContext(store, store));
//   v1::PlanEstimate bill = EstimatePlan(plan.spec, trials, schedules,
//                                        context);
//
// Thread-safety: pure functions over their arguments, except that
// LoadPlanContext reads the store and EstimatePlan/PlanTrials read shard
// headers from the filesystem.
#ifndef PRISM_SERVER_CORE_EXPERIMENTS_PLAN_H_
#define PRISM_SERVER_CORE_EXPERIMENTS_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prism/v1/prism.pb.h"
#include "storage/experiment_store.h"
#include "storage/worker_store.h"

namespace prism::server {

// How many stored trials a plan's measured throughput is drawn from, newest
// first.
inline constexpr int kThroughputSamples = 2000;
// The corpus read at plan time: every shard's 1 KiB header (at most
// kCorpusMaxFiles shards), and the first kCorpusSampleTokens tokens of each
// of the first kCorpusSampleFiles shards for the largest token id.
inline constexpr int kCorpusMaxFiles = 1024;
inline constexpr int kCorpusSampleFiles = 8;
inline constexpr int64_t kCorpusSampleTokens = 32768;
// Above this many passes over the corpus in one trial, the plan warns
// (Muennighoff et al. 2023: up to about 4 epochs of repeated data train
// almost as well as unique data; beyond it returns fall).
inline constexpr double kMaxEpochsWithoutWarning = 4.0;

// PlanContext is what the coordinator knows beside the spec.
struct PlanContext {
  // Completed trials' tokens/s with their experiments' model and budget,
  // newest first (Store::ListThroughputSamples).
  std::vector<storage::ThroughputSample> samples;
  // Registered workers that have not stopped.
  std::vector<v1::Worker> live_workers;
  // Where the built-in demo corpus's train shard would be
  // (<DefaultDataRoot()>/fortunes/train_000000.bin); "" leaves its size
  // unknown (it is byte-level whatever its size).
  std::string demo_corpus_train;
};

// LoadPlanContext reads the throughput samples (at most kThroughputSamples)
// from `experiments` and the live workers from `workers`; the store's
// errors.
absl::StatusOr<PlanContext> LoadPlanContext(
    storage::ExperimentStore* experiments, storage::WorkerStore* workers);

// EstimatePlan is the bill of a resolved spec (PlanExperiment's plan.spec)
// whose submit queues `trials` trials over `schedules` distinct schedules
// (the baseline included).
v1::PlanEstimate EstimatePlan(const v1::ExperimentSpec& resolved,
                              int64_t trials, int64_t schedules,
                              const PlanContext& context);

// PlanTrials is the bill of `trials` new trials of a resolved spec that train
// `steps` steps in all (an Extend's added seeds or schedules): exact steps
// (expected = max), shares of the spec's grid, and the same tokens,
// FLOPs, throughput, worker-hours and corpus warnings as EstimatePlan.
v1::PlanEstimate PlanTrials(const v1::ExperimentSpec& resolved, int64_t trials,
                            double steps, const PlanContext& context);

// AssumedThroughput is the stated table's tokens/s for `resolved`'s model on
// a worker of `device` ("cpu", "cuda", or "" for the shape's intended
// device) with `threads` training threads (CPU), and the row's description.
struct Throughput {
  double tokens_per_second = 0.0;
  std::string source;
};
Throughput AssumedThroughput(const v1::ExperimentSpec& resolved,
                             const std::string& device, int threads);

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_EXPERIMENTS_PLAN_H_
