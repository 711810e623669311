//===- EntryPointTests.cpp - the mgpu* entry points -----------------------===//
//
// The mgpu* entry points and the grid-size queries: work skipped while a
// failure is pending, release calls on null handles, launch-shape and
// module-argument checks, driver failures becoming the pending status.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

using namespace fusionrt_test;

namespace {

/// This file's place in the run (Harness.h).
constexpr int kSuiteOrder = 2;

TEST(pending_failure_skips_work) {
  resetStatus();
  fusionrt::recordFailure(FUSIONRT_ERROR_CUDA, "earlier failure");
  EXPECT_TRUE(mgpuMemAlloc(1024, nullptr, false) == nullptr);
  EXPECT_TRUE(mgpuStreamCreate() == nullptr);
  EXPECT_TRUE(mgpuEventCreate() == nullptr);
  EXPECT_TRUE(mgpuModuleLoad(const_cast<char *>("image"), 5) == nullptr);
  EXPECT_TRUE(mgpuModuleGetFunction(nullptr, "k") == nullptr);
  mgpuLaunchKernel(nullptr, 0, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr, 0);
  int64_t box[] = {64};
  EXPECT_TRUE(mgpuTensorMapEncodeTiledMemref(9, nullptr, 0, 0, 0, 0, 0, box) == nullptr);
  // Nothing replaced the first failure, though each call above would fail.
  EXPECT_EQ(std::string(fusionrtGetLastError()), std::string("earlier failure"));
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_CUDA);
  // Cleared: work resumes, and the same call records its own failure.
  EXPECT_TRUE(mgpuTensorMapEncodeTiledMemref(9, nullptr, 0, 0, 0, 0, 0, box) == nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "mgpuTensorMapEncodeTiledMemref: expected a memref descriptor");
}

TEST(multiprocessor_count_falls_back_to_one_with_the_failure_pending) {
  resetStatus();
  int32_t count = fusionrtMultiprocessorCount();
  if (driverWorks()) {
    EXPECT_TRUE(count >= 1);
    EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
    return;
  }
  // No driver: a grid of one CTA is still correct for a persistent kernel,
  // and the launch that follows reports the failure.
  EXPECT_EQ(count, 1);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_CUDA);
  EXPECT_CONTAINS(printedMessage(), "fusionrtMultiprocessorCount");
}

/// The pending failure of a grid-size query for kernel 'no_such_kernel':
/// without a driver, the context; with one, the lookup.
void expectUnknownKernelFailure(const char *entryPoint) {
  fusionrtStatus status = fusionrtClearStatus();
  if (driverWorks()) {
    EXPECT_EQ(status, FUSIONRT_ERROR_INVALID_ARGUMENT);
    EXPECT_CONTAINS(printedMessage(), "expected a loaded module with kernel 'no_such_kernel'");
  } else {
    EXPECT_EQ(status, FUSIONRT_ERROR_CUDA);
    EXPECT_CONTAINS(printedMessage(), entryPoint);
  }
}

TEST(max_active_clusters_checks_the_name_then_falls_back_to_one) {
  resetStatus();
  EXPECT_EQ(fusionrtMaxActiveClusters(nullptr, 4, 384, 1024), 1);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(),
                  "fusionrtMaxActiveClusters: expected a kernel name, but got a null pointer");
  int32_t count = fusionrtMaxActiveClusters("no_such_kernel", 4, 384, 1024);
  // A grid of one cluster is still correct for a persistent cluster kernel;
  // the failure (no driver, or no loaded module with the kernel) is pending.
  EXPECT_EQ(count, 1);
  expectUnknownKernelFailure("fusionrtMaxActiveClusters");
}

TEST(cooperative_grid_limit_checks_the_name_then_falls_back_to_one) {
  resetStatus();
  EXPECT_EQ(fusionrtCooperativeGridLimit(nullptr, 384, 1024, 1), 1);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(),
                  "fusionrtCooperativeGridLimit: expected a kernel name, but got a null pointer");
  EXPECT_EQ(fusionrtCooperativeGridLimit("no_such_kernel", 384, 1024, 1), 1);
  expectUnknownKernelFailure("fusionrtCooperativeGridLimit");
}

TEST(release_calls_accept_null_handles) {
  resetStatus();
  mgpuModuleUnload(nullptr);
  mgpuMemFree(nullptr, nullptr);
  mgpuStreamDestroy(nullptr);
  mgpuEventDestroy(nullptr);
  mgpuEventSynchronize(nullptr);
  mgpuMemHostUnregister(nullptr);
  mgpuMemHostUnregisterMemRef(2, nullptr, 4);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(stream_allocation_without_driver_is_a_pending_failure) {
  // The pooled path starts like cuMemAlloc: the context first, and its
  // failure names the entry point. Nothing is cached yet, so the release of
  // the cache has nothing to do. (The GPU tests cover a working driver.)
  if (driverWorks())
    return;
  resetStatus();
  int marker = 0;
  EXPECT_TRUE(mgpuMemAlloc(1024, &marker, false) == nullptr);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_ERROR_CUDA);
  EXPECT_CONTAINS(fusionrtGetLastError(), "mgpuMemAlloc: ");
  resetStatus();
  EXPECT_EQ(fusionrtReleaseCachedMemory(), FUSIONRT_SUCCESS);
}

