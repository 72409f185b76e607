// Conversions between prism.v1 messages and scheduler/ domain types, and
// the coordinator's page tokens. Shared by every manager so the RPC and HTTP
// faces render the same thing the same way.
//
// Thread-safety: pure functions.
#ifndef PRISM_SERVER_CORE_INFRA_CONVERT_H_
#define PRISM_SERVER_CORE_INFRA_CONVERT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/space/principles.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"
#include "scheduler/strategy/asha.h"
#include "scheduler/strategy/racing.h"
#include "scheduler/strategy/screening.h"

namespace prism::server {

v1::Principle PrincipleToProto(Principle p);
// PrinciplesFromProto returns the set; InvalidArgument for
// PRINCIPLE_UNSPECIFIED or an unknown number.
absl::StatusOr<PrincipleSet> PrinciplesFromProto(
    const google::protobuf::RepeatedField<int>& principles);

// SpaceFromProto resolves 0 run bounds to the defaults and validates the
// space (InvalidArgument naming the problem).
absl::StatusOr<SpaceSpec> SpaceFromProto(const v1::SpaceSpec& space);

// SpaceForSpec is a resolved experiment spec's space (shape, principles and
// run bounds).
SpaceSpec SpaceForSpec(const v1::ExperimentSpec& resolved);

// PrincipleReportToProto renders ReportPrinciples' answer for `s`.
v1::PrincipleReport PrincipleReportToProto(const Schedule& s,
                                           const SchedulePrinciples& p,
                                           int base_heads);
// ReportSchedule parses `schedule` and reports it under `space`'s shape; an
// empty report (just the text) when it does not parse.
v1::PrincipleReport ReportSchedule(const SpaceSpec& space,
                                   const std::string& schedule);

// VerdictToProto maps a ranking verdict; kNone (the baseline) is
// VERDICT_UNSPECIFIED.
v1::Verdict VerdictToProto(Verdict v);
v1::EffectStatus EffectStatusToProto(EffectStatus s);
// ThroughputPairingToProto maps how tokens/s were paired; kNone is
// THROUGHPUT_PAIRING_UNSPECIFIED.
v1::ThroughputPairing ThroughputPairingToProto(ThroughputPairing p);
// IntervalToProto leaves low and high unset when the interval has no bounds
// (fewer than 2 values).
v1::Interval IntervalToProto(const Interval& i);
v1::RankedSchedule RankedRowToProto(const RankedRow& row, int base_heads);
// PrincipleEffectToProto sets effect, standard_error and p_value only for an
// estimated effect.
v1::PrincipleEffect PrincipleEffectToProto(const PrincipleEffect& e);

// VerdictOptionsOf returns the verdict options of a resolved spec: its
// VerdictPolicy (defaults for unset fields) and, with a seeds policy, the
// seed sequence and the planned looks from min to max.
VerdictOptions VerdictOptionsOf(const v1::ExperimentSpec& resolved);

// RacingOn is whether a resolved spec races for the best (RacingPolicy);
// RacingPlanOf is its plan (scheduler/strategy/racing.h), the verdicts'
// screened schedules left to the caller.
bool RacingOn(const v1::ExperimentSpec& resolved);
// RacingSequence is a racing spec's seed sequence: its seeds, then
// racing.seeds (the sequence continued, for specs stored without them).
std::vector<int64_t> RacingSequence(const v1::ExperimentSpec& resolved);
RacingPlan RacingPlanOf(const v1::ExperimentSpec& resolved);
// RaceReportOf is a race's state for RankResponse.race (grid_share left to
// the caller, who knows the steps trained).
v1::RaceReport RaceReportOf(const RaceDecision& race,
                            const v1::ExperimentSpec& resolved);
v1::VerdictReport VerdictReportToProto(const VerdictSummary& summary);

// AshaSettings is a resolved spec's ASHA policy, as DecideAsha takes it. A
// spec stored before AshaPolicy.mode existed (unset) keeps the asynchronous
// rule it was submitted under.
struct AshaSettings {
  std::vector<int64_t> rungs;
  int eta = 0;
  AshaMode mode = AshaMode::kAsynchronous;
  // Staged seeds (AshaPolicy.screen_seeds below the experiment's seeds):
  // the first screen_seeds of the spec's seeds, and all of them; both empty
  // when every seed trains from the first rung (DecideAsha's last two).
  std::vector<int64_t> first_rung_seeds;
  std::vector<int64_t> all_seeds;
};
AshaSettings AshaSettingsOf(const v1::ExperimentSpec& resolved);

// ScreeningSearchOf is a resolved STRATEGY_GUIDED_SCREENING spec's settings,
// as DecideScreening takes them (grid_steps from GridStepsOf).
ScreeningSearch ScreeningSearchOf(const v1::ExperimentSpec& resolved);

// GridStepsOf returns the steps a grid search of a resolved spec's space
// trains: its schedules (the spec's list plus the baseline, else the shape's
// grid under its principles) x seeds x budget.steps; 0 when the space cannot
// be counted (invalid, or past 2^64-1 schedules).
double GridStepsOf(const v1::ExperimentSpec& resolved);
// FillSearchCost sets e->grid_steps from its spec where storage has none
// (-1: stored before the column; storage sets steps_trained), so every view
// of an experiment shows the search's cost.
void FillSearchCost(v1::Experiment* e);
v1::AshaRung AshaRungToProto(const AshaRungView& rung);

// Page tokens are opaque to clients: web-safe base64 of "<kind>:<number>".
// DecodePageToken returns 0 for "", the number for a token of this kind, and
// InvalidArgument for anything else.
std::string EncodePageToken(absl::string_view kind, int64_t value);
absl::StatusOr<int64_t> DecodePageToken(absl::string_view kind,
                                        absl::string_view token);

// ClampPageSize maps 0 to `default_size` and caps at `max_size`;
// InvalidArgument for a negative size.
absl::StatusOr<int> ClampPageSize(int page_size, int default_size,
                                  int max_size);

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_INFRA_CONVERT_H_
