// The ranking's closing lines: verdict counts, the best-set and the next
// step, with the command that trains more seeds.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_SUMMARY_H_
#define PRISM_CLI_VIEWS_SUMMARY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "prism/v1/prism.pb.h"

namespace prism::cli {

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

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_SUMMARY_H_
