#include "scheduler/space/space.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

using ::testing::HasSubstr;

SpaceSpec Space(int d_model, int layers, int base_heads) {
  SpaceSpec spec;
  spec.d_model = d_model;
  spec.layers = layers;
  spec.base_heads = base_heads;
  return spec;
}

SpaceSpec Space(int d_model, int layers, int base_heads, int min_run,
                int max_run) {
  SpaceSpec spec = Space(d_model, layers, base_heads);
  spec.min_run = min_run;
  spec.max_run = max_run;
  return spec;
}

// ---------------------------------------------------------------------------
// An independent brute force: every non-decreasing sequence of divisors of
// d_model that ends at the base, generated recursively in lexicographic order,
// filtered by predicates written from the principle definitions. It shares no
// code with space.cc.

std::vector<int> Divisors(int d_model) {
  std::vector<int> out;
  for (int h = 1; h <= d_model; ++h) {
    if (d_model % h == 0) out.push_back(h);
  }
  return out;
}

void Generate(const std::vector<int>& divisors, int layers, int base,
              std::vector<int>* prefix, std::vector<std::vector<int>>* out) {
  if (static_cast<int>(prefix->size()) == layers) {
    if (prefix->back() == base) out->push_back(*prefix);
    return;
  }
  for (int h : divisors) {
    if (h > base) break;
    if (!prefix->empty() && h < prefix->back()) continue;
    prefix->push_back(h);
    Generate(divisors, layers, base, prefix, out);
    prefix->pop_back();
  }
}

std::vector<std::vector<int>> AllValid(int d_model, int layers, int base) {
  std::vector<std::vector<int>> out;
  std::vector<int> prefix;
  Generate(Divisors(d_model), layers, base, &prefix, &out);
  return out;
}

bool BruteSmooth(const std::vector<int>& h, int base, int lo, int hi) {
  size_t i = 0;
  while (i < h.size()) {
    size_t j = i;
    while (j < h.size() && h[j] == h[i]) ++j;
    const int run = static_cast<int>(j - i);
    if (h[i] != base && (run < lo || run > hi)) return false;
    i = j;
  }
  return true;
}

bool BruteBaseline(const std::vector<int>& h, int base) {
  int n = 0;
  for (int x : h) n += x == base;
  return 2 * n >= static_cast<int>(h.size());  // n >= ceil(L / 2)
}

bool BrutePow2(const std::vector<int>& h, int d_model) {
  for (int x : h) {
    int dim = d_model / x;
    while (dim % 2 == 0) dim /= 2;
    if (dim != 1) return false;
  }
  return true;
}

std::vector<std::vector<int>> Filter(const std::vector<std::vector<int>>& all,
                                     const SpaceSpec& spec) {
  std::vector<std::vector<int>> out;
  for (const auto& h : all) {
    if (spec.principles.smooth &&
        !BruteSmooth(h, spec.base_heads, spec.min_run, spec.max_run)) {
      continue;
    }
    if (spec.principles.baseline && !BruteBaseline(h, spec.base_heads)) {
      continue;
    }
    if (spec.principles.pow2 && !BrutePow2(h, spec.d_model)) continue;
    out.push_back(h);
  }
  return out;
}

std::string Describe(const SpaceSpec& spec) {
  return "d_model " + std::to_string(spec.d_model) + " layers " +
         std::to_string(spec.layers) + " base " +
         std::to_string(spec.base_heads) + " principles " +
         spec.principles.ToString() + " runs " + std::to_string(spec.min_run) +
         ".." + std::to_string(spec.max_run);
}

// Every principle subset, and for subsets with smoothness every run bound
// pair in 1..4.
std::vector<SpaceSpec> FilterSpecs(int d_model, int layers, int base) {
  std::vector<SpaceSpec> specs;
  for (int mask = 0; mask < 8; ++mask) {
    SpaceSpec spec = Space(d_model, layers, base);
    spec.principles.smooth = mask & 1;
    spec.principles.baseline = mask & 2;
    spec.principles.pow2 = mask & 4;
    if (!spec.principles.smooth) {
      specs.push_back(spec);
      continue;
    }
    for (int lo = 1; lo <= 4; ++lo) {
      for (int hi = lo; hi <= 4; ++hi) {
        spec.min_run = lo;
        spec.max_run = hi;
        specs.push_back(spec);
      }
    }
  }
  return specs;
}

