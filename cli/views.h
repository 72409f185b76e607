// Views: how the RPC responses print. One place turns experiments, trials,
// workers and rankings into cli/output.h Tables (text or CSV) or into the
// protobuf JSON mapping, so `prism status`, `prism results` and `prism run`
// show the same columns.
//
//   PrintRanking(response, Format::kText, std::cout);
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_H_
#define PRISM_CLI_VIEWS_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/output.h"
#include "google/protobuf/message.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// ProtoJson returns the protobuf JSON mapping of `message` (field names in
// lowerCamelCase, enums by name), pretty-printed, ending in a newline.
std::string ProtoJson(const google::protobuf::Message& message);

// PrincipleFlags returns the satisfied principles ("smooth,baseline,pow2"),
// or "none".
std::string PrincipleFlags(const v1::PrincipleReport& report);

// MfuText returns "MFU 79.1% of 90.0 GFLOP/s"; when the trial's model
// FLOP/s beat the measured matmul peak, "MFU 100.0% (46.0 GFLOP/s achieved,
// above the 13.0 GFLOP/s matmul measured)"; "MFU not measured" without one.
std::string MfuText(const v1::TrialMetrics& metrics);

// ExperimentsTable: id, name, owner, state, priority, per-state counts,
// progress, and a waiting experiment's queue position and reason (wide: CSV
// and `prism status --wide`).
Table ExperimentsTable(const v1::ListExperimentsResponse& response);
// NarrowExperimentsTable fits 100 columns for names up to 28 characters
// (longer ones are cut with "..."): id, name, owner, state, pri,
// done/total, running, queued, failed, progress, pos. The queue reasons go
// below it (WaitingLines).
Table NarrowExperimentsTable(const v1::ListExperimentsResponse& response);
// WaitingLines is "waiting: experiment 3 (position 1): REASON" per waiting
// experiment, wrapped at 100 columns; "" when none waits.
std::string WaitingLines(const v1::ListExperimentsResponse& response);
// TrialsTable: id, schedule, seed, baseline, state, attempt, step, losses,
// worker.
Table TrialsTable(const v1::ListTrialsResponse& response);
// WorkersTable: id, host, device, threads, state, trial, heartbeat age,
// tokens/s, user.
Table WorkersTable(const v1::ListWorkersResponse& response, int64_t now_ms);

// kGoneWorkerShownMs: how long `prism workers` keeps listing a worker after
// it stopped (its Deregister) or was lost (its last heartbeat); --all lists
// every one. A fleet whose workers come and go would otherwise list every
// worker it ever had.
inline constexpr int64_t kGoneWorkerShownMs = int64_t{3600} * 1000;

// DropGoneWorkers removes the workers stopped or lost more than
// kGoneWorkerShownMs before now_ms and returns how many it removed.
int DropGoneWorkers(v1::ListWorkersResponse* response, int64_t now_ms);
// TokensTable: id, user, role, state (active, expired or revoked at now_ms),
// created, expires, last used and revoked times (UTC, ISO 8601; empty for
// never).
Table TokensTable(const v1::ListTokensResponse& response, int64_t now_ms);
// RankingTable: rank, schedule, principles, val loss mean and 95% CI
// half-width, paired delta vs baseline and CI, verdict and Holm-adjusted p,
// speed-up, tokens/s ratio, seeds completed, paired, diverged and failed.
// In text the speed-up reads "1.12 [1.03,1.21] 3/4" (mean, 95% CI, m of n
// paired seeds reached) and the tokens/s ratio "0.98 [0.95,1.01] 3/3 worker"
// (mean, CI, pairs used of all, pairing); in CSV they are the means, with
// their bounds, counts, pairing and hardware in columns at the end.
// Text without `wide` is the narrow default view (under 100 columns): rank,
// schedule, delta, ci95, the adjusted interval, verdict, seeds to settle,
// best-set mark, speed-up, tokens/s ratio, paired/completed seeds. Wide text
// and CSV add adj_ci95, to_settle and best_set after the columns above (and
// CSV the raw numbers at the end).
Table RankingTable(const v1::RankResponse& response,
                   Format format = Format::kText, bool wide = false);
// PointsTable: the curve of one trial.
Table PointsTable(const v1::GetTrialResponse& response);

// MissingValuesNote says why ranking cells are "-" ("speedup - = never
// reached the baseline's final val loss; ci95, adj_p - = fewer than 2
// (paired) seeds"), naming only the columns that have one; "" when none does.
// `wide` names the columns of the --wide view, else the default view's.
std::string MissingValuesNote(const v1::RankResponse& response,
                              bool wide = true);
// RatioMethod states how the speedup and tps_ratio cells are computed, then
// a line per distinct hardware combination of unpaired tokens/s ratios.
std::string RatioMethod(const v1::RankResponse& response);
// VerdictMethod states how verdicts are reached: the method the coordinator
// used (moderated t with its prior, or paired t and why), the family, alpha
// and its size, what the words mean, and the planned looks when seeds are
// adaptive.
std::string VerdictMethod(const v1::RankResponse& response);

// BestSetLine names the best-set (at most `most` schedules, then "and N
// more"), or says it needs 2 paired seeds.
std::string BestSetLine(const v1::RankResponse& response, size_t most);

// SeedsCommand returns the one command that trains the experiment's ranked
// schedules on `n` seeds in all, reusing every trial it has.
using SeedsCommand = std::function<std::string(int n)>;

// SeedsAddCommand is the default SeedsCommand: "prism seeds add ID --to N".
SeedsCommand SeedsAddCommand(int64_t experiment_id);

