//===- RuntimeTests.cpp - unit tests of the runtime's argument checks -----===//
//
// Runs without a GPU and without a working driver: everything checked here is
// decided before any driver call, or holds for any failing driver (the stub
// library, no device). Registered with CTest and run by lit
// (test/Runtime/runtime-unit-tests.test), which also checks the printed
// messages. Prints "[ OK ] <test>" per test and "  message: <text>" for each
// error message a test produces.
//
//===----------------------------------------------------------------------===//

#include "Status.h"
#include "TensorMap.h"
#include "fusion_runtime.h"
#include "fusion_runtime_mgpu.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// A small harness
//===----------------------------------------------------------------------===//

struct TestCase {
  const char *name;
  void (*run)();
};

std::vector<TestCase> &testCases() {
  static std::vector<TestCase> cases;
  return cases;
}

struct Registrar {
  Registrar(const char *name, void (*run)()) { testCases().push_back({name, run}); }
};

int currentFailures = 0;

#define TEST(name)                                                                                 \
  void name();                                                                                     \
  Registrar registrar_##name(#name, name);                                                         \
  void name()

void fail(const char *file, int line, const std::string &what) {
  std::printf("  FAILED at %s:%d: %s\n", file, line, what.c_str());
  ++currentFailures;
}

std::string show(const std::string &value) { return "\"" + value + "\""; }
template <typename T> std::string show(T value) { return std::to_string(value); }

#define EXPECT_TRUE(cond)                                                                          \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      fail(__FILE__, __LINE__, "expected " #cond);                                                 \
  } while (0)

#define EXPECT_EQ(a, b)                                                                            \
  do {                                                                                             \
    auto valueA = (a);                                                                             \
    auto valueB = (b);                                                                             \
    if (!(valueA == valueB))                                                                       \
      fail(__FILE__, __LINE__,                                                                     \
           "expected " #a " == " #b ", but got " + show(valueA) + " and " + show(valueB));       \
  } while (0)

#define EXPECT_CONTAINS(text, needle)                                                              \
  do {                                                                                             \
    std::string haystack = (text);                                                                 \
    if (haystack.find(needle) == std::string::npos)                                                \
      fail(__FILE__, __LINE__, "expected \"" + haystack + "\" to contain \"" + (needle) + "\"");  \
  } while (0)

/// Prints the last-error message, for lit to check.
std::string printedMessage() {
  std::string message = fusionrtGetLastError();
  std::printf("  message: %s\n", message.c_str());
  return message;
}

//===----------------------------------------------------------------------===//
// Fixtures
//===----------------------------------------------------------------------===//

/// A 16-byte aligned address that is never dereferenced.
const void *kAddress = reinterpret_cast<const void *>(uintptr_t(0x7f0000001000));

/// A valid 2-D bf16 map: a 4096 x 512 tensor, 64 x 64 box, 128-byte swizzle.
fusionrtTensorMapSpec validSpec() {
  fusionrtTensorMapSpec spec;
  std::memset(&spec, 0, sizeof(spec));
  spec.dataType = FUSIONRT_DATA_TYPE_BFLOAT16;
  spec.rank = 2;
  spec.globalAddress = kAddress;
  spec.sizes[0] = 4096;
  spec.sizes[1] = 512;
  spec.strides[0] = 512;
  spec.strides[1] = 1;
  spec.boxSizes[0] = 64;
  spec.boxSizes[1] = 64;
  spec.swizzle = FUSIONRT_SWIZZLE_128B;
  return spec;
}

/// Validates `spec`, expects an invalid-argument status whose message contains
/// `expected`, and prints the message.
void expectInvalid(const fusionrtTensorMapSpec &spec, const std::string &expected) {
  EXPECT_EQ(fusionrtValidateTensorMap(&spec), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), expected);
}

/// Clears any status a previous test left.
void resetStatus() { fusionrtClearStatus(); }

/// True when the driver in this process works (never with the stub library).
bool driverWorks() {
  static const bool works = [] {
    int count = 0;
    return fusionrtGetDeviceCount(&count) == FUSIONRT_SUCCESS && count > 0;
  }();
  return works;
}

//===----------------------------------------------------------------------===//
// Status
//===----------------------------------------------------------------------===//

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
  EXPECT_EQ(fusionrt::cudaErrorName(static_cast<CUresult>(12345)), std::string("CUresult 12345"));
  EXPECT_EQ(std::string(fusionrt::builtinCudaErrorName(CUDA_ERROR_INVALID_CLUSTER_SIZE)),
            std::string("CUDA_ERROR_INVALID_CLUSTER_SIZE"));
}

