//===- MmaDescriptors.cpp - tensor-core descriptor encodings -------------===//
//
// MmaDescriptors.h: the checks say what does not fit and why; the encoders
// assume checked fields and only place bits.
//
//===----------------------------------------------------------------------===//

#include "fusion/Target/NVPTX/MmaDescriptors.h"

using namespace mlir::fusion;

namespace {
/// The 2-bit wgmma swizzle code (bits 62-63). tcgen05's 3-bit layout code at
/// bits 61-63 is twice it (128B = 2, 64B = 4, 32B = 6): the same bits.
uint64_t wgmmaSwizzleCode(SmemSwizzle s) {
  switch (s) {
  case SmemSwizzle::None:
    return 0;
  case SmemSwizzle::Bytes128:
    return 1;
  case SmemSwizzle::Bytes64:
    return 2;
  case SmemSwizzle::Bytes32:
    return 3;
  }
  return 0;
}

std::optional<std::string> checkOffset(const char *name, uint32_t bytes) {
  if (bytes % 16 != 0)
    return std::string("expected the ") + name +
           " to be a multiple of 16 bytes (descriptors hold bytes >> 4), but got " +
           std::to_string(bytes);
  if ((bytes >> 4) > smem_desc::kFieldMask)
    return std::string("expected the ") + name + " below " +
           std::to_string((smem_desc::kFieldMask + 1) << 4) +
           " bytes (14 bits of bytes >> 4), but got " + std::to_string(bytes);
  return std::nullopt;
}

/// The fields common to both encodings.
uint64_t commonFields(const SmemDescriptorFields &f) {
  using namespace smem_desc;
  return (uint64_t(f.startAddress >> 4) & kFieldMask) << kStartShift |
         (uint64_t(f.leadingBytes >> 4) & kFieldMask) << kLeadingShift |
         (uint64_t(f.strideBytes >> 4) & kFieldMask) << kStrideShift |
         uint64_t(f.baseOffset & 0x7) << kBaseOffsetShift;
}

uint64_t formatCode(MmaInputType t) { return t == MmaInputType::BF16 ? 1 : 0; }
} // namespace

std::optional<std::string>
mlir::fusion::checkSmemDescriptor(const SmemDescriptorFields &f) {
  if (auto why = checkOffset("start address", f.startAddress))
    return why;
  if (auto why = checkOffset("leading byte offset", f.leadingBytes))
    return why;
  if (auto why = checkOffset("stride byte offset", f.strideBytes))
    return why;
  if (f.baseOffset > 7)
    return "expected a base offset below 8 (3 bits), but got " +
           std::to_string(f.baseOffset);
  return std::nullopt;
}

uint64_t mlir::fusion::wgmmaSmemDescriptor(const SmemDescriptorFields &f) {
  return commonFields(f) | wgmmaSwizzleCode(f.swizzle) << 62;
}

uint64_t mlir::fusion::tcgen05SmemDescriptor(const SmemDescriptorFields &f) {
  return commonFields(f) | uint64_t(1) << smem_desc::kVersionShift |
         (2 * wgmmaSwizzleCode(f.swizzle)) << 61;
}

std::optional<std::string>
mlir::fusion::checkTcgen05Instr(const Tcgen05InstrFields &f) {
  const std::string shape =
      "M = " + std::to_string(f.m) + ", N = " + std::to_string(f.n);
  const char *group = f.ctaPair ? "cta_group::2" : "cta_group::1";
  bool mOk = f.ctaPair ? (f.m == 128 || f.m == 256) : (f.m == 64 || f.m == 128);
  if (!mOk)
    return std::string("expected M = ") + (f.ctaPair ? "128 or 256" : "64 or 128") +
           " for tcgen05.mma " + group + ", but got " + shape;
  int64_t step = (!f.ctaPair && f.m == 64) ? 8 : 16;
  if (f.n < step || f.n > 256 || f.n % step != 0)
    return "expected N a multiple of " + std::to_string(step) + " in [" +
           std::to_string(step) + ", 256] for tcgen05.mma " + group + " with M = " +
           std::to_string(f.m) + ", but got " + shape;
  return std::nullopt;
}

uint32_t mlir::fusion::tcgen05InstrDescriptor(const Tcgen05InstrFields &f) {
  using namespace instr_desc;
  uint32_t dFormat = f.d == MmaAccumulatorType::F32 ? 1 : 0;
  return dFormat << kDFormatShift | uint32_t(formatCode(f.a)) << kAFormatShift |
         uint32_t(formatCode(f.b)) << kBFormatShift |
         uint32_t(f.negateA) << kNegateAShift | uint32_t(f.negateB) << kNegateBShift |
         uint32_t(f.aMajor == OperandMajor::MN) << kAMajorShift |
         uint32_t(f.bMajor == OperandMajor::MN) << kBMajorShift |
         uint32_t(f.n >> 3) << kNShift | uint32_t(f.m >> 4) << kMShift;
}
