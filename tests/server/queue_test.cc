#include "server/core/queue/queue.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::server {
namespace {

v1::Budget Cadence(int64_t steps, int log_every, int eval_every) {
  v1::Budget budget;
  budget.set_steps(steps);
  budget.set_log_every(log_every);
  budget.set_eval_every(eval_every);
  return budget;
}

TEST(CurveCompleteThroughTest, IsTheStepBeforeTheFirstMissingPoint) {
  const v1::Budget b = Cadence(60, 5, 10);
  EXPECT_EQ(CurveCompleteThrough(b, {-1, -1}), 0);
  EXPECT_EQ(CurveCompleteThrough(b, {-1, 0}), 4);    // train 5 is next
  EXPECT_EQ(CurveCompleteThrough(b, {35, 30}), 39);  // train and val 40
  EXPECT_EQ(CurveCompleteThrough(b, {40, 30}), 39);  // val 40 is missing
  EXPECT_EQ(CurveCompleteThrough(b, {35, 20}), 29);  // val 30 is missing
  EXPECT_EQ(CurveCompleteThrough(b, {60, 60}), 60);  // all of it
  // The last step is on both cadences, whatever the period.
  const v1::Budget odd = Cadence(63, 5, 10);
  EXPECT_EQ(CurveCompleteThrough(odd, {60, 60}), 62);
  EXPECT_EQ(CurveCompleteThrough(odd, {63, 60}), 62);
  EXPECT_EQ(CurveCompleteThrough(odd, {63, 63}), 63);
}

}  // namespace
}  // namespace prism::server
