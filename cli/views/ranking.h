// The ranking view: `prism results`' table (default, --wide and CSV), the
// notes on its missing values and methods, and PrintRanking, which puts it
// together with the principle effects, the search cost, the ASHA rungs and
// the summary lines.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_RANKING_H_
#define PRISM_CLI_VIEWS_RANKING_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"
#include "cli/output.h"
#include "cli/views/summary.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

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
// RankingColumns are RankingTable's columns for `format` and `wide`.
absl::Span<const Column<v1::RankedSchedule>> RankingColumns(Format format,
                                                            bool wide);

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

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_RANKING_H_
