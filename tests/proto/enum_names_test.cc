#include "proto/enum_names.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "prism/v1/prism.pb.h"

namespace prism {
namespace {

TEST(EnumNamesTest, ShortNamesDropTheSharedPrefix) {
  EXPECT_EQ(EnumValueName(v1::ROLE_ADMIN), "admin");
  EXPECT_EQ(EnumValueName(v1::ROLE_VIEWER), "viewer");
  EXPECT_EQ(EnumValueName(v1::TRIAL_QUEUED), "queued");
  EXPECT_EQ(EnumValueName(v1::TRIAL_CANCELLED), "cancelled");
  EXPECT_EQ(EnumValueName(v1::EXPERIMENT_DONE), "done");
  EXPECT_EQ(EnumValueName(v1::WORKER_LOST), "lost");
  EXPECT_EQ(EnumValueName(v1::RANK_SORT_MIN_VAL_LOSS), "min_val_loss");
}

TEST(EnumNamesTest, UnspecifiedAndUndefinedNumbersAreUnknown) {
  EXPECT_EQ(EnumValueName(v1::TRIAL_STATE_UNSPECIFIED), "unknown");
  EXPECT_EQ(EnumValueName(v1::ROLE_UNSPECIFIED), "unknown");
  EXPECT_EQ(EnumValueName(static_cast<v1::Role>(99)), "unknown");
}

TEST(EnumNamesTest, ParseAcceptsShortAndGeneratedNamesInAnyCase) {
  EXPECT_EQ(*ParseEnumValue<v1::Role>("viewer", "role"), v1::ROLE_VIEWER);
  EXPECT_EQ(*ParseEnumValue<v1::Role>("Admin", "role"), v1::ROLE_ADMIN);
  EXPECT_EQ(*ParseEnumValue<v1::Role>("ROLE_WORKER", "role"), v1::ROLE_WORKER);
  EXPECT_EQ(*ParseEnumValue<v1::TrialState>("diverged", "state"),
            v1::TRIAL_DIVERGED);
  EXPECT_EQ(*ParseEnumValue<v1::RankSort>("val_loss", "sort"),
            v1::RANK_SORT_VAL_LOSS);
}

TEST(EnumNamesTest, ParseRefusesUnspecifiedAndUnknownNamesListingChoices) {
  absl::StatusOr<v1::Role> role = ParseEnumValue<v1::Role>("root", "role");
  EXPECT_EQ(role.status(),
            absl::InvalidArgumentError(
                "unknown role 'root' (use admin, user, worker or viewer)"));
  EXPECT_EQ(ParseEnumValue<v1::Role>("unspecified", "role").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ParseEnumValue<v1::Role>("ROLE_UNSPECIFIED", "role").status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseEnumValue<v1::RankSort>("", "sort").status(),
            absl::InvalidArgumentError(
                "unknown sort '' (use val_loss, delta, speedup, throughput, "
                "min_val_loss or rank)"));
}

}  // namespace
}  // namespace prism
