// The trials views: `prism trials`' table, one trial's curve and its MFU.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_TRIALS_H_
#define PRISM_CLI_VIEWS_TRIALS_H_

#include <string>

#include "cli/output.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// MfuText returns "MFU 79.1% of 90.0 GFLOP/s"; when the trial's model
// FLOP/s beat the measured matmul peak, "MFU 100.0% (46.0 GFLOP/s achieved,
// above the 13.0 GFLOP/s matmul measured)"; "MFU not measured" without one.
std::string MfuText(const v1::TrialMetrics& metrics);

// TrialsTable: id, schedule, seed, baseline, state, attempt, step, losses,
// worker.
Table TrialsTable(const v1::ListTrialsResponse& response);
// PointsTable: the curve of one trial.
Table PointsTable(const v1::GetTrialResponse& response);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_TRIALS_H_
