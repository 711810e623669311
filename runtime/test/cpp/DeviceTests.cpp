//===- DeviceTests.cpp - device selection and queries ---------------------===//
//
// Device queries check their arguments, device selection is per thread,
// fusionrtInit reports cuInit without a driver.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include <thread>

using namespace fusionrt_test;

namespace {

/// This file's place in the run (Harness.h).
constexpr int kSuiteOrder = 3;

TEST(device_queries_check_arguments) {
  EXPECT_EQ(fusionrtGetDeviceInfo(0, nullptr), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "fusionrtGetDeviceInfo: expected a fusionrtDeviceInfo to "
                                    "fill, but got a null pointer");
  fusionrtDeviceInfo info;
  EXPECT_EQ(fusionrtGetDeviceInfo(-1, &info), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "expected device ordinal >= 0, but got -1");
  EXPECT_EQ(fusionrtGetDeviceCount(nullptr), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fusionrtSetDevice(-2), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "fusionrtSetDevice: expected device ordinal >= 0, but got -2");
  EXPECT_EQ(fusionrtInit(-1), FUSIONRT_ERROR_INVALID_ARGUMENT);
}

TEST(device_selection_is_per_thread) {
  EXPECT_EQ(fusionrtSetDevice(3), FUSIONRT_SUCCESS);
  int otherThreadDevice = -1;
  std::thread other([&] { otherThreadDevice = fusionrtGetDevice(); });
  other.join();
  EXPECT_EQ(fusionrtGetDevice(), 3);
  EXPECT_EQ(otherThreadDevice, 0);
  mgpuSetDefaultDevice(0);
  EXPECT_EQ(fusionrtGetDevice(), 0);
}

TEST(init_without_driver_reports_cuinit) {
  const bool haveDriver = driverWorks();
  fusionrtStatus status = fusionrtInit(0);
  if (haveDriver) {
    EXPECT_EQ(status, FUSIONRT_SUCCESS);
    return;
  }
  EXPECT_EQ(status, FUSIONRT_ERROR_CUDA);
  EXPECT_CONTAINS(fusionrtGetLastError(), "fusionrtInit: cuInit failed with CUDA_ERROR_");
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

} // namespace
