//===- MmaDescriptorsTest.cpp - descriptor encodings, field by field ------===//
//
// Unit tests of include/fusion/Target/NVPTX/MmaDescriptors.h (suite
// mma_descriptors of fusion-target-tests, run by mma-descriptors.test): the vectors of
// docs/SM100A.md section 2 (from the PTX ISA's tables and CUTLASS), each
// field at its bits, the sm_100 descriptor as the sm_90 one plus bit 46, the
// sm_90 descriptors of kernels that run on the H200, and every refusal's
// message. Prints one line per test and exits non-zero on any failure.
//
//===----------------------------------------------------------------------===//

#include "UnitTest.h"

#include "fusion/Target/NVPTX/MmaDescriptors.h"

using namespace mlir::fusion;

namespace {

SmemDescriptorFields fields(uint32_t start, uint32_t leading, uint32_t stride,
                            SmemSwizzle swizzle = SmemSwizzle::Bytes128,
                            uint32_t base = 0) {
  return {start, leading, stride, base, swizzle};
}

// docs/SM100A.md 2.1: a K-major A tile at 0x400 (LBO 16, SBO 1024, 128-byte
// swizzle) and an MN-major B tile at 0x8400 (LBO 8192: the next 64-column
// atom; SBO 1024: 8 K rows).
TEST(mma_descriptors, smem_descriptor_vectors) {
  auto a = fields(0x400, 16, 1024), b = fields(0x8400, 8192, 1024);
  EXPECT_NONE(checkSmemDescriptor(a));
  EXPECT_NONE(checkSmemDescriptor(b));
  EXPECT_EQ(tcgen05SmemDescriptor(a), 0x4000404000010040ull);
  EXPECT_EQ(wgmmaSmemDescriptor(a), 0x4000004000010040ull);
  EXPECT_EQ(tcgen05SmemDescriptor(b), 0x4000404002000840ull);
}

// The constants nvgpu.warpgroup.generate.descriptor puts into the sm_90a
// kernels that run correctly on the H200 (PTX of bert_postnorm_h768:
// `or.b64 %rd, %rd, 4611686293372403712` and `... 4611686293338849280`,
// the start address added at run time): 128-byte swizzle, SBO 1024, LBO
// 16384 and 8192. tcgen05's are the same with bit 46.
TEST(mma_descriptors, smem_descriptor_matches_the_h200_kernels) {
  EXPECT_EQ(wgmmaSmemDescriptor(fields(0, 16384, 1024)), 4611686293372403712ull);
  EXPECT_EQ(wgmmaSmemDescriptor(fields(0, 8192, 1024)), 4611686293338849280ull);
  EXPECT_EQ(tcgen05SmemDescriptor(fields(0, 16384, 1024)),
            4611686293372403712ull | 1ull << 46);
}

TEST(mma_descriptors, smem_descriptor_fields_at_their_bits) {
  EXPECT_EQ(wgmmaSmemDescriptor(fields(0x3FFF0, 0, 0, SmemSwizzle::None)), 0x3FFFull);
  EXPECT_EQ(wgmmaSmemDescriptor(fields(0, 0x3FFF0, 0, SmemSwizzle::None)), 0x3FFFull << 16);
  EXPECT_EQ(wgmmaSmemDescriptor(fields(0, 0, 0x3FFF0, SmemSwizzle::None)), 0x3FFFull << 32);
  EXPECT_EQ(wgmmaSmemDescriptor(fields(0, 0, 0, SmemSwizzle::None, 7)), 7ull << 49);
  // wgmma: 2 bits at 62-63 (1 128B, 2 64B, 3 32B); tcgen05: 3 bits at 61-63
  // (2 128B, 4 64B, 6 32B) and the version at 46.
  EXPECT_EQ(wgmmaSmemDescriptor(fields(0, 0, 0, SmemSwizzle::Bytes128)), 1ull << 62);
  EXPECT_EQ(wgmmaSmemDescriptor(fields(0, 0, 0, SmemSwizzle::Bytes64)), 2ull << 62);
  EXPECT_EQ(wgmmaSmemDescriptor(fields(0, 0, 0, SmemSwizzle::Bytes32)), 3ull << 62);
  EXPECT_EQ(tcgen05SmemDescriptor(fields(0, 0, 0, SmemSwizzle::None)), 1ull << 46);
  EXPECT_EQ(tcgen05SmemDescriptor(fields(0, 0, 0, SmemSwizzle::Bytes128)),
            1ull << 46 | 2ull << 61);
  EXPECT_EQ(tcgen05SmemDescriptor(fields(0, 0, 0, SmemSwizzle::Bytes64)),
            1ull << 46 | 4ull << 61);
  EXPECT_EQ(tcgen05SmemDescriptor(fields(0, 0, 0, SmemSwizzle::Bytes32)),
            1ull << 46 | 6ull << 61);
}

// The sm_100 descriptor is the sm_90 one with bit 46, for every swizzle and
// both majors' offsets, across the addresses a k16 step advances through.
TEST(mma_descriptors, tcgen05_descriptor_is_wgmma_plus_bit_46) {
  for (SmemSwizzle s : {SmemSwizzle::None, SmemSwizzle::Bytes128, SmemSwizzle::Bytes64,
                        SmemSwizzle::Bytes32})
    for (uint32_t start = 0; start < 0x3FFFF; start += 0x1230)
      for (auto [lbo, sbo] : {std::pair<uint32_t, uint32_t>{16, 1024}, {8192, 1024},
                              {16384, 1024}, {0, 512}}) {
        auto f = fields(start & ~0xFu, lbo, sbo, s, (start >> 7) & 7);
        EXPECT_EQ(tcgen05SmemDescriptor(f), wgmmaSmemDescriptor(f) | 1ull << 46);
      }
}

TEST(mma_descriptors, smem_descriptor_refusals) {
  EXPECT_MESSAGE(checkSmemDescriptor(fields(0x408, 16, 1024)),
                 "expected the start address to be a multiple of 16 bytes (descriptors "
                 "hold bytes >> 4), but got 1032");
  EXPECT_MESSAGE(checkSmemDescriptor(fields(0x40000, 16, 1024)),
                 "expected the start address below 262144 bytes (14 bits of bytes >> "
                 "4), but got 262144");
  EXPECT_MESSAGE(checkSmemDescriptor(fields(0, 24, 1024)),
                 "expected the leading byte offset to be a multiple of 16 bytes "
                 "(descriptors hold bytes >> 4), but got 24");
  EXPECT_MESSAGE(checkSmemDescriptor(fields(0, 16, 1 << 18)),
                 "expected the stride byte offset below 262144 bytes (14 bits of bytes "
                 ">> 4), but got 262144");
  EXPECT_MESSAGE(checkSmemDescriptor(fields(0, 16, 1024, SmemSwizzle::Bytes128, 8)),
                 "expected a base offset below 8 (3 bits), but got 8");
}

Tcgen05InstrFields instr(int64_t m, int64_t n, OperandMajor bMajor = OperandMajor::K,
                         MmaInputType t = MmaInputType::BF16, bool pair = false) {
  Tcgen05InstrFields f;
  f.a = f.b = t;
  f.m = m;
  f.n = n;
  f.bMajor = bMajor;
  f.ctaPair = pair;
  return f;
}

// docs/SM100A.md 2.2 (the smoke kernel's `UMOV UR15, 0x8200490`).
TEST(mma_descriptors, instruction_descriptor_vectors) {
  EXPECT_EQ(tcgen05InstrDescriptor(instr(128, 128)), 0x08200490u);
  EXPECT_EQ(tcgen05InstrDescriptor(instr(128, 256)), 0x08400490u);
  EXPECT_EQ(tcgen05InstrDescriptor(instr(128, 256, OperandMajor::MN)), 0x08410490u);
  EXPECT_EQ(tcgen05InstrDescriptor(instr(128, 256, OperandMajor::MN, MmaInputType::F16)),
            0x08410010u);
  EXPECT_EQ(tcgen05InstrDescriptor(instr(256, 256, OperandMajor::K, MmaInputType::BF16,
                                         /*pair=*/true)),
            0x10400490u);
  EXPECT_EQ(tcgen05InstrDescriptor(instr(64, 64)), 0x04100490u);
}

TEST(mma_descriptors, instruction_descriptor_fields_at_their_bits) {
  Tcgen05InstrFields base = instr(64, 8, OperandMajor::K, MmaInputType::F16);
  base.d = MmaAccumulatorType::F16;
  const uint32_t zero = tcgen05InstrDescriptor(base);
  EXPECT_EQ(zero, (1u << 17) | (4u << 24)); // N >> 3 = 1, M >> 4 = 4
  auto with = [&](auto set) {
    Tcgen05InstrFields f = base;
    set(f);
    return tcgen05InstrDescriptor(f) ^ zero;
  };
  EXPECT_EQ(with([](auto &f) { f.d = MmaAccumulatorType::F32; }), 1u << 4);
  EXPECT_EQ(with([](auto &f) { f.a = MmaInputType::BF16; }), 1u << 7);
  EXPECT_EQ(with([](auto &f) { f.b = MmaInputType::BF16; }), 1u << 10);
  EXPECT_EQ(with([](auto &f) { f.negateA = true; }), 1u << 13);
  EXPECT_EQ(with([](auto &f) { f.negateB = true; }), 1u << 14);
  EXPECT_EQ(with([](auto &f) { f.aMajor = OperandMajor::MN; }), 1u << 15);
  EXPECT_EQ(with([](auto &f) { f.bMajor = OperandMajor::MN; }), 1u << 16);
  EXPECT_EQ(with([](auto &f) { f.n = 256; }), (1u ^ 32u) << 17);
  EXPECT_EQ(with([](auto &f) { f.m = 128; }), (4u ^ 8u) << 24);
}

TEST(mma_descriptors, instruction_shape_refusals) {
  EXPECT_NONE(checkTcgen05Instr(instr(64, 8)));
  EXPECT_NONE(checkTcgen05Instr(instr(128, 16)));
  EXPECT_NONE(checkTcgen05Instr(instr(128, 256)));
  EXPECT_NONE(checkTcgen05Instr(instr(256, 256, OperandMajor::K, MmaInputType::BF16, true)));
  EXPECT_MESSAGE(checkTcgen05Instr(instr(32, 64)),
                 "expected M = 64 or 128 for tcgen05.mma cta_group::1, but got M = 32, N = 64");
  EXPECT_MESSAGE(checkTcgen05Instr(instr(256, 64)),
                 "expected M = 64 or 128 for tcgen05.mma cta_group::1, but got M = 256, N = 64");
  EXPECT_MESSAGE(checkTcgen05Instr(instr(64, 64, OperandMajor::K, MmaInputType::BF16, true)),
                 "expected M = 128 or 256 for tcgen05.mma cta_group::2, but got M = 64, N = 64");
  EXPECT_MESSAGE(checkTcgen05Instr(instr(64, 12)),
                 "expected N a multiple of 8 in [8, 256] for tcgen05.mma cta_group::1 with "
                 "M = 64, but got M = 64, N = 12");
  EXPECT_MESSAGE(checkTcgen05Instr(instr(128, 8)),
                 "expected N a multiple of 16 in [16, 256] for tcgen05.mma cta_group::1 "
                 "with M = 128, but got M = 128, N = 8");
  EXPECT_MESSAGE(checkTcgen05Instr(instr(128, 272)),
                 "expected N a multiple of 16 in [16, 256] for tcgen05.mma cta_group::1 "
                 "with M = 128, but got M = 128, N = 272");
}
} // namespace