// Checks count, enumeration (from the start and from several indices),
// rank/unrank and membership of one space against the brute-force list.
void CheckSpaceAgainst(const SpaceSpec& spec,
                       const std::vector<std::vector<int>>& all_valid,
                       const std::vector<std::vector<int>>& expected) {
  SCOPED_TRACE(Describe(spec));
  const uint64_t n = expected.size();
  absl::StatusOr<SpaceCount> count = CountSchedules(spec);
  ASSERT_TRUE(count.ok()) << count.status();
  ASSERT_FALSE(count->exceeds_uint64);
  ASSERT_EQ(count->value, n);

  absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(spec);
  ASSERT_TRUE(e.ok()) << e.status();
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(e->Next()) << "stopped at " << i;
    ASSERT_EQ(e->index(), i);
    ASSERT_EQ(e->heads(), expected[i]) << "at index " << i;
  }
  ASSERT_FALSE(e->Next());
  ASSERT_FALSE(e->Next());

  for (uint64_t start : {uint64_t{1}, n / 3, n / 2, n > 0 ? n - 1 : 0, n}) {
    if (start > n) continue;
    absl::StatusOr<ScheduleEnumerator> from =
        ScheduleEnumerator::Create(spec, start);
    ASSERT_TRUE(from.ok()) << from.status();
    for (uint64_t i = start; i < n; ++i) {
      ASSERT_TRUE(from->Next());
      ASSERT_EQ(from->heads(), expected[i]) << "from " << start;
    }
    ASSERT_FALSE(from->Next());
  }
  EXPECT_EQ(ScheduleEnumerator::Create(spec, n + 1).status().code(),
            absl::StatusCode::kOutOfRange);

  // Round trips on every schedule of small spaces, a stride of large ones.
  const uint64_t stride = n > 500 ? n / 250 : 1;
  for (uint64_t i = 0; i < n; i += stride) {
    absl::StatusOr<Schedule> s = UnrankSchedule(spec, i);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->heads(), expected[i]);
    absl::StatusOr<uint64_t> rank = RankSchedule(spec, *s);
    ASSERT_TRUE(rank.ok()) << rank.status();
    ASSERT_EQ(*rank, i);
  }
  EXPECT_EQ(UnrankSchedule(spec, n).status().code(),
            absl::StatusCode::kOutOfRange);

  if (all_valid.size() <= 3000) {
    const std::set<std::vector<int>> members(expected.begin(), expected.end());
    for (const auto& h : all_valid) {
      const bool member = members.count(h) > 0;
      ASSERT_EQ(InSpace(spec, Schedule(h)), member) << Schedule(h).ToString();
      if (!member) {
        EXPECT_EQ(RankSchedule(spec, Schedule(h)).status().code(),
                  absl::StatusCode::kNotFound);
      }
    }
  }
}

class BruteForceTest : public ::testing::TestWithParam<int> {};

TEST_P(BruteForceTest, CountEnumerateRankMatchBruteForceForEveryFilter) {
  const int d_model = GetParam();
  // 768's 18 divisors make 9 layers large for the brute force; 7 still
  // exercises every filter and run bound.
  const int max_layers = d_model == 768 ? 7 : 9;
  int spaces = 0;
  for (int layers = 1; layers <= max_layers; ++layers) {
    for (int base : Divisors(d_model)) {
      const auto all_valid = AllValid(d_model, layers, base);
      for (const SpaceSpec& spec : FilterSpecs(d_model, layers, base)) {
        CheckSpaceAgainst(spec, all_valid, Filter(all_valid, spec));
        if (HasFatalFailure()) return;
        ++spaces;
      }
    }
  }
  EXPECT_GT(spaces, 100);
}

INSTANTIATE_TEST_SUITE_P(DModels, BruteForceTest,
                         ::testing::Values(12, 24, 36, 48, 64, 96, 128, 768));

// ---------------------------------------------------------------------------
// Known sizes.