TEST(call_stream_is_used_and_left_alone) {
  // While a call stream is set, the compiled code's stream is the caller's:
  // creating returns it, and synchronizing or destroying it does nothing (no
  // driver call, so this runs without a GPU). The null stream is taken as
  // the explicit legacy handle.
  resetStatus();
  int marker = 0;
  EXPECT_EQ(fusionrtSetCallStream(&marker), FUSIONRT_SUCCESS);
  EXPECT_TRUE(mgpuStreamCreate() == static_cast<void *>(&marker));
  mgpuStreamSynchronize(&marker);
  mgpuStreamDestroy(&marker);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
  EXPECT_EQ(fusionrtSetCallStream(nullptr), FUSIONRT_SUCCESS);
  EXPECT_TRUE(mgpuStreamCreate() == static_cast<void *>(CU_STREAM_LEGACY));
  EXPECT_EQ(fusionrtClearCallStream(), FUSIONRT_SUCCESS);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
  if (driverWorks())
    return;
  // Cleared: a stream is created again, which needs the driver.
  EXPECT_TRUE(mgpuStreamCreate() == nullptr);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_ERROR_CUDA);
  EXPECT_CONTAINS(fusionrtGetLastError(), "mgpuStreamCreate: ");
  resetStatus();
}

TEST(zero_sized_work_needs_no_driver) {
  resetStatus();
  EXPECT_TRUE(mgpuMemAlloc(0, nullptr, false) == nullptr);
  mgpuMemcpy(nullptr, nullptr, 0, nullptr);
  mgpuMemset32(nullptr, 0, 0, nullptr);
  mgpuMemset16(nullptr, 0, 0, nullptr);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(launch_rejects_null_function) {
  resetStatus();
  mgpuLaunchKernel(nullptr, 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(),
                  "mgpuLaunchKernel: expected a kernel, but got a null function");
}

TEST(launch_rejects_bad_shapes) {
  // A function handle the runtime never hands to the driver: the checks fail first.
  void *function = reinterpret_cast<void *>(uintptr_t(0x1000));
  resetStatus();
  mgpuLaunchKernel(function, 0, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(printedMessage()),
            std::string("mgpuLaunchKernel: expected grid dimensions >= 1, but got 0x1x1 (kernel "
                        "'<unknown>', grid 0x1x1, block 128x1x1, dynamic shared memory 0 bytes)"));
  mgpuLaunchKernel(function, int64_t(1) << 32, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "expected grid dimensions < 2^32, but got 4294967296x1x1");
  mgpuLaunchKernel(function, 1, 1, 1, 128, 1, 1, -1, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "expected dynamic shared memory >= 0 bytes, but got -1");
  mgpuLaunchClusterKernel(function, 4, 1, 1, 6, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "mgpuLaunchClusterKernel: expected grid x to be a multiple "
                                    "of cluster x = 4, but got 6 (kernel '<unknown>', cluster "
                                    "4x1x1, grid 6x1x1");
  mgpuLaunchClusterKernel(function, 0, 1, 1, 6, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "expected cluster dimensions >= 1, but got 0x1x1");
}

TEST(module_calls_reject_null_arguments) {
  resetStatus();
  EXPECT_TRUE(mgpuModuleLoad(nullptr, 0) == nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "mgpuModuleLoad: expected a device image, but got a null");
  EXPECT_TRUE(mgpuModuleLoadJIT(const_cast<char *>("ptx"), 7) == nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "expected JIT optimization level in 0..4, but got 7");
  EXPECT_TRUE(mgpuModuleGetFunction(nullptr, "gemm") == nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "a null module (was the image loaded?) and kernel 'gemm'");
}

TEST(host_register_memref_checks_its_descriptor) {
  resetStatus();
  mgpuMemHostRegisterMemRef(-1, nullptr, 4);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "mgpuMemHostRegisterMemRef: expected a memref descriptor, "
                                    "rank >= 0 and element size >= 1, but got a null descriptor");
}

TEST(driver_failure_becomes_pending_status) {
  const bool haveDriver = driverWorks();
  resetStatus();
  void *stream = mgpuStreamCreate();
  if (haveDriver) {
    EXPECT_TRUE(stream != nullptr);
    mgpuStreamDestroy(stream);
    EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
    return;
  }
  EXPECT_TRUE(stream == nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_CUDA);
  EXPECT_CONTAINS(fusionrtGetLastError(), "mgpuStreamCreate: cuInit failed with CUDA_ERROR_");
  EXPECT_CONTAINS(fusionrtGetLastError(), "(device 0)");
}

} // namespace
