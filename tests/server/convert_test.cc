#include "server/core/infra/convert.h"

#include "gtest/gtest.h"
#include "scheduler/analysis/principle_analysis.h"

namespace prism::server {
namespace {

TEST(PrincipleEffectToProtoTest, AnEstimatedEffectCarriesItsInterval) {
  PrincipleEffect e;
  e.principle = Principle::kPow2;
  e.status = EffectStatus::kEstimated;
  e.satisfied = 4;
  e.violated = 2;
  e.effect = 0.25;
  e.standard_error = 0.0625;
  e.low = 0.125;
  e.high = 0.375;
  e.p_value = 0.01;
  e.dof = 3;
  const v1::PrincipleEffect out = PrincipleEffectToProto(e);
  EXPECT_EQ(out.principle(), v1::PRINCIPLE_POW2);
  EXPECT_EQ(out.status(), v1::EFFECT_ESTIMATED);
  ASSERT_TRUE(out.has_effect());
  EXPECT_EQ(out.effect().mean(), 0.25);
  EXPECT_EQ(out.effect().low(), 0.125);
  EXPECT_EQ(out.effect().high(), 0.375);
  EXPECT_EQ(out.effect().n(), 6);
  EXPECT_EQ(out.standard_error(), 0.0625);
  EXPECT_EQ(out.p_value(), 0.01);
  EXPECT_EQ(out.dof(), 3);
  EXPECT_EQ(out.note(), "");
}

TEST(PrincipleEffectToProtoTest, ANotEstimableEffectHasNoNumbersButItsReason) {
  PrincipleEffect e;
  e.principle = Principle::kSmooth;
  e.status = EffectStatus::kNotSeparable;
  e.satisfied = 3;
  e.violated = 3;
  e.note = "smooth and pow2 co-vary completely: effects not separable";
  const v1::PrincipleEffect out = PrincipleEffectToProto(e);
  EXPECT_EQ(out.status(), v1::EFFECT_NOT_SEPARABLE);
  EXPECT_FALSE(out.has_effect());
  EXPECT_FALSE(out.has_standard_error());
  EXPECT_FALSE(out.has_p_value());
  EXPECT_EQ(out.note(), e.note);
  EXPECT_EQ(out.violated(), 3);
}

TEST(PrincipleEffectToProtoTest, EveryStatusHasAWireValue) {
  for (EffectStatus s :
       {EffectStatus::kEstimated, EffectStatus::kNothingViolates,
        EffectStatus::kEverythingViolates, EffectStatus::kNotSeparable,
        EffectStatus::kTooFewSchedules}) {
    EXPECT_NE(EffectStatusToProto(s), v1::EFFECT_STATUS_UNSPECIFIED);
  }
}

}  // namespace
}  // namespace prism::server
