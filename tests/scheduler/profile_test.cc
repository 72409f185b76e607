#include "scheduler/space/profile.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/space.h"

namespace prism {
namespace {

using ::testing::HasSubstr;

ModelShape Preset(const std::string& name) { return *FindPreset(name); }

Schedule S(const std::string& text) { return *ParseSchedule(text); }

ModelShape Custom(int d_model, int layers, int base_heads) {
  ModelShape shape;
  shape.name = "custom";
  shape.d_model = d_model;
  shape.layers = layers;
  shape.base_heads = base_heads;
  return shape;
}

// SchedulesOf returns every schedule of a small space, else 150 sampled ones
// plus 50 sampled among those holding every principle (the ones a search
// with principles runs).
std::vector<Schedule> SchedulesOf(const ModelShape& shape) {
  SpaceSpec spec = ShapeSpace(shape);
  if (CountSchedules(spec)->value <= 200) {
    std::vector<Schedule> all;
    ScheduleEnumerator e = *ScheduleEnumerator::Create(spec);
    while (e.Next()) all.emplace_back(e.heads());
    return all;
  }
  std::vector<Schedule> out = *SampleSchedules(spec, 150, /*seed=*/7);
  spec.principles = PrincipleSet::All();
  const std::vector<Schedule> principled =
      *SampleSchedules(spec, 50, /*seed=*/8);
  out.insert(out.end(), principled.begin(), principled.end());
  return out;
}

int Distinct(const Schedule& s) {
  return static_cast<int>(
      std::set<int>(s.heads().begin(), s.heads().end()).size());
}

// NoNearHeadCount is the first unmappable reason, checked independently: some
// source ratio is more than one doubling from every target head count.
bool NoNearHeadCount(const Schedule& s, const ModelShape& from,
                     const ModelShape& to) {
  for (int h : s.heads()) {
    double nearest = 1e9;
    for (int g = 1; g <= to.base_heads; ++g) {
      if (to.d_model % g != 0) continue;
      nearest = std::min(
          nearest,
          std::abs(std::log2(static_cast<double>(g) / to.base_heads) -
                   std::log2(static_cast<double>(h) / from.base_heads)));
    }
    if (nearest > kDefaultMaxRatioError + 1e-12) return true;
  }
  return false;
}

const char* const kPresets[] = {"tiny", "small", "124m", "354m", "757m"};

TEST(ProfileTest, RatiosAreHeadsOverBaseByDepth) {
  const ScheduleProfile p = ProfileOf(S("3x3,6x3,12x6"), 12);
  ASSERT_EQ(p.ratios.size(), 12u);
  EXPECT_DOUBLE_EQ(p.RatioAt(0.0), 0.25);
  EXPECT_DOUBLE_EQ(p.RatioAt(0.26), 0.5);
  EXPECT_DOUBLE_EQ(p.RatioAt(0.5), 1.0);
  EXPECT_DOUBLE_EQ(p.RatioAt(1.0), 1.0);  // clamped to the last layer
}

TEST(ProfileTest, DistortionIsTheSupAndIntegralOfTheLog2Error) {
  // Profile 1/4 on [0, 1/2), 1 on [1/2, 1) (tiny 1x3,4x3) against
  // 2x2,4x2 (ratios 1/2 on [0, 1/2)): one doubling off over half the depth.
  const ScheduleProfile p = ProfileOf(S("1x3,4x3"), 4);
  const Distortion d = ProfileDistortion(p, S("2x2,4x2"), 4);
  EXPECT_DOUBLE_EQ(d.max_error, 1.0);
  EXPECT_DOUBLE_EQ(d.mean_error, 0.5);
  // Misaligned layers: 3 layers over 2 profile steps; the middle layer (at
  // ratio 1) is two doublings off over [1/3, 1/2).
  const Distortion m = ProfileDistortion(p, S("1x1,4x2"), 4);
  EXPECT_DOUBLE_EQ(m.max_error, 2.0);
  EXPECT_NEAR(m.mean_error, 2.0 / 6.0, 1e-12);
  EXPECT_EQ(ProfileDistortion(p, S("1x3,4x3"), 4).max_error, 0.0);
}

TEST(MapScheduleTest, TinyOnto124mIsExact) {
  const ScheduleMapping m =
      *MapSchedule(S("1x2,2x1,4x3"), Preset("tiny"), Preset("124m"));
  EXPECT_EQ(m.mapped.ToString(), "3x4,6x2,12x6");
  EXPECT_EQ(m.distortion.max_error, 0.0);
  EXPECT_EQ(m.distortion.mean_error, 0.0);
  ASSERT_EQ(m.layers.size(), 12u);
  EXPECT_DOUBLE_EQ(m.layers[4].profile_ratio, 0.5);
  EXPECT_DOUBLE_EQ(m.layers[4].ratio, 0.5);
  EXPECT_EQ(m.source_ratios.size(), 6u);
  EXPECT_TRUE(m.dropped.empty());
}

TEST(MapScheduleTest, NearestHeadCountWhenTheRatioIsNotOffered) {
  // 124m's 4 of 12 heads (1/3) at 354m (16 heads: 1, 2, 4, 8, 16): 4/16 is
  // 0.415 doublings off, 8/16 0.585.
  const ScheduleMapping m =
      *MapSchedule(S("4x6,12x6"), Preset("124m"), Preset("354m"));
  EXPECT_EQ(m.mapped.ToString(), "4x12,16x12");
  EXPECT_NEAR(m.distortion.max_error, std::log2(4.0 / 3.0), 1e-12);
  EXPECT_NEAR(m.distortion.mean_error, std::log2(4.0 / 3.0) / 2, 1e-12);
}

TEST(MapScheduleTest, KeepsSmoothnessTheNearestFitWouldBreak) {
  const ModelShape from = Preset("124m");
  const ModelShape to = Preset("tiny");
  const Schedule s = S("3x2,6x2,12x8");
  ASSERT_TRUE(ReportPrinciples(ShapeSpace(from), s).smooth);
  const ScheduleMapping m = *MapSchedule(s, from, to);
  // The layer-by-layer nearest, 1x1,2x1,4x4, has runs of one layer.
  const Distortion nearest =
      ProfileDistortion(ProfileOf(s, 12), S("1x1,2x1,4x4"), 4);
  EXPECT_TRUE(m.mapped_principles.smooth) << m.mapped.ToString();
  EXPECT_TRUE(m.kept.smooth);
  EXPECT_GT(m.distortion.mean_error, nearest.mean_error);
  EXPECT_TRUE(m.source_principles == m.kept);
}

TEST(MapScheduleTest, SaysWhichPrincipleTheTargetCannotHold) {
  // d_model 96 with 4 heads: head dim 24, so no schedule there is pow2.
  const ScheduleMapping m =
      *MapSchedule(S("2x3,4x3"), Preset("tiny"), Custom(96, 6, 4));
  ASSERT_TRUE(m.source_principles.pow2);
  EXPECT_FALSE(m.kept.pow2);
  ASSERT_EQ(m.dropped.size(), 1u);
  EXPECT_THAT(m.dropped[0], HasSubstr("pow2: no schedule of custom"));
  EXPECT_EQ(m.mapped.ToString(), "2x3,4x3");
}

TEST(MapScheduleTest, UnmappableRatioNamesLayerAndNearest) {
  const absl::StatusOr<ScheduleMapping> m =
      MapSchedule(S("1x1,12x11"), Preset("124m"), Preset("tiny"));
  ASSERT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(m.status().message(), HasSubstr("'1x1,12x11' of 124m"));
  EXPECT_THAT(m.status().message(), HasSubstr("tiny (d_model 128"));
  EXPECT_THAT(m.status().message(), HasSubstr("layer 1's ratio 0.08333"));
  EXPECT_THAT(m.status().message(), HasSubstr("nearest: 0.25 (1 of 4 heads"));
  // A wider tolerance accepts it.
  MapOptions loose;
  loose.max_ratio_error = 2.0;
  EXPECT_TRUE(
      MapSchedule(S("1x1,12x11"), Preset("124m"), Preset("tiny"), loose).ok());
}

TEST(MapScheduleTest, TooFewLayersForTheStepsIsFailedPrecondition) {
  const absl::StatusOr<ScheduleMapping> m = MapSchedule(
      S("3x3,4x3,6x3,8x3,12x3,16x3,24x6"), Preset("757m"), Preset("tiny"));
  ASSERT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(m.status().message(),
              HasSubstr("6 layers, fewer than the schedule's 7 distinct head "
                        "counts"));
}

TEST(MapScheduleTest, BadInputIsInvalidArgument) {
  const ModelShape tiny = Preset("tiny");
  const ModelShape big = Preset("124m");
  auto code = [](const absl::StatusOr<ScheduleMapping>& m) {
    return m.status().code();
  };
  // 5 heads do not divide 768; 6 layers is not 124m's 12.
  EXPECT_EQ(code(MapSchedule(S("5x2,12x10"), big, tiny)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MapSchedule(S("4x6"), big, tiny).status().message(),
              HasSubstr("is not a schedule of 124m"));
  EXPECT_EQ(code(MapSchedule(S("4x6"), tiny, Custom(100, 6, 8))),
            absl::StatusCode::kInvalidArgument);
  MapOptions bad;
  bad.max_ratio_error = 0.0;
  EXPECT_EQ(code(MapSchedule(S("4x6"), tiny, big, bad)),
            absl::StatusCode::kInvalidArgument);
}

// Every ordered preset pair, every schedule of tiny and small and a sample of
// the larger spaces: a map is either a valid target schedule keeping the
// source's principles with its distortion reported consistently, or
// FailedPrecondition for a reason that is checked independently here.
TEST(MapScheduleTest, EveryPresetPairMapsOrSaysWhyNot) {
  for (const char* from_name : kPresets) {
    const ModelShape from = Preset(from_name);
    const std::vector<Schedule> schedules = SchedulesOf(from);
    for (const char* to_name : kPresets) {
      const ModelShape to = Preset(to_name);
      const SpaceSpec to_spec = ShapeSpace(to);
      int mapped = 0;
      for (const Schedule& s : schedules) {
        SCOPED_TRACE(
            absl::StrCat(from_name, " -> ", to_name, " ", s.ToString()));
        const absl::StatusOr<ScheduleMapping> m = MapSchedule(s, from, to);
        if (!m.ok()) {
          ASSERT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition)
              << m.status();
          EXPECT_TRUE(NoNearHeadCount(s, from, to) || Distinct(s) > to.layers)
              << m.status();
          continue;
        }
        ++mapped;
        ASSERT_TRUE(CheckHardConstraints(to_spec, m->mapped).ok());
        // Presets' uniform schedules hold every principle, so all are kept.
        EXPECT_TRUE(m->kept == m->source_principles);
        EXPECT_TRUE(m->dropped.empty());
        for (Principle p : kAllPrinciples) {
          if (m->source_principles.Has(p)) {
            EXPECT_TRUE(m->mapped_principles.Has(p)) << PrincipleName(p);
          }
        }
        double layer_max = 0.0, layer_mean = 0.0;
        for (const LayerMapping& l : m->layers) {
          layer_max = std::max(layer_max, l.max_error);
          layer_mean += l.mean_error / to.layers;
          EXPECT_LE(l.mean_error, l.max_error + 1e-12);
        }
        EXPECT_NEAR(layer_max, m->distortion.max_error, 1e-12);
        EXPECT_NEAR(layer_mean, m->distortion.mean_error, 1e-12);
        if (from_name == std::string(to_name)) {
          EXPECT_EQ(m->mapped, s);  // a shape onto itself: the identity
          EXPECT_EQ(m->distortion.max_error, 0.0);
        }
      }
      EXPECT_GT(mapped, 0) << from_name << " -> " << to_name;
    }
  }
}

// The mapping is the least distorted schedule of the target that keeps the
// source's principles: checked against every schedule of tiny and small.
TEST(MapScheduleTest, NoTargetScheduleIsCloserThanTheMap) {
  for (const char* from_name : kPresets) {
    const ModelShape from = Preset(from_name);
    for (const char* to_name : {"tiny", "small"}) {
      const ModelShape to = Preset(to_name);
      for (const Schedule& s : SchedulesOf(from)) {
        const absl::StatusOr<ScheduleMapping> m = MapSchedule(s, from, to);
        if (!m.ok()) continue;
        SpaceSpec spec = ShapeSpace(to);
        spec.principles = m->kept;
        const ScheduleProfile profile = ProfileOf(s, from.base_heads);
        ScheduleEnumerator e = *ScheduleEnumerator::Create(spec);
        double best = 1e9;
        while (e.Next()) {
          best = std::min(best, ProfileDistortion(profile, Schedule(e.heads()),
                                                  to.base_heads)
                                    .mean_error);
        }
        EXPECT_NEAR(m->distortion.mean_error, best, 1e-12)
            << from_name << " -> " << to_name << " " << s.ToString();
      }
    }
  }
}

// Round trips A -> B -> A. What they must preserve:
//   - always: the result is a valid schedule of A, keeping A's principles,
//     within dist(A -> B) + dist(B -> A) of the original, in max and mean
//     error (the distortion is a metric on profiles);
//   - when B reproduces A's profile exactly (B's depth a multiple of A's and
//     every ratio of A offered by B: tiny and small into 354m and 757m,
//     tiny into 124m, 124m into 757m), a hop of no distortion when A's
//     schedule is not smooth, and the original schedule back when that hop
//     holds the same principles as A's. Smoothness counts runs in layers, so
//     B's exact image can stretch a run past max_run (keeping smoothness then
//     costs distortion) or make a run of one layer long enough (then the
//     trip back keeps a smoothness A's schedule never had).
TEST(MapScheduleTest, RoundTripsStayWithinTheHopsAndExactOnesAreIdentity) {
  const std::set<std::pair<std::string, std::string>> exact = {
      {"tiny", "124m"},  {"tiny", "354m"},  {"tiny", "757m"},
      {"small", "354m"}, {"small", "757m"}, {"124m", "757m"}};
  for (const char* a_name : kPresets) {
    const ModelShape a = Preset(a_name);
    for (const char* b_name : kPresets) {
      const ModelShape b = Preset(b_name);
      const bool is_exact = exact.count({a_name, b_name}) > 0;
      int round_trips = 0;
      int identities = 0;
      for (const Schedule& s : SchedulesOf(a)) {
        SCOPED_TRACE(absl::StrCat(a_name, " -> ", b_name, " ", s.ToString()));
        const absl::StatusOr<ScheduleMapping> there = MapSchedule(s, a, b);
        const bool smooth = ReportPrinciples(ShapeSpace(a), s).smooth;
        if (is_exact && !smooth) {
          ASSERT_TRUE(there.ok()) << there.status();
          EXPECT_EQ(there->distortion.max_error, 0.0);
        }
        if (!there.ok()) continue;
        const absl::StatusOr<ScheduleMapping> back =
            MapSchedule(there->mapped, b, a);
        if (!back.ok()) continue;
        ++round_trips;
        const Distortion total = ProfileDistortion(ProfileOf(s, a.base_heads),
                                                   back->mapped, a.base_heads);
        EXPECT_LE(total.max_error, there->distortion.max_error +
                                       back->distortion.max_error + 1e-12);
        EXPECT_LE(total.mean_error, there->distortion.mean_error +
                                        back->distortion.mean_error + 1e-12);
        for (Principle p : kAllPrinciples) {
          if (there->source_principles.Has(p)) {
            EXPECT_TRUE(back->mapped_principles.Has(p)) << PrincipleName(p);
          }
        }
        if (is_exact && there->distortion.max_error == 0.0 &&
            there->mapped_principles == there->source_principles) {
          EXPECT_EQ(back->mapped.ToString(), s.ToString());
          ++identities;
        }
      }
      EXPECT_GT(round_trips, 0) << a_name << " -> " << b_name;
      if (is_exact) EXPECT_GT(identities, 0) << a_name << " -> " << b_name;
    }
  }
}

}  // namespace
}  // namespace prism
