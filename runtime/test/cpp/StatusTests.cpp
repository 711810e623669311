//===- StatusTests.cpp - status recording and error names -----------------===//
//
// The per-thread pending status: the first failure is kept until cleared,
// each thread has its own, the C API returns its errors instead, driver
// failures are formatted with the call and the CUDA error name.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include <thread>

using namespace fusionrt_test;

namespace {

/// This file's place in the run (Harness.h).
constexpr int kSuiteOrder = 0;

TEST(status_names) {
  EXPECT_EQ(std::string(fusionrtStatusName(FUSIONRT_SUCCESS)), std::string("success"));
  EXPECT_EQ(std::string(fusionrtStatusName(FUSIONRT_ERROR_INVALID_ARGUMENT)),
            std::string("invalid argument"));
  EXPECT_EQ(std::string(fusionrtStatusName(FUSIONRT_ERROR_CUDA)), std::string("CUDA error"));
  EXPECT_EQ(std::string(fusionrtStatusName(static_cast<fusionrtStatus>(99))),
            std::string("unknown status"));
}

TEST(status_keeps_first_failure_until_cleared) {
  resetStatus();
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
  fusionrt::recordFailure(FUSIONRT_ERROR_CUDA, "first failure");
  fusionrt::recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT, "second failure");
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_ERROR_CUDA);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_ERROR_CUDA);
  EXPECT_EQ(std::string(fusionrtGetLastError()), std::string("first failure"));
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_CUDA);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_SUCCESS);
  // The text outlives the clear; the next failure replaces it.
  EXPECT_EQ(std::string(fusionrtGetLastError()), std::string("first failure"));
  fusionrt::recordFailure(FUSIONRT_ERROR_LIMIT_EXCEEDED, "third failure");
  EXPECT_EQ(std::string(fusionrtGetLastError()), std::string("third failure"));
  resetStatus();
}

TEST(status_is_per_thread) {
  resetStatus();
  fusionrtStatus seenByOtherThread = FUSIONRT_SUCCESS;
  std::thread other([&] {
    fusionrt::recordFailure(FUSIONRT_ERROR_CUDA, "failure on another thread");
    seenByOtherThread = fusionrtPeekStatus();
  });
  other.join();
  EXPECT_EQ(seenByOtherThread, FUSIONRT_ERROR_CUDA);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(c_api_errors_are_returned_not_pending) {
  resetStatus();
  EXPECT_EQ(fusionrtValidateTensorMap(nullptr), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "fusionrtValidateTensorMap: expected a tensor-map spec");
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(driver_failures_are_formatted_with_the_call_and_error_name) {
  resetStatus();
  EXPECT_TRUE(fusionrt::recordIfFailed(CUDA_ERROR_INVALID_VALUE, "mgpuLaunchKernel",
                                       "cuLaunchKernel", "kernel 'k'"));
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_CUDA);
  EXPECT_EQ(std::string(printedMessage()),
            std::string("mgpuLaunchKernel: cuLaunchKernel failed with CUDA_ERROR_INVALID_VALUE "
                        "(kernel 'k')"));
  EXPECT_TRUE(!fusionrt::recordIfFailed(CUDA_SUCCESS, "mgpuLaunchKernel", "cuLaunchKernel"));
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(cuda_error_names) {
  EXPECT_EQ(fusionrt::cudaErrorName(CUDA_ERROR_INVALID_VALUE),
            std::string("CUDA_ERROR_INVALID_VALUE"));
  EXPECT_EQ(fusionrt::cudaErrorName(CUDA_ERROR_DEINITIALIZED),
            std::string("CUDA_ERROR_DEINITIALIZED"));
  EXPECT_EQ(fusionrt::cudaErrorName(CUDA_ERROR_STUB_LIBRARY),
            std::string("CUDA_ERROR_STUB_LIBRARY"));
  // A code the driver might add later: unnamed, but inside CUresult's range
  // (0..1023; a cast from beyond it would be undefined behavior in C++).
  EXPECT_EQ(fusionrt::cudaErrorName(static_cast<CUresult>(998)), std::string("CUresult 998"));
  EXPECT_EQ(std::string(fusionrt::builtinCudaErrorName(CUDA_ERROR_INVALID_CLUSTER_SIZE)),
            std::string("CUDA_ERROR_INVALID_CLUSTER_SIZE"));
}

} // namespace
