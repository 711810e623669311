//===- GemmKernelLayoutTest.cpp - the fused GEMM's tensor-memory plan -----===//
//
// Unit tests of planGemmTensorMemory (include/fusion/Target/NVPTX/
// GemmKernelLayout.h; suite gemm_kernel_layout of fusion-target-tests, run
// by gemm-kernel-layout.test): the accumulator's columns per stage, the
// stages that fit sm_100a's 512 tensor-memory columns and the power-of-two
// allocation, the refusal's message, sizes read from a user's
// #fusion.kernel_config that overflow int64 (the fuzzer's tile_m =
// INT64_MAX, which wrapped before the sum saturated), a target without
// tensor memory; and getGemmSmemLayout's row-dot grad epilogue (y's tile in
// each stage, no norm_input tile, the vectors' 128-byte aligned slots).
//
//===----------------------------------------------------------------------===//

#include "UnitTest.h"

#include "fusion/Target/NVPTX/GemmKernelLayout.h"
#include "fusion/Target/NVPTX/TargetInfo.h"

#include <limits>

using namespace mlir::fusion;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

/// The plan on sm_100a, or its refusal's message.
struct Plan {
  std::optional<GemmTensorMemory> memory;
  std::string why;
};
Plan plan(int64_t tileM, int64_t tileN, const char *chip = "sm_100a") {
  Plan p;
  p.memory = planGemmTensorMemory(*getTargetInfo(chip), tileM, tileN, p.why);
  return p;
}
std::optional<std::string> refusal(const Plan &p) {
  if (p.memory)
    return std::nullopt;
  return p.why;
}

// Two accumulator stages where they fit, one where only one does; the
// allocation is the next power of two of at least 32 columns.
TEST(gemm_kernel_layout, tensor_memory_stages_and_allocation) {
  struct Case {
    int64_t tileM, tileN, columns, stages, alloc;
  } cases[] = {
      {128, 64, 64, 2, 128},   {128, 128, 128, 2, 256}, {128, 256, 256, 2, 512},
      {64, 256, 256, 2, 512},  {128, 384, 384, 1, 512}, {128, 512, 512, 1, 512},
      {256, 256, 512, 1, 512}, {128, 8, 8, 2, 32},
  };
  for (const Case &c : cases) {
    Plan p = plan(c.tileM, c.tileN);
    EXPECT_NONE(refusal(p));
    if (!p.memory)
      continue;
    EXPECT_INT(p.memory->columnsPerStage, c.columns);
    EXPECT_INT(p.memory->stages, c.stages);
    EXPECT_INT(p.memory->allocColumns, c.alloc);
  }
}

TEST(gemm_kernel_layout, tensor_memory_refusals) {
  EXPECT_MESSAGE(refusal(plan(128, 520)),
                 "expected the f32 accumulator of a 128x520 tile to fit the 512 "
                 "tensor-memory columns of sm_100a (one accumulator stage of 1 x "
                 "tile_n columns, two where they fit), but one stage needs 520");
  EXPECT_MESSAGE(refusal(plan(384, 256)),
                 "expected the f32 accumulator of a 384x256 tile to fit the 512 "
                 "tensor-memory columns of sm_100a (one accumulator stage of 3 x "
                 "tile_n columns, two where they fit), but one stage needs 768");
}

// Sizes that overflow int64 saturate: refused with INT64_MAX columns, never
// wrapped into a small count that fits (tile_m + 127 wrapped negative and
// planned one block of 256 columns).
TEST(gemm_kernel_layout, tensor_memory_saturates) {
  EXPECT_MESSAGE(refusal(plan(kMax, 256)),
                 "expected the f32 accumulator of a 9223372036854775807x256 tile to "
                 "fit the 512 tensor-memory columns of sm_100a (one accumulator stage "
                 "of 72057594037927935 x tile_n columns, two where they fit), but one "
                 "stage needs 9223372036854775807");
  EXPECT_MESSAGE(refusal(plan(kMax - 100, 8)),
                 "expected the f32 accumulator of a 9223372036854775707x8 tile to "
                 "fit the 512 tensor-memory columns of sm_100a (one accumulator stage "
                 "of 72057594037927935 x tile_n columns, two where they fit), but one "
                 "stage needs 576460752303423480");
  EXPECT_TRUE(!plan(128, kMax).memory);
}

