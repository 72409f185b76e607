#include "base/status_macros.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

absl::Status FailIfNegative(int x) {
  if (x < 0) return absl::InvalidArgumentError("negative");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<int>> Boxed(int x) {
  PRISM_RETURN_IF_ERROR(FailIfNegative(x));
  return std::make_unique<int>(x);
}

absl::StatusOr<int> DoubledBoxes(int a, int b) {
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<int> first, Boxed(a));
  std::unique_ptr<int> second;
  PRISM_ASSIGN_OR_RETURN(second, Boxed(b));
  return 2 * (*first + *second);
}

TEST(StatusMacrosTest, OkValuesAreMovedIntoDeclarationsAndLvalues) {
  absl::StatusOr<int> result = DoubledBoxes(1, 2);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, 6);
}

TEST(StatusMacrosTest, FirstErrorIsReturnedUnchanged) {
  EXPECT_EQ(Boxed(-1).status(), absl::InvalidArgumentError("negative"));
  EXPECT_EQ(DoubledBoxes(1, -2).status(),
            absl::InvalidArgumentError("negative"));
  EXPECT_EQ(DoubledBoxes(-1, 2).status(),
            absl::InvalidArgumentError("negative"));
}

}  // namespace
}  // namespace prism