//===----------------------------------------------------------------------===//
// Tensor maps through the C API
//===----------------------------------------------------------------------===//

TEST(tensor_map_valid_specs) {
  fusionrtTensorMapSpec spec = validSpec();
  EXPECT_EQ(fusionrtValidateTensorMap(&spec), FUSIONRT_SUCCESS);
  // Rank 1, no swizzle, a 16-byte row.
  fusionrtTensorMapSpec vector = validSpec();
  vector.rank = 1;
  vector.sizes[0] = 1000;
  vector.strides[0] = 1;
  vector.boxSizes[0] = 8;
  vector.swizzle = FUSIONRT_SWIZZLE_NONE;
  EXPECT_EQ(fusionrtValidateTensorMap(&vector), FUSIONRT_SUCCESS);
  // Rank 5, f32, 32-byte swizzle with an 8-element (32-byte) row.
  fusionrtTensorMapSpec five = validSpec();
  five.dataType = FUSIONRT_DATA_TYPE_FLOAT32;
  five.rank = 5;
  int64_t sizes[] = {2, 3, 4, 5, 8};
  int64_t stride = 1;
  for (int d = 4; d >= 0; --d) {
    five.sizes[d] = sizes[d];
    five.strides[d] = stride;
    five.boxSizes[d] = static_cast<int32_t>(sizes[d]);
    stride *= sizes[d];
  }
  five.swizzle = FUSIONRT_SWIZZLE_32B;
  EXPECT_EQ(fusionrtValidateTensorMap(&five), FUSIONRT_SUCCESS);
}

TEST(tensor_map_rejects_rank) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.rank = 0;
  expectInvalid(spec, "expected rank in 1..5, but got 0");
  spec.rank = 6;
  expectInvalid(spec, "expected rank in 1..5, but got 6");
}

TEST(tensor_map_rejects_element_type) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.dataType = static_cast<fusionrtDataType>(13); // CUDA 12.8's 16U4_ALIGN8B
  expectInvalid(spec, "expected element type in 0..12 (uint8 .. tfloat32_ftz), but got 13");
}

TEST(tensor_map_rejects_enum_values) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.swizzle = static_cast<fusionrtSwizzle>(4);
  expectInvalid(spec, "expected swizzle in 0..3 (none, 32B, 64B, 128B), but got 4");
  spec = validSpec();
  spec.interleave = static_cast<fusionrtInterleave>(3);
  expectInvalid(spec, "expected interleave in 0..2 (none, 16B, 32B), but got 3");
  spec = validSpec();
  spec.l2Promotion = static_cast<fusionrtL2Promotion>(-1);
  expectInvalid(spec, "expected L2 promotion in 0..3 (none, 64B, 128B, 256B), but got -1");
  spec = validSpec();
  spec.oobFill = static_cast<fusionrtOobFill>(2);
  expectInvalid(spec, "expected out-of-bounds fill in 0..1 (zero, NaN), but got 2");
}

TEST(tensor_map_rejects_misaligned_address) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.globalAddress = static_cast<const char *>(kAddress) + 8;
  expectInvalid(spec, "expected global address aligned to 16 bytes, but got 0x7f0000001008");
  spec.globalAddress = nullptr;
  expectInvalid(spec, "expected a global address, but got a null pointer");
}

TEST(tensor_map_rejects_sizes) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.sizes[1] = 0;
  expectInvalid(spec, "expected size of dimension 1 in 1..2^32, but got 0");
  spec = validSpec();
  spec.sizes[0] = (int64_t(1) << 32) + 1;
  expectInvalid(spec, "expected size of dimension 0 in 1..2^32, but got 4294967297");
}

TEST(tensor_map_rejects_strides) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.strides[0] = 500; // 1000 bytes
  expectInvalid(spec, "expected stride of dimension 0 to be a multiple of 16 bytes, but got "
                      "1000 bytes (500 elements of 2 bytes)");
  spec = validSpec();
  spec.strides[1] = 2;
  expectInvalid(spec, "expected stride 1 (contiguous) in the innermost dimension 1, but got 2");
  spec = validSpec();
  spec.strides[0] = int64_t(1) << 40;
  expectInvalid(spec, "expected stride of dimension 0 in 1..2^40 bytes, but got 1099511627776 "
                      "elements of 2 bytes");
  spec = validSpec();
  spec.strides[0] = 0;
  expectInvalid(spec, "expected stride of dimension 0 in 1..2^40 bytes, but got 0");
}

