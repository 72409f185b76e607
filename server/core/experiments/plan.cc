#include "server/core/experiments/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/data_roots.h"
#include "base/status_macros.h"
#include "model/data.h"
#include "scheduler/space/presets.h"
#include "scheduler/strategy/asha.h"
#include "scheduler/strategy/racing.h"
#include "scheduler/strategy/screening.h"
#include "server/core/experiments/spec.h"
#include "server/core/infra/convert.h"

namespace prism::server {
namespace {

namespace fs = std::filesystem;

// --- the known-truth figures (bench/RESULTS.md) ------------------------------
// Adaptive seeds min 3, max 6 gave a schedule 5.49 seeds on average where a
// fifth of the schedules were better ("3 sd on 20%"), 6.00 on a null: 83% of
// the way from min to max.
constexpr double kSeedsPolicyFill = (5.49 - 3.0) / (6.0 - 3.0);
// Racing spent this share of its 10% budget after each search: the grid
// 109.1% - 100%, ASHA 47.2% - 38.7%, guided screening 36.6% - 28.8%.
constexpr double kRacingFillAfterGrid = 0.091 / 0.1;
constexpr double kRacingFillAfterAsha = 0.085 / 0.1;
constexpr double kRacingFillAfterScreening = 0.078 / 0.1;
// Guided screening's default (grid_fraction 0.3) trained 28.8% of the grid's
// steps on every structure.
constexpr double kScreeningMeasuredShare = 0.288;
constexpr double kScreeningMeasuredFraction = 0.3;

// --- the assumed throughput table (docs/search.md) ---------------------------
// CPU: the `small` preset on 2 threads trained 3,899 tokens/s at 81.7% of a
// 212.7 GFLOP/s matmul peak (bench/RESULTS.md, "End to end: small preset"):
// 87 GFLOP/s of training per thread, counted as the trainer counts its MFU
// (3 x ForwardFlopsPerToken).
constexpr double kCpuFlopsPerThread = 87e9;
// GPU: an A100's 312 TFLOP/s bf16 dense peak at 40% MFU (llm.c's GPT-2 124M
// runs reach 40-50% on A100s).
constexpr double kA100PeakFlops = 312e12;
constexpr double kAssumedGpuMfu = 0.4;

std::string Percent(double share) {
  return absl::StrFormat("%.1f%%", 100.0 * share);
}

// --- steps: what the strategy trains -----------------------------------------

struct StepsEstimate {
  double expected = 0.0;
  double max = 0.0;
  std::string source;
};

// AshaSteps counts what successive halving trains when each rung promotes its
// quota max(1, floor(members / eta)): `schedules` (the baseline excluded) on
// the screen seeds to the first rung, the promoted on every seed onwards, the
// baseline the whole budget on every seed.
double AshaSteps(const AshaSettings& asha, int64_t schedules, int seeds,
                 int64_t steps) {
  const int screen = asha.first_rung_seeds.empty()
                         ? seeds
                         : static_cast<int>(asha.first_rung_seeds.size());
  std::vector<int64_t> targets = asha.rungs;
  targets.push_back(steps);
  double members = static_cast<double>(schedules);
  double total = members * screen * static_cast<double>(targets[0]);
  for (size_t k = 0; k + 1 < targets.size(); ++k) {
    const double promoted =
        members <= 0
            ? 0.0
            : std::max(1.0, std::floor(members / std::max(1, asha.eta)));
    const double further = static_cast<double>(targets[k + 1] - targets[k]);
    total += promoted * screen * further;
    if (k == 0) {
      total += promoted * (seeds - screen) * static_cast<double>(targets[1]);
    }
    members = promoted;
  }
  return total + static_cast<double>(seeds) * static_cast<double>(steps);
}

StepsEstimate AshaEstimate(const v1::ExperimentSpec& r, int64_t schedules) {
  const AshaSettings asha = AshaSettingsOf(r);
  const int seeds = r.seeds_size();
  const int64_t steps = r.budget().steps();
  const int64_t others = std::max<int64_t>(0, schedules - 1);
  StepsEstimate e;
  e.expected = AshaSteps(asha, others, seeds, steps);
  const std::string plan = absl::StrCat(
      "rungs ", absl::StrJoin(asha.rungs, ","), ", eta ", asha.eta,
      asha.first_rung_seeds.empty()
          ? std::string()
          : absl::StrCat(
                ", screened on ", asha.first_rung_seeds.size(),
                asha.first_rung_seeds.size() == 1 ? " seed" : " seeds"));
  if (asha.mode == AshaMode::kAsynchronous) {
    // The published rule may promote every schedule
    // (scheduler/strategy/asha.h).
    e.max = static_cast<double>(schedules) * seeds * steps;
    e.source = absl::StrCat("ASHA asynchronous (", plan,
                            "): expected counted at the synchronous quotas; "
                            "at most every schedule to the end");
  } else {
    e.max = e.expected;
    e.source = absl::StrCat("ASHA ", AshaModeName(asha.mode), " (", plan,
                            "): counted from its rungs' quotas");
  }
  return e;
}

// IsStagedDefault is whether a resolved ASHA spec runs the staged default
// plan the benchmark measured (scheduler/strategy/asha.h's DefaultAshaPlan on 3
// or more seeds) under a rule that keeps its quotas.
bool IsStagedDefault(const v1::ExperimentSpec& r) {
  const AshaSettings asha = AshaSettingsOf(r);
  const AshaPlan staged = DefaultAshaPlan(
      r.budget().steps(), r.budget().eval_every(), r.seeds_size());
  return r.seeds_size() >= kStagedMinSeeds &&
         asha.mode != AshaMode::kAsynchronous && asha.rungs == staged.rungs &&
         asha.eta == staged.eta &&
         static_cast<int>(asha.first_rung_seeds.size()) == staged.screen_seeds;
}

StepsEstimate ScreeningEstimate(const v1::ExperimentSpec& r,
                                double grid_steps) {
  const ScreeningSearch search = ScreeningSearchOf(r);
  const double fraction = search.grid_fraction;
  StepsEstimate e;
  // The first bracket always opens, whatever the fraction.
  const double floor_steps =
      ScreeningBracketCost(search, r.screening().bracket_size()) +
      static_cast<double>(search.seeds) * static_cast<double>(search.steps);
  e.max = std::max(fraction * grid_steps, floor_steps);
  e.expected =
      std::min(e.max, std::max(floor_steps, kScreeningMeasuredShare /
                                                kScreeningMeasuredFraction *
                                                fraction * grid_steps));
  e.source = absl::StrCat(
      "known-truth benchmark, guided screening default: ",
      Percent(kScreeningMeasuredShare),
      " of the grid's steps at grid_fraction 0.3 (bench/RESULTS.md, Racing "
      "for the best), scaled to grid_fraction ",
      absl::StrFormat("%g", fraction), "; at most grid_fraction");
  return e;
}

// AddRacing adds racing's expected and maximum steps to `e`: at most its
// budget's share of the grid's steps on the spec's seeds, and no schedule
// past max_seeds.
void AddRacing(const v1::ExperimentSpec& r, double grid_steps,
               int64_t schedules, double fill, const std::string& after,
               StepsEstimate* e) {
  const v1::RacingPolicy& racing = r.racing();
  const double by_budget = racing.budget() * grid_steps;
  const double by_seeds = static_cast<double>(schedules) *
                          std::max(0, racing.max_seeds() - r.seeds_size()) *
                          static_cast<double>(r.budget().steps());
  const double most = std::min(by_budget, by_seeds);
  e->max += most;
  e->expected += fill * most;
  absl::StrAppend(&e->source, "; racing (budget ",
                  absl::StrFormat("%g", racing.budget()), ", max_seeds ",
                  racing.max_seeds(), "): expected ", Percent(fill),
                  " of its budget, as the known-truth benchmark spent after ",
                  after, " (bench/RESULTS.md, Racing for the best)");
}

StepsEstimate SearchSteps(const v1::ExperimentSpec& r, int64_t trials,
                          int64_t schedules, double grid_steps) {
  const auto steps = static_cast<double>(r.budget().steps());
  const int seeds = r.seeds_size();
  StepsEstimate e;
  double racing_fill = kRacingFillAfterGrid;
  std::string racing_after = "the grid (109.1% - 100%)";
  switch (r.strategy()) {
    case v1::STRATEGY_ASHA:
      e = AshaEstimate(r, schedules);
      racing_fill = kRacingFillAfterAsha;
      racing_after = "ASHA (47.2% - 38.7%)";
      if (IsStagedDefault(r)) {
        absl::StrAppend(&e.source,
                        "; the known-truth benchmark measured the default "
                        "at 38.7% of the grid's steps on 3 seeds "
                        "(bench/RESULTS.md, Racing for the best)");
      }
      break;
    case v1::STRATEGY_GUIDED_SCREENING:
      e = ScreeningEstimate(r, grid_steps);
      racing_fill = kRacingFillAfterScreening;
      racing_after = "guided screening (36.6% - 28.8%)";
      break;
    case v1::STRATEGY_GUIDED: {
      const double space = grid_steps / std::max(1.0, seeds * steps);
      const double tried =
          std::min<double>(r.samples(), std::max(0.0, space - 1.0)) + 1.0;
      e.expected = e.max = tried * seeds * steps;
      e.source = absl::StrCat("guided: counted, ", r.samples(),
                              " schedules and the baseline on every seed");
      break;
    }
    default:
      if (r.has_seeds_policy()) {
        const v1::SeedsPolicy& p = r.seeds_policy();
        const double per = static_cast<double>(trials) / std::max(1, p.min());
        const double expected_seeds =
            p.min() + kSeedsPolicyFill * (p.max() - p.min());
        e.expected = per * expected_seeds * steps;
        e.max = per * p.max() * steps;
        e.source = absl::StrCat(
            "known-truth benchmark, adaptive seeds 3..6: 5.49 seeds a "
            "schedule (83% of the way from min to max; 6.00 on a null) "
            "(bench/RESULTS.md, Verdicts on known truth), here ",
            absl::StrFormat("%.2f", expected_seeds), " of ", p.max(),
            "; at most seeds_policy.max");
      } else {
        e.expected = e.max = static_cast<double>(trials) * steps;
        e.source = r.strategy() == v1::STRATEGY_RANDOM
                       ? "exact: every drawn schedule, every seed, whole budget"
                       : "exact: every trial trains the whole budget";
      }
  }
  if (RacingOn(r)) {
    AddRacing(r, grid_steps, schedules, racing_fill, racing_after, &e);
  }
  return e;
}

// --- the corpus --------------------------------------------------------------

struct CorpusSummary {
  int64_t tokens = 0;
  int max_token = -1;  // largest id in the sample; -1: none read
  bool byte_level = false;
  std::string unread;  // why it could not be read ("" when read)
  std::string sample;  // what was sampled, for the warnings
};

// ReadShard returns the token count of an llm.c shard, reading its
// header and at most `sample` tokens (their largest id into *max_token).
// It checks the magic alone: the workers check the rest when they open it.
absl::StatusOr<int64_t> ReadShard(const std::string& path, int64_t sample,
                                  int* max_token) {
  // Never opened unless a regular file: a FIFO would block the submit.
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat(
        path,
        ec || !fs::exists(path, ec) ? ": not found" : ": not a regular file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  int32_t header[model::kShardHeaderInts] = {};
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  if (in.gcount() != sizeof(header) || header[0] != model::kShardMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an llm.c token shard"));
  }
  const int64_t tokens = header[2];
  std::vector<uint16_t> buffer(
      static_cast<size_t>(std::min<int64_t>(sample, tokens)));
  if (!buffer.empty()) {
    in.read(reinterpret_cast<char*>(buffer.data()),
            static_cast<std::streamsize>(buffer.size() * 2));
    const auto got = static_cast<size_t>(in.gcount() / 2);
    for (size_t i = 0; i < got; ++i) {
      *max_token = std::max<int>(*max_token, buffer[i]);
    }
  }
  return tokens;
}

// TrainShards expands files and directories as the worker does
// (model/data.h's SplitShardPaths: a directory's *.bin files that are not
// IsValShardName), at most kCorpusMaxFiles. It does not call SplitShardPaths:
// that lists a whole directory and refuses what it cannot use, where the bill
// stops listing past its limit and reports an unreadable shard as a warning.
absl::StatusOr<std::vector<std::string>> TrainShards(
    const google::protobuf::RepeatedPtrField<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> in_dir;
      for (const fs::directory_entry& entry :
           fs::directory_iterator(path, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.path().extension() == ".bin" &&
            !model::IsValShardName(name)) {
          in_dir.push_back(entry.path().string());
          if (in_dir.size() > static_cast<size_t>(kCorpusMaxFiles)) break;
        }
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.push_back(path);
    }
    if (files.size() > static_cast<size_t>(kCorpusMaxFiles)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("more than ", kCorpusMaxFiles, " train shards"));
    }
  }
  return files;
}

CorpusSummary ReadCorpus(const v1::ExperimentSpec& r,
                         const PlanContext& context) {
  CorpusSummary c;
  if (r.data().train().empty()) {
    // The built-in demo corpus is byte-tokenized text (model/data.h).
    c.byte_level = true;
    c.max_token = 255;
    c.sample = "the built-in demo corpus (byte-level)";
    if (context.demo_corpus_train.empty()) {
      c.unread = "the demo corpus is not prepared here";
      return c;
    }
    int ignored = -1;
    absl::StatusOr<int64_t> tokens =
        ReadShard(context.demo_corpus_train, 0, &ignored);
    if (tokens.ok()) {
      c.tokens = *tokens;
    } else {
      c.unread = "the demo corpus is not prepared here";
    }
    return c;
  }
  absl::StatusOr<std::vector<std::string>> files =
      TrainShards(r.data().train());
  if (!files.ok()) {
    c.unread = std::string(files.status().message());
    return c;
  }
  int sampled = 0;
  for (size_t i = 0; i < files->size(); ++i) {
    const bool sample = static_cast<int>(i) < kCorpusSampleFiles;
    absl::StatusOr<int64_t> tokens =
        ReadShard((*files)[i], sample ? kCorpusSampleTokens : 0, &c.max_token);
    if (!tokens.ok()) {
      c.unread = std::string(tokens.status().message());
      c.tokens = 0;
      return c;
    }
    c.tokens += *tokens;
    if (sample) ++sampled;
  }
  c.sample = absl::StrCat("the first ", kCorpusSampleTokens, " tokens of ",
                          sampled, sampled == 1 ? " shard" : " shards");
  return c;
}

std::string Thousands(int64_t n) {
  std::string digits = absl::StrCat(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

void CorpusWarnings(const v1::ExperimentSpec& r, const CorpusSummary& c,
                    int64_t tokens_per_step, v1::PlanEstimate* out) {
  const int vocab = r.model().vocab_size();
  if (!c.unread.empty() && !c.byte_level) {
    out->add_warnings(absl::StrCat("train shards not read here (", c.unread,
                                   "): corpus size and vocabulary unchecked"));
  }
  if (c.max_token >= vocab) {
    out->add_warnings(absl::StrCat("the corpus has token id ", c.max_token,
                                   " but the vocabulary is ", Thousands(vocab),
                                   ": workers will refuse the shards"));
  } else if (c.max_token >= 0 && (c.max_token + 1) * 2 <= vocab) {
    const int64_t used = c.max_token + 1;
    const double unused =
        1.0 - static_cast<double>(used) / static_cast<double>(vocab);
    out->add_warnings(absl::StrCat(
        c.byte_level ? "the corpus is byte-level (token ids < 256)"
                     : absl::StrCat("the corpus's token ids stay below ",
                                    Thousands(used), " (", c.sample, ")"),
        " but the model's vocabulary is ", Thousands(vocab), ": ",
        Percent(unused), " of the embedding (", Thousands(vocab - used),
        " rows) is never trained; use a shape with vocab_size ",
        Thousands(used), " or shards tokenized for this vocabulary"));
  }
  if (c.tokens > 0) {
    const double epochs = static_cast<double>(r.budget().steps()) *
                          static_cast<double>(tokens_per_step) /
                          static_cast<double>(c.tokens);
    if (epochs > kMaxEpochsWithoutWarning) {
      out->add_warnings(absl::StrCat(
          "one trial reads ", absl::StrFormat("%.0f", epochs),
          " epochs of the corpus (", Thousands(c.tokens),
          " train tokens): past about 4 epochs repeated data trains less "
          "than new data; use more shards or fewer steps"));
    }
  }
}

// --- throughput --------------------------------------------------------------

// DeviceKind is "cuda" or "cpu" from a device string ("cpu (2 threads)",
// "cuda:0", "NVIDIA H100 ..."), "" when it says neither ("auto").
std::string DeviceKind(const std::string& device) {
  const std::string d = absl::AsciiStrToLower(device);
  if (absl::StartsWith(d, "cuda") || absl::StrContains(d, "nvidia")) {
    return "cuda";
  }
  if (absl::StartsWith(d, "cpu")) return "cpu";
  return "";
}

bool SameShape(const v1::ExperimentSpec& r,
               const storage::ThroughputSample& s) {
  const v1::ModelConfig& a = r.model();
  const v1::ModelConfig& b = s.model;
  return a.d_model() == b.d_model() && a.layers() == b.layers() &&
         a.base_heads() == b.base_heads() && a.context() == b.context() &&
         a.vocab_size() == b.vocab_size() && a.positions() == b.positions() &&
         r.budget().batch_size() == s.budget.batch_size();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Throughput MeasuredOrAssumed(const v1::ExperimentSpec& r,
                             const PlanContext& context) {
  std::set<std::string> live_kinds;
  std::vector<int> cpu_threads;
  for (const v1::Worker& w : context.live_workers) {
    const std::string kind = DeviceKind(w.device());
    if (!kind.empty()) live_kinds.insert(kind);
    if (kind != "cuda") cpu_threads.push_back(std::max(1, w.threads()));
  }
  std::vector<const storage::ThroughputSample*> shape;
  for (const storage::ThroughputSample& s : context.samples) {
    if (SameShape(r, s)) shape.push_back(&s);
  }
  // Prefer the trials that ran on the kind of device the live workers have.
  std::vector<const storage::ThroughputSample*> chosen;
  for (const storage::ThroughputSample* s : shape) {
    if (live_kinds.count(DeviceKind(s->device)) > 0) chosen.push_back(s);
  }
  if (chosen.empty()) chosen = shape;
  if (!chosen.empty()) {
    std::vector<double> tps;
    std::map<std::string, int> devices;
    for (const storage::ThroughputSample* s : chosen) {
      tps.push_back(s->tokens_per_second);
      ++devices[s->device.empty() ? "an unrecorded device" : s->device];
    }
    auto most = std::max_element(
        devices.begin(), devices.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    Throughput t;
    t.tokens_per_second = Median(tps);
    t.source = absl::StrCat(
        "measured: median of ", tps.size(),
        " finished trials of this model "
        "shape (batch ",
        r.budget().batch_size(), ") on ", most->first,
        devices.size() > 1
            ? absl::StrCat(" and ", devices.size() - 1, " more devices")
            : std::string());
    return t;
  }
  std::string kind;
  if (live_kinds.count("cuda") > 0) {
    kind = "cuda";
  } else if (live_kinds.count("cpu") > 0) {
    kind = "cpu";
  }
  const int threads = cpu_threads.empty()
                          ? 1
                          : static_cast<int>(Median(std::vector<double>(
                                cpu_threads.begin(), cpu_threads.end())));
  return AssumedThroughput(r, kind, threads);
}

// FillCosts sets everything but the counts, steps and shares.
void FillCosts(const v1::ExperimentSpec& r, const PlanContext& context,
               v1::PlanEstimate* out) {
  const ModelShape shape = ShapeForSpec(r);
  const v1::Budget& b = r.budget();
  const int64_t tokens_per_step =
      int64_t{b.batch_size()} * std::max(1, b.grad_accum()) * shape.context;
  out->set_tokens_per_step(tokens_per_step);
  out->set_tokens(out->steps() * static_cast<double>(tokens_per_step));
  out->set_max_tokens(out->max_steps() * static_cast<double>(tokens_per_step));
  const ParameterCounts counts = CountParameters(shape);
  out->set_parameters(counts.total);
  const int64_t embeddings = counts.total -
                             int64_t{shape.vocab_size} * shape.d_model -
                             (shape.positions == Positions::kLearned
                                  ? int64_t{shape.context} * shape.d_model
                                  : 0);
  out->set_flops_per_token(6.0 * static_cast<double>(embeddings) +
                           6.0 * shape.layers * shape.context * shape.d_model);
  out->set_flops(out->flops_per_token() * out->tokens());
  const Throughput t = MeasuredOrAssumed(r, context);
  out->set_tokens_per_second(t.tokens_per_second);
  out->set_throughput_source(t.source);
  if (t.tokens_per_second > 0) {
    out->set_worker_hours(out->tokens() / t.tokens_per_second / 3600.0);
    out->set_max_worker_hours(out->max_tokens() / t.tokens_per_second / 3600.0);
  }
  const CorpusSummary corpus = ReadCorpus(r, context);
  out->set_corpus_tokens(corpus.tokens);
  CorpusWarnings(r, corpus, tokens_per_step, out);
}

}  // namespace

Throughput AssumedThroughput(const v1::ExperimentSpec& resolved,
                             const std::string& device, int threads) {
  const ModelShape shape = ShapeForSpec(resolved);
  // The trainer's count (its MFU's): forward and backward, logits included.
  const double train_flops =
      3.0 * static_cast<double>(ForwardFlopsPerToken(shape));
  std::string kind = device;
  if (kind.empty()) {
    // The shape's intended device: the byte-level CPU presets, else a GPU.
    kind = shape.vocab_size <= 256 ? "cpu" : "cuda";
  }
  Throughput t;
  if (kind == "cpu") {
    t.tokens_per_second = kCpuFlopsPerThread * threads / train_flops;
    t.source =
        absl::StrCat("assumed: CPU, 87 GFLOP/s of training per thread x ",
                     threads, threads == 1 ? " thread" : " threads",
                     " (docs/search.md, What it costs before it runs)");
  } else {
    t.tokens_per_second = kA100PeakFlops * kAssumedGpuMfu / train_flops;
    t.source =
        "assumed: one A100 GPU, 312 TFLOP/s bf16 peak at 40% MFU "
        "(docs/search.md, What it costs before it runs)";
  }
  return t;
}

absl::StatusOr<PlanContext> LoadPlanContext(
    storage::ExperimentStore* experiments, storage::WorkerStore* workers) {
  PlanContext context;
  PRISM_ASSIGN_OR_RETURN(
      context.samples, experiments->ListThroughputSamples(kThroughputSamples));
  PRISM_ASSIGN_OR_RETURN(std::vector<v1::Worker> listed,
                         workers->ListWorkers());
  for (v1::Worker& w : listed) {
    if (w.state() != v1::WORKER_STOPPED && w.stopped_unix_ms() == 0) {
      context.live_workers.push_back(std::move(w));
    }
  }
  context.demo_corpus_train =
      (fs::path(DefaultDataRoot()) / "fortunes" / "train_000000.bin").string();
  return context;
}

v1::PlanEstimate EstimatePlan(const v1::ExperimentSpec& resolved,
                              int64_t trials, int64_t schedules,
                              const PlanContext& context) {
  v1::PlanEstimate out;
  const double grid_steps = GridStepsOf(resolved);
  const auto steps = static_cast<double>(resolved.budget().steps());
  out.set_schedules(grid_steps > 0 && steps > 0
                        ? std::llround(grid_steps / steps /
                                       std::max(1, resolved.seeds_size()))
                        : schedules);
  out.set_trials(trials);
  out.set_seeds(resolved.has_seeds_policy() ? resolved.seeds_policy().min()
                                            : resolved.seeds_size());
  const StepsEstimate e = SearchSteps(resolved, trials, schedules, grid_steps);
  out.set_steps(e.expected);
  out.set_max_steps(e.max);
  out.set_grid_steps(grid_steps);
  if (grid_steps > 0) {
    out.set_expected_share(e.expected / grid_steps);
    out.set_max_share(e.max / grid_steps);
  }
  out.set_share_source(e.source);
  FillCosts(resolved, context, &out);
  return out;
}

v1::PlanEstimate PlanTrials(const v1::ExperimentSpec& resolved, int64_t trials,
                            double steps, const PlanContext& context) {
  v1::PlanEstimate out;
  const double grid_steps = GridStepsOf(resolved);
  const auto budget = static_cast<double>(resolved.budget().steps());
  if (grid_steps > 0 && budget > 0) {
    out.set_schedules(
        std::llround(grid_steps / budget / std::max(1, resolved.seeds_size())));
  }
  out.set_trials(trials);
  out.set_seeds(resolved.seeds_size());
  out.set_steps(steps);
  out.set_max_steps(steps);
  out.set_grid_steps(grid_steps);
  if (grid_steps > 0) {
    out.set_expected_share(steps / grid_steps);
    out.set_max_share(steps / grid_steps);
  }
  out.set_share_source("exact: the trials added, each to its target steps");
  FillCosts(resolved, context, &out);
  return out;
}

}  // namespace prism::server