TEST(CountSchedulesTest, PaperSpacesHaveKnownSizes) {
  absl::StatusOr<SpaceCount> small = CountSchedules(Space(768, 12, 12));
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->value, 12376u);
  EXPECT_EQ(small->ToString(), "12376");

  absl::StatusOr<SpaceCount> large = CountSchedules(Space(1280, 36, 20));
  ASSERT_TRUE(large.ok());
  EXPECT_EQ(large->value, 26978328u);

  // 13 divisors of 12288 up to 96, so C(95 + 12, 12) = C(107, 12).
  absl::StatusOr<SpaceCount> huge = CountSchedules(Space(12288, 96, 96));
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(huge->value, 2478781950222760u);
  EXPECT_FALSE(huge->exceeds_uint64);
}

TEST(CountSchedulesTest, ExactJustBelowTwoToTheSixtyFour) {
  // 64 has 7 divisors: non-decreasing 4095-layer prefixes over 7 values are
  // C(4095 + 6, 6) = 6,582,894,786,497,566,720 (above 2^62).
  absl::StatusOr<SpaceCount> count = CountSchedules(Space(64, 4096, 64));
  ASSERT_TRUE(count.ok());
  EXPECT_FALSE(count->exceeds_uint64);
  EXPECT_EQ(count->value, 6582894786497566720u);
}

TEST(CountSchedulesTest, SaturatesWithExceedsFlagBeyondUint64) {
  // C(4095 + 7, 7) is about 3.8e21.
  absl::StatusOr<SpaceCount> count = CountSchedules(Space(128, 4096, 128));
  ASSERT_TRUE(count.ok());
  EXPECT_TRUE(count->exceeds_uint64);
  EXPECT_EQ(count->value, UINT64_MAX);
  EXPECT_EQ(count->ToString(), "more than 18446744073709551615");
}

TEST(CountSchedulesTest, PrinciplesShrinkThePaperSpace) {
  SpaceSpec spec = Space(768, 12, 12);
  spec.principles = PrincipleSet::All();
  absl::StatusOr<SpaceCount> all = CountSchedules(spec);
  ASSERT_TRUE(all.ok());
  EXPECT_GT(all->value, 1u);  // at least the uniform baseline and 3x3,6x3,...
  EXPECT_LT(all->value, 12376u);
  EXPECT_TRUE(
      InSpace(spec, Schedule({3, 3, 3, 6, 6, 6, 12, 12, 12, 12, 12, 12})));
}

TEST(CountSchedulesTest, Pow2ExcludingTheBaseLeavesAnEmptySpace) {
  // 36 / 3 = 12 is not a power of two, so no schedule can end at the base.
  SpaceSpec spec = Space(36, 4, 3);
  spec.principles.pow2 = true;
  absl::StatusOr<SpaceCount> count = CountSchedules(spec);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->value, 0u);
  absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(spec);
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->Next());
  absl::StatusOr<SchedulePage> page = ListSchedules(spec, 10, "");
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->schedules.empty());
  EXPECT_EQ(page->next_page_token, "");
}

