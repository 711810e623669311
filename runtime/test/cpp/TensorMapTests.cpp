//===- TensorMapTests.cpp - tensor-map checks -----------------------------===//
//
// Every tensor-map rule, through the C API (fusionrtValidateTensorMap,
// fusionrtEncodeTensorMap) and through the mgpu* forms that MLIR calls
// (memref and CUDA order); each names the dimension and both values.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

using namespace fusionrt_test;

namespace {

/// This file's place in the run (Harness.h).
constexpr int kSuiteOrder = 1;

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
  // allocations is tested on the GPU (runtime/test/gpu/test_runtime_gpu.py).
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

} // namespace
