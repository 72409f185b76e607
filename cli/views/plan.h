// The submit's words on cost: `prism plan`'s bill, its one-line form, the
// user's headroom against the limits and what an Extend queued.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_PLAN_H_
#define PRISM_CLI_VIEWS_PLAN_H_

#include <string>

#include "prism/v1/prism.pb.h"

namespace prism::cli {

// HeadroomLine says, wrapped to 100 columns, where a submit leaves its user
// against each limit: "limits: 39 of 20000 trials per experiment; queued
// 39 of 20000; active 1 of 20; spec 2.1 KiB of 1024.0 KiB" ("no limit" where
// none holds).
std::string HeadroomLine(const v1::Headroom& headroom);

// PlanBlock is `prism plan`'s bill (server/core/experiments/plan.h), lines
// within 100 columns: schedules, trials, steps expected and at most with their
// share of the grid's and its source, tokens, parameters, FLOPs, worker-hours
// with the throughput and where it comes from, the corpus, then each warning.
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

#endif  // PRISM_CLI_VIEWS_PLAN_H_