TEST(CountSchedulesTest, InvalidSpecsAreInvalidArgument) {
  struct Case {
    SpaceSpec spec;
    std::string message;
  };
  const Case cases[] = {
      {Space(0, 12, 12), "d_model must be positive"},
      {Space(-768, 12, 12), "d_model must be positive"},
      {Space(768, 0, 12), "layers must be positive"},
      {Space(768, 5000, 12), "layers must be at most 4096"},
      {Space(768, 12, 0), "base heads must be positive"},
      {Space(768, 12, 7), "base heads 7 do not divide d_model 768"},
      {Space(768, 12, 12, 0, 4), "min_run must be at least 1"},
      {Space(768, 12, 12, 5, 4), "min_run 5 is greater than max_run 4"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<SpaceCount> count = CountSchedules(c.spec);
    EXPECT_EQ(count.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(count.status().message()), HasSubstr(c.message));
    EXPECT_EQ(ScheduleEnumerator::Create(c.spec).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(UnrankSchedule(c.spec, 0).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ListSchedules(c.spec, 5, "").status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(SampleSchedules(c.spec, 5, 1).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

// ---------------------------------------------------------------------------
// Hard constraints and the principle report.

TEST(CheckHardConstraintsTest, NamesTheConstraintAndTheLayer) {
  const SpaceSpec spec = Space(768, 12, 12);
  struct Case {
    std::vector<int> heads;
    std::string message;
  };
  const Case cases[] = {
      {{3, 3, 3, 5, 6, 6, 12, 12, 12, 12, 12, 12},
       "layer 4: 5 heads do not divide d_model 768 (divisibility)"},
      {{3, 3, 3, 6, 6, 4, 12, 12, 12, 12, 12, 12},
       "layer 6: 4 heads after 6 in layer 5 (monotonicity"},
      {{3, 3, 3, 6, 6, 6, 6, 6, 6, 6, 6, 6},
       "layer 12: 6 heads, but the last layer must have the base 12 heads "
       "(boundary convergence)"},
      {{12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 24},
       "layer 12: 24 heads, but the last layer must have the base 12"},
      {{12, 12, 12}, "schedule has 3 layers but the space has 12"},
  };
  for (const Case& c : cases) {
    absl::Status status = CheckHardConstraints(spec, Schedule(c.heads));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
  EXPECT_TRUE(CheckHardConstraints(spec, Schedule::Uniform(12, 12)).ok());
}

TEST(ReportPrinciplesTest, ReportsEveryPropertyOfThePaperSchedule) {
  const SpaceSpec spec = Space(768, 12, 12);
  const SchedulePrinciples r = ReportPrinciples(
      spec, Schedule({3, 3, 3, 6, 6, 6, 12, 12, 12, 12, 12, 12}));
  EXPECT_TRUE(r.smooth);
  EXPECT_TRUE(r.baseline);
  EXPECT_TRUE(r.pow2);
  EXPECT_EQ(r.transitions, 2);
  EXPECT_DOUBLE_EQ(r.max_adjacent_ratio, 2.0);
  EXPECT_DOUBLE_EQ(r.baseline_fraction, 0.5);
  EXPECT_EQ(r.head_dims, std::vector<int>({256, 256, 256, 128, 128, 128, 64, 64,
                                           64, 64, 64, 64}));
}

TEST(ReportPrinciplesTest, FlagsEachViolation) {
  const SpaceSpec spec = Space(768, 12, 12);
  // A 1-layer run of 4 heads breaks smoothness (2..4); 5 base layers < 6;
  // 768 / 4 = 192 is not a power of two.
  const SchedulePrinciples r = ReportPrinciples(
      spec, Schedule({1, 1, 4, 6, 6, 6, 6, 12, 12, 12, 12, 12}));
  EXPECT_FALSE(r.smooth);
  EXPECT_FALSE(r.baseline);
  EXPECT_FALSE(r.pow2);
  EXPECT_EQ(r.transitions, 3);
  EXPECT_DOUBLE_EQ(r.max_adjacent_ratio, 4.0);
  EXPECT_NEAR(r.baseline_fraction, 5.0 / 12.0, 1e-12);
  // A run longer than max_run also breaks smoothness; the base run may be
  // any length.
  EXPECT_FALSE(ReportPrinciples(
                   spec, Schedule({6, 6, 6, 6, 6, 12, 12, 12, 12, 12, 12, 12}))
                   .smooth);
  EXPECT_TRUE(ReportPrinciples(spec, Schedule::Uniform(12, 12)).smooth);
  const SchedulePrinciples uniform =
      ReportPrinciples(spec, Schedule::Uniform(12, 12));
  EXPECT_EQ(uniform.transitions, 0);
  EXPECT_DOUBLE_EQ(uniform.max_adjacent_ratio, 1.0);
  EXPECT_DOUBLE_EQ(uniform.baseline_fraction, 1.0);
}

// ---------------------------------------------------------------------------
// Enumeration at scale, paging and sampling.

TEST(ScheduleEnumeratorTest, StartsAnywhereInAHugeSpaceAndEndsAtTheUniform) {
  const SpaceSpec spec = Space(12288, 96, 96);
  const uint64_t n = CountSchedules(spec)->value;
  absl::StatusOr<ScheduleEnumerator> e =
      ScheduleEnumerator::Create(spec, n - 3);
  ASSERT_TRUE(e.ok());
  std::vector<Schedule> tail;
  while (e->Next()) tail.emplace_back(e->heads());
  ASSERT_EQ(tail.size(), 3u);
  // The largest schedules in lexicographic order: 96x96, then those starting
  // with 64 whose second layer is already 96, then 64, 64, 96, ...
  EXPECT_EQ(tail[2].ToString(), "96x96");
  EXPECT_EQ(tail[1].ToString(), "64x1,96x95");
  EXPECT_EQ(tail[0].ToString(), "64x2,96x94");
  EXPECT_EQ(*RankSchedule(spec, tail[2]), n - 1);
  EXPECT_EQ(UnrankSchedule(spec, 0)->ToString(), "1x95,96x1");
}

TEST(ScheduleEnumeratorTest, MatchesUnrankOnAllPrinciplesInTheLargeSpace) {
  SpaceSpec spec = Space(1280, 36, 20);
  spec.principles = PrincipleSet::All();
  const uint64_t n = CountSchedules(spec)->value;
  ASSERT_GT(n, 0u);
  absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(spec);
  ASSERT_TRUE(e.ok());
  std::vector<int> previous;
  uint64_t seen = 0;
  while (e->Next()) {
    ASSERT_TRUE(previous < e->heads());  // strictly increasing order
    ASSERT_TRUE(InSpace(spec, Schedule(e->heads())));
    if (seen % 97 == 0) {
      ASSERT_EQ(UnrankSchedule(spec, seen)->heads(), e->heads());
    }
    previous = e->heads();
    ++seen;
  }
  EXPECT_EQ(seen, n);
}

TEST(ListSchedulesTest, PagesCoverTheSpaceExactlyOnceInOrder) {
  SpaceSpec spec = Space(96, 6, 12);
  spec.principles.smooth = true;
  const uint64_t n = CountSchedules(spec)->value;
  std::vector<Schedule> paged;
  std::string token;
  int pages = 0;
  do {
    absl::StatusOr<SchedulePage> page = ListSchedules(spec, 7, token);
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_LE(page->schedules.size(), 7u);
    paged.insert(paged.end(), page->schedules.begin(), page->schedules.end());
    token = page->next_page_token;
    ASSERT_LT(++pages, 1000);
  } while (!token.empty());
  ASSERT_EQ(paged.size(), n);
  for (uint64_t i = 0; i < n; ++i) {
    EXPECT_EQ(paged[i], *UnrankSchedule(spec, i));
  }
}

TEST(ListSchedulesTest, LastFullPageHasNoNextToken) {
  const SpaceSpec spec = Space(768, 12, 12);
  absl::StatusOr<SchedulePage> page = ListSchedules(spec, 12376, "");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->schedules.size(), 12376u);
  EXPECT_EQ(page->next_page_token, "");
}

TEST(ListSchedulesTest, RejectsTokensFromOtherSpacesAndGarbage) {
  const SpaceSpec spec = Space(768, 12, 12);
  absl::StatusOr<SchedulePage> first = ListSchedules(spec, 5, "");
  ASSERT_TRUE(first.ok());
  ASSERT_FALSE(first->next_page_token.empty());

  SpaceSpec other = spec;
  other.principles.pow2 = true;
  absl::StatusOr<SchedulePage> wrong =
      ListSchedules(other, 5, first->next_page_token);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong.status().message()),
              HasSubstr("different space"));

  for (const char* garbage : {"garbage", "!!!", "AAAA", "x"}) {
    absl::StatusOr<SchedulePage> bad = ListSchedules(spec, 5, garbage);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument)
        << garbage;
  }
  EXPECT_THAT(std::string(ListSchedules(spec, 5, "garbage").status().message()),
              HasSubstr("page token 'garbage' is malformed"));
  EXPECT_EQ(ListSchedules(spec, 0, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ListSchedules(spec, kMaxPageSize + 1, "").status().code(),
            absl::StatusCode::kInvalidArgument);

  absl::StatusOr<SchedulePage> second =
      ListSchedules(spec, 5, first->next_page_token);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->schedules.front(), *UnrankSchedule(spec, 5));
}

TEST(ListSchedulesTest, RunBoundsDoNotMatterWithoutSmoothness) {
  const SpaceSpec spec = Space(768, 12, 12);
  SpaceSpec same = spec;
  same.min_run = 1;
  same.max_run = 9;
  absl::StatusOr<SchedulePage> first = ListSchedules(spec, 5, "");
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(ListSchedules(same, 5, first->next_page_token).ok());
}

TEST(SampleSchedulesTest, DistinctInSpaceSortedAndDeterministic) {
  SpaceSpec spec = Space(768, 12, 12);
  spec.principles.smooth = true;
  absl::StatusOr<std::vector<Schedule>> a = SampleSchedules(spec, 50, 7);
  absl::StatusOr<std::vector<Schedule>> b = SampleSchedules(spec, 50, 7);
  absl::StatusOr<std::vector<Schedule>> c = SampleSchedules(spec, 50, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_EQ(a->size(), 50u);
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_TRUE(InSpace(spec, (*a)[i]));
    if (i > 0) {
      EXPECT_LT((*a)[i - 1], (*a)[i]);  // sorted, hence distinct
    }
  }
}

TEST(SampleSchedulesTest, AskingForMoreThanTheSpaceReturnsAllOfIt) {
  const SpaceSpec spec = Space(96, 4, 12);
  const uint64_t n = CountSchedules(spec)->value;
  absl::StatusOr<std::vector<Schedule>> all =
      SampleSchedules(spec, static_cast<int>(n) + 10, 3);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), n);
  for (uint64_t i = 0; i < n; ++i)
    EXPECT_EQ((*all)[i], *UnrankSchedule(spec, i));
  EXPECT_TRUE(SampleSchedules(spec, 0, 3)->empty());
  EXPECT_EQ(SampleSchedules(spec, -1, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SampleSchedulesTest, WorksOnSpacesFarTooLargeToEnumerate) {
  const SpaceSpec spec = Space(12288, 96, 96);
  absl::StatusOr<std::vector<Schedule>> s = SampleSchedules(spec, 1000, 42);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 1000u);
  for (const Schedule& x : *s) ASSERT_TRUE(InSpace(spec, x));
  // Uniform over 2.5e15 schedules: the mean rank sits near the middle.
  double mean_rank = 0.0;
  for (const Schedule& x : *s) mean_rank += *RankSchedule(spec, x);
  mean_rank /= s->size();
  const double n = 2478781950222760.0;
  EXPECT_NEAR(mean_rank / n, 0.5, 0.05);
}

TEST(SampleSchedulesTest, RefusesSpacesBeyondUint64) {
  absl::StatusOr<std::vector<Schedule>> s =
      SampleSchedules(Space(128, 4096, 128), 3, 1);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("2^64-1"));
}

TEST(SampleSchedulesTest, SingleDrawsAreRoughlyUniform) {
  const SpaceSpec spec = Space(48, 4, 12);  // 6 divisors up to 12
  const uint64_t n = CountSchedules(spec)->value;
  ASSERT_GT(n, 10u);
  const int draws = 200 * static_cast<int>(n);
  std::map<std::string, int> hits;
  for (int seed = 0; seed < draws; ++seed) {
    absl::StatusOr<std::vector<Schedule>> s = SampleSchedules(spec, 1, seed);
    ASSERT_TRUE(s.ok());
    ASSERT_EQ(s->size(), 1u);
    ++hits[s->front().ToString()];
  }
  ASSERT_EQ(hits.size(), n);
  // Chi-square with n - 1 degrees of freedom has mean n - 1 and standard
  // deviation sqrt(2 (n - 1)); allow far more than that.
  const double expected = static_cast<double>(draws) / n;
  double chi2 = 0.0;
  for (const auto& [schedule, count] : hits) {
    chi2 += (count - expected) * (count - expected) / expected;
  }
  EXPECT_LT(chi2, (n - 1) + 10.0 * std::sqrt(2.0 * (n - 1)));
}

TEST(ShuffleSchedulesTest, IsAPermutationFixedByItsSeed) {
  std::vector<Schedule> grid;
  for (int h = 1; h <= 20; ++h) grid.push_back(Schedule::Uniform(h, 2));
  const std::vector<Schedule> a = ShuffleSchedules(grid, 7);
  EXPECT_EQ(a, ShuffleSchedules(grid, 7));
  EXPECT_NE(a, grid);
  EXPECT_NE(a, ShuffleSchedules(grid, 8));
  std::vector<std::string> sorted_a, sorted_grid;
  for (const Schedule& s : a) sorted_a.push_back(s.ToString());
  for (const Schedule& s : grid) sorted_grid.push_back(s.ToString());
  std::sort(sorted_a.begin(), sorted_a.end());
  std::sort(sorted_grid.begin(), sorted_grid.end());
  EXPECT_EQ(sorted_a, sorted_grid);
}

}  // namespace
}  // namespace prism