TEST(tensor_map_rejects_box_sizes) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.boxSizes[0] = 0;
  expectInvalid(spec, "expected box size of dimension 0 in 1..256, but got 0");
  spec = validSpec();
  spec.boxSizes[0] = 257;
  expectInvalid(spec, "expected box size of dimension 0 in 1..256, but got 257");
}

TEST(tensor_map_rejects_element_strides) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.elementStrides[0] = 9;
  expectInvalid(spec, "expected element stride of dimension 0 in 1..8, but got 9");
}

TEST(tensor_map_rejects_inner_box_row) {
  // 4 bf16 = 8 bytes: not a multiple of 16.
  fusionrtTensorMapSpec spec = validSpec();
  spec.boxSizes[1] = 4;
  expectInvalid(spec, "expected the inner box row to be a multiple of 16 bytes, but got 8 bytes "
                      "(box size 4 of dimension 1 x 2 bytes)");
  // 128 bf16 = 256 bytes: wider than the 128-byte swizzle span.
  spec = validSpec();
  spec.boxSizes[1] = 128;
  expectInvalid(spec, "expected the inner box row to span at most 128 bytes with 128B swizzle, "
                      "but got 256 bytes (box size 128 of dimension 1 x 2 bytes)");
  // 32 bf16 = 64 bytes: wider than the 32-byte swizzle span, fits 64B.
  spec = validSpec();
  spec.boxSizes[1] = 32;
  spec.swizzle = FUSIONRT_SWIZZLE_32B;
  expectInvalid(spec, "expected the inner box row to span at most 32 bytes with 32B swizzle, "
                      "but got 64 bytes");
  spec.swizzle = FUSIONRT_SWIZZLE_64B;
  EXPECT_EQ(fusionrtValidateTensorMap(&spec), FUSIONRT_SUCCESS);
}

TEST(tensor_map_rejects_interleave_combinations) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.interleave = FUSIONRT_INTERLEAVE_16B;
  expectInvalid(spec, "expected rank >= 3 with 16B interleave, but got 2");
  spec.rank = 3;
  spec.sizes[2] = 16;
  spec.strides[2] = 1;
  spec.strides[1] = 16;
  spec.strides[0] = 512 * 16;
  spec.boxSizes[2] = 16;
  spec.interleave = FUSIONRT_INTERLEAVE_32B;
  expectInvalid(spec, "expected 32B swizzle with 32B interleave, but got 128B");
  spec.swizzle = FUSIONRT_SWIZZLE_32B;
  EXPECT_EQ(fusionrtValidateTensorMap(&spec), FUSIONRT_SUCCESS);
  spec.globalAddress = static_cast<const char *>(kAddress) + 16;
  expectInvalid(spec, "expected global address aligned to 32 bytes");
}

TEST(tensor_map_rejects_nan_fill_for_integers) {
  fusionrtTensorMapSpec spec = validSpec();
  spec.dataType = FUSIONRT_DATA_TYPE_INT32;
  spec.boxSizes[1] = 32;
  spec.oobFill = FUSIONRT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  expectInvalid(spec, "expected a floating-point element type with the NaN out-of-bounds fill, "
                      "but got int32");
}

TEST(tensor_map_encode_validates_before_the_driver) {
  resetStatus();
  fusionrtTensorMapSpec spec = validSpec();
  spec.boxSizes[0] = 512;
  fusionrtTensorMap map;
  EXPECT_EQ(fusionrtEncodeTensorMap(&spec, &map), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(printedMessage()),
            std::string("fusionrtEncodeTensorMap: expected box size of dimension 0 in 1..256, "
                        "but got 512"));
  EXPECT_EQ(fusionrtEncodeTensorMap(&spec, nullptr), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "but got a null output");
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(tensor_map_encode_reports_the_driver) {
  const bool haveDriver = driverWorks();
  fusionrtTensorMapSpec spec = validSpec();
  fusionrtTensorMap map;
  fusionrtStatus status = fusionrtEncodeTensorMap(&spec, &map);
  // A working driver may or may not accept the made-up address; encoding real
  // allocations is tested on the GPU (test/gpu/test_runtime_gpu.py).
  if (haveDriver)
    return;
  EXPECT_EQ(status, FUSIONRT_ERROR_CUDA);
  EXPECT_CONTAINS(fusionrtGetLastError(), "fusionrtEncodeTensorMap: cuInit failed with CUDA_ERROR_");
}

TEST(data_type_sizes) {
  EXPECT_EQ(fusionrtDataTypeSize(FUSIONRT_DATA_TYPE_UINT8), 1);
  EXPECT_EQ(fusionrtDataTypeSize(FUSIONRT_DATA_TYPE_BFLOAT16), 2);
  EXPECT_EQ(fusionrtDataTypeSize(FUSIONRT_DATA_TYPE_TFLOAT32), 4);
  EXPECT_EQ(fusionrtDataTypeSize(FUSIONRT_DATA_TYPE_FLOAT64), 8);
  EXPECT_EQ(fusionrtDataTypeSize(13), 0);
  EXPECT_EQ(fusionrtDataTypeSize(-1), 0);
}

//===----------------------------------------------------------------------===//
// Tensor maps through the mgpu* ABI
//===----------------------------------------------------------------------===//

/// A rank-2 memref descriptor {allocated, aligned, offset, sizes[2], strides[2]}.
struct MemRef2 {
  int64_t words[7];
  MemRef2(const void *base, int64_t offset, int64_t rows, int64_t cols, int64_t rowStride) {
    words[0] = words[1] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(base));
    words[2] = offset;
    words[3] = rows;
    words[4] = cols;
    words[5] = rowStride;
    words[6] = 1;
  }
};

