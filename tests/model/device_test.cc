#include "model/device.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::model {
namespace {

using ::testing::HasSubstr;

TEST(DeviceTest, CpuResolvesToCpuInAnyCase) {
  EXPECT_EQ(*ResolveDevice("cpu"), "cpu");
  EXPECT_EQ(*ResolveDevice("CPU"), "cpu");
}

TEST(DeviceTest, AutoPicksTheFirstCudaDeviceWhenThereIsOne) {
  const std::string expected = CudaDeviceCount() > 0 ? "cuda:0" : "cpu";
  EXPECT_EQ(*ResolveDevice("auto"), expected);
  EXPECT_EQ(*ResolveDevice(""), expected);
}

TEST(DeviceTest, UnknownNamesAreInvalidArguments) {
  for (const char* name : {"tpu", "cuda:", "cuda:x", "cuda:-1", "gpu0"}) {
    absl::StatusOr<std::string> device = ResolveDevice(name);
    EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument)
        << name;
    EXPECT_THAT(device.status().message(),
                HasSubstr("use auto, cpu, cuda or cuda:N"));
  }
}

TEST(DeviceTest, CudaIsCheckedAgainstTheDevicesPresent) {
  const int count = CudaDeviceCount();
  EXPECT_GE(count, 0);
  if (count == 0) {
    EXPECT_EQ(ResolveDevice("cuda").status().code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(ResolveDevice("cuda:0").status().code(),
              absl::StatusCode::kFailedPrecondition);
    return;
  }
  EXPECT_EQ(*ResolveDevice("cuda"), "cuda:0");
  EXPECT_EQ(*ResolveDevice(absl::StrCat("CUDA:", count - 1)),
            absl::StrCat("cuda:", count - 1));
  absl::StatusOr<std::string> past =
      ResolveDevice(absl::StrCat("cuda:", count));
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(past.status().message(), HasSubstr("CUDA device(s)"));
}

}  // namespace
}  // namespace prism::model
