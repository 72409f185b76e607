// The experiments views: `prism status`' table (wide and narrow), the
// queue's reasons below it and an experiment's search cost.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_EXPERIMENTS_H_
#define PRISM_CLI_VIEWS_EXPERIMENTS_H_

#include <string>

#include "absl/types/span.h"
#include "cli/output.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// ExperimentsTable: id, name, owner, state, priority, per-state counts,
// progress, and a waiting experiment's queue position and reason (wide: CSV
// and `prism status --wide`).
Table ExperimentsTable(const v1::ListExperimentsResponse& response);
// NarrowExperimentsTable fits 100 columns for names up to 28 characters
// (longer ones are cut with "..."): id, name, owner, state, pri,
// done/total, running, queued, failed, progress, pos. The queue reasons go
// below it (WaitingLines).
Table NarrowExperimentsTable(const v1::ListExperimentsResponse& response);
// ExperimentsColumns are the columns of ExperimentsTable (`wide`) or of
// NarrowExperimentsTable.
absl::Span<const Column<v1::Experiment>> ExperimentsColumns(bool wide);
// WaitingLines is "waiting: experiment 3 (position 1): REASON" per waiting
// experiment, wrapped at 100 columns; "" when none waits.
std::string WaitingLines(const v1::ListExperimentsResponse& response);

// SearchCostLine returns "steps trained: 1200 of the grid's 8000 (15.0%)",
// or "" when the experiment's grid could not be counted (grid_steps 0).
//
// (HeadroomLine, cli/views/plan.h, is the submit's word on the limits.)
std::string SearchCostLine(const v1::Experiment& e);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_EXPERIMENTS_H_