TEST(mgpu_tensor_map_records_invalid_rank) {
  resetStatus();
  MemRef2 memref(kAddress, 0, 128, 128, 128);
  int64_t box[] = {64, 64};
  void *map = mgpuTensorMapEncodeTiledMemref(7, memref.words, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                             0, 3, 0, 0, box);
  EXPECT_TRUE(map == nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(printedMessage()),
            std::string("mgpuTensorMapEncodeTiledMemref: expected rank in 1..5, but got 7"));
}

TEST(mgpu_tensor_map_reads_the_memref_offset) {
  resetStatus();
  // Offset 4 bf16 elements = 8 bytes past an aligned base: misaligned.
  MemRef2 memref(kAddress, 4, 128, 128, 128);
  int64_t box[] = {64, 64};
  EXPECT_TRUE(mgpuTensorMapEncodeTiledMemref(2, memref.words, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 0,
                                             3, 0, 0, box) == nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "expected global address aligned to 16 bytes, but got "
                                    "0x7f0000001008");
}

TEST(mgpu_tensor_map_box_sizes_are_row_major) {
  resetStatus();
  // Box {64, 128} over bf16: the inner row is 128 elements = 256 bytes.
  MemRef2 memref(kAddress, 0, 128, 128, 128);
  int64_t box[] = {64, 128};
  EXPECT_TRUE(mgpuTensorMapEncodeTiledMemref(2, memref.words, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 0,
                                             3, 0, 0, box) == nullptr);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "but got 256 bytes (box size 128 of dimension 1 x 2 bytes)");
}

TEST(mgpu_tensor_map_raw_form_is_cuda_order) {
  resetStatus();
  // CUDA order: dimension 0 innermost. Stride of (row-major) dimension 0 is 1000 bytes.
  CUtensorMap map;
  uint64_t dims[] = {512, 4096};
  uint64_t strides[] = {1000};
  uint32_t box[] = {64, 64};
  uint32_t elementStrides[] = {1, 1};
  mgpuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(kAddress),
                           dims, strides, box, elementStrides, 0, 3, 0, 0);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(printedMessage()),
            std::string("mgpuTensorMapEncodeTiled: expected stride of dimension 0 to be a "
                        "multiple of 16 bytes, but got 1000 bytes"));
  // Box of CUDA dimension 1 (row-major dimension 0) too large.
  strides[0] = 1024;
  box[1] = 300;
  mgpuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(kAddress),
                           dims, strides, box, elementStrides, 0, 3, 0, 0);
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(printedMessage(), "expected box size of dimension 0 in 1..256, but got 300");
}

//===----------------------------------------------------------------------===//
// The mgpu* entry points: skipping, releasing, launch checks
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

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

int main() {
  int failedTests = 0;
  for (const TestCase &test : testCases()) {
    currentFailures = 0;
    std::printf("[ RUN ] %s\n", test.name);
    test.run();
    std::printf("[ %s ] %s\n", currentFailures ? "FAILED" : "OK", test.name);
    failedTests += currentFailures ? 1 : 0;
  }
  if (failedTests) {
    std::printf("%d of %zu runtime tests failed\n", failedTests, testCases().size());
    return 1;
  }
  std::printf("all %zu runtime tests passed\n", testCases().size());
  return 0;
}