// SeedLimit is the most seeds a schedule of the experiment may have:
// seeds_policy.max, racing's max_seeds, or 64 (what Extend enforces).
int SeedLimit(const v1::ExperimentSpec& spec);

// SummaryLines are the ranking's closing lines: the verdict counts, the
// best-set and the next step. A next step that more seeds take is one
// command, from `more_seeds` (SeedsAddCommand of the ranked experiment when
// empty), on a line of its own after "\n  ", and within SeedLimit; when no
// seed count within it would settle the best-set, the line says it is a
// tie at this size instead.
std::vector<std::string> SummaryLines(const v1::RankResponse& response,
                                      const SeedsCommand& more_seeds = {});

// PrincipleEffectsTable: per principle, the schedules that satisfy and
// violate it, the effect of violating it with its 95% CI half-width and p,
// the plain mean deltas, and a note: "12 schedules, 9 dof" or "not estimable
// (nothing violates it)".
// Without `wide`, the plain means (mean_delta_*) are left out.
Table PrincipleEffectsTable(const v1::RankResponse& response, bool wide = true);
// PrincipleEffectNote is that note; "" from a coordinator that sends no
// status.
std::string PrincipleEffectNote(const v1::PrincipleEffect& effect);
// PrincipleMethod is the one line that states how the effects are estimated.
std::string PrincipleMethod(bool wide = true);

// SearchCostLine returns "steps trained: 1200 of the grid's 8000 (15.0%)",
// or "" when the experiment's grid could not be counted (grid_steps 0).
//
// (HeadroomLine, below, is the submit's word on the limits.)
std::string SearchCostLine(const v1::Experiment& e);
// AshaRungLine returns one rung's count, e.g. "rung 60: promoted 3 / quota 3
// / reached 9 of 9 members (complete)".
std::string AshaRungLine(const v1::AshaRung& rung);

// AshaRungsTable: per ASHA rung and schedule that reached it (best first),
// its score, whether that is a paired delta or a raw val loss, its seeds and
// whether it went on.
Table AshaRungsTable(const v1::RankResponse& response);

// PrintRanking prints a Rank response: in text the table and the note on its
// missing values, then the baseline, the verdict method, the principle
// effects and their method, the search's cost, an ASHA experiment's rungs
// (a count line per rung, then the table) and the summary lines; in CSV the
// table only; in JSON the response.
// RankingView: `wide` prints every column and the ratio method; more_seeds
// is SummaryLines' rerun command.
struct RankingView {
  bool wide = false;
  SeedsCommand more_seeds;  // empty: SeedsAddCommand
};

void PrintRanking(const v1::RankResponse& response, Format format,
                  std::ostream& out, const RankingView& view = {});

// CompareTable: one row, a and b, their common seeds, the paired delta
// b - a with its 95% CI half-width, b's verdict against a and its p-value.
Table CompareTable(const v1::CompareResponse& response);
// CompareMethod is the line that states how the compare verdict is reached.
std::string CompareMethod();
// PrintCompare prints a Compare response: in text the table, a note on
// missing values and the method; in CSV the table; in JSON the response.
void PrintCompare(const v1::CompareResponse& response, Format format,
                  std::ostream& out);

// SuggestionsTable: rank, schedule, principles, predicted delta vs the
// baseline, its uncertainty (sd) and the lower confidence bound.
Table SuggestionsTable(const v1::SuggestResponse& response);
// PrintSuggestions prints a Suggest response: in text the table, what its
// columns mean and the method line; in CSV the table; in JSON the response.
// PrintLadder prints a ladder's transfer: per pair of consecutive rungs,
// Spearman and Kendall with their bootstrap intervals, the schedules
// matched and whether the small best-set holds the large best (text within
// 100 columns, CSV one row per pair); JSON is the response's JSON mapping.
void PrintLadder(const v1::LadderTransferResponse& response, Format format,
                 std::ostream& out);

void PrintSuggestions(const v1::SuggestResponse& response, Format format,
                      std::ostream& out);

// HeadroomLine says, wrapped to 100 columns, where a submit leaves its user
// against each limit: "limits: 39 of 20000 trials per experiment; queued
// 39 of 20000; active 1 of 20; spec 2.1 KiB of 1024.0 KiB" ("no limit" where
// none holds).
std::string HeadroomLine(const v1::Headroom& headroom);

// PlanBlock is `prism plan`'s bill (server/core/plan.h), lines within 100
// columns: schedules, trials, steps expected and at most with their share of
// the grid's and its source, tokens, parameters, FLOPs, worker-hours with
// the throughput and where it comes from, the corpus, then each warning.
std::string PlanBlock(const v1::PlanEstimate& plan);
// PlanLine is the bill in one line (wrapped past 100 columns), as a real
// submit prints it: "bill: 195,000 steps (100.0% of the grid's), 102.2G
// tokens, 195 worker-hours (assumed)", the expected share's maximum when
// higher, and the warnings' count (`prism plan` shows them, and the FLOPs).
std::string PlanLine(const v1::PlanEstimate& plan);
// Thousands renders 195000 as "195,000".
std::string Thousands(double value);
// Scaled renders 1.02e11 as "102.2G" (k, M, G, T, P).
std::string Scaled(double value);
// ExtensionLine says what an Extend queued (or, with `dry_run`, would queue)
// and reused: "queued 14 trials (seeds 2, 3 on 7 schedules); reused 7
// finished trials".
std::string ExtensionLine(const v1::ExtendResponse& response, bool dry_run);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_H_