/// A 16-bit grad epilogue at tile_n 256 in the consumers, 3 stages.
GemmSmemParams gradParams(bool rowDot, int64_t vectors) {
  GemmSmemParams p;
  p.tileN = 256;
  p.stages = 3;
  p.grad = true;
  p.normInputElementBytes = 2;
  p.rowDot = rowDot;
  p.rowDotVectors = vectors;
  p.prologueRowStats = vectors == 2 ? 2 : 1;
  return p;
}

// The row dot: each stage holds A's, B's and y's tiles (16 + 32 + 16 KB,
// 1024-byte multiples so every swizzled tile stays aligned); the epilogue
// keeps no norm_input tile (the tile comes through a ring slot); the
// kernel the planner picks at H = 1024 needs 230912 bytes.
TEST(gemm_kernel_layout, row_dot_stages) {
  GemmSmemLayout plain = getGemmSmemLayout(gradParams(false, 0));
  GemmSmemLayout dot = getGemmSmemLayout(gradParams(true, 0));
  EXPECT_INT(plain.stageBytes(), 16384 + 32768);
  EXPECT_INT(dot.stageBytes(), 16384 + 32768 + 16384);
  EXPECT_INT(dot.stageBytes() % 1024, 0);
  EXPECT_INT(plain.normInputBytes, 128 * 256 * 2);
  EXPECT_INT(dot.normInputBytes, 0);
  EXPECT_INT(dot.rowDotVectorsBytes, 0);
  EXPECT_INT(dot.totalBytes, 230912);
}

// Its vectors: 64 16-bit columns per vector and stage, after every other
// region, 128-byte aligned (TMA without swizzle); LayerNorm's two fit 3
// stages in sm_90a's 232448 bytes.
TEST(gemm_kernel_layout, row_dot_vectors) {
  for (int64_t vectors : {int64_t{1}, int64_t{2}}) {
    GemmSmemLayout l = getGemmSmemLayout(gradParams(true, vectors));
    EXPECT_INT(l.rowDotVectorsOffset % 128, 0);
    EXPECT_TRUE(l.rowDotVectorsOffset >= l.clusterSlotsOffset + l.clusterSlotsBytes);
    EXPECT_INT(l.rowDotVectorsBytes, 3 * vectors * 128);
    EXPECT_INT(l.totalBytes,
               l.rowDotVectorsOffset + l.rowDotVectorsBytes + GemmTiling::kSmemAlignment);
  }
  EXPECT_INT(getGemmSmemLayout(gradParams(true, 2)).totalBytes, 232192);
  EXPECT_TRUE(getGemmSmemLayout(gradParams(true, 2)).totalBytes <=
              getTargetInfo("sm_90a")->smemPerBlockOptin);
  // Saturated sizes stay saturated (a user's #fusion.kernel_config).
  GemmSmemParams huge = gradParams(true, 2);
  huge.stages = kMax;
  EXPECT_INT(getGemmSmemLayout(huge).totalBytes, kMax);
}

// Without tensor memory (sm_90a's register accumulators) nothing is planned
// or refused, whatever the sizes.
TEST(gemm_kernel_layout, no_tensor_memory) {
  for (int64_t tileM : {int64_t{128}, kMax}) {
    Plan p = plan(tileM, 256, "sm_90a");
    EXPECT_NONE(refusal(p));
    if (p.memory)
      EXPECT_INT(p.memory->stages, 0);
  }
}
} // namespace
