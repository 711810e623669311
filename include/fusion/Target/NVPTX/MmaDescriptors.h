//===- MmaDescriptors.h - tensor-core operand and instruction descriptors -===//
//
// The bit encodings the MMA engines hand to the tensor cores, written once
// and unit-tested field by field (test/Target/NVPTX/): the 64-bit
// shared-memory matrix descriptor of sm_90a's wgmma and of sm_100a's
// tcgen05.mma (the same fields; tcgen05 adds the version bit 46 and the LBO
// mode bit 52, and its 3-bit layout field at 61-63 encodes the swizzles on
// the same bits as wgmma's 2-bit field at 62-63), and the 32-bit instruction
// descriptor of tcgen05.mma kind::f16 (no op builds it in MLIR 22: it is a
// constant of the kernel). Pure functions, no MLIR: the emitters add the
// run-time start address to the low word.
//
// Sources: the PTX ISA's "Matrix Descriptor Format" and "Instruction
// descriptor" tables, NVIDIA/cutlass `GmmaDescriptor` / `UMMA::SmemDescriptor`
// / `UMMA::InstrDescriptor`; the test vectors of docs/SM100A.md section 2.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_TARGET_NVPTX_MMADESCRIPTORS_H
#define FUSION_TARGET_NVPTX_MMADESCRIPTORS_H

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::fusion {

/// How an operand tile is swizzled in shared memory (TMA's swizzle mode).
enum class SmemSwizzle { None, Bytes128, Bytes64, Bytes32 };

/// The fields of a shared-memory matrix descriptor, in bytes (the encoders
/// shift them). A K-major operand with a 128-byte swizzle: stride = 1024
/// (8 rows of 128 bytes), leading ignored (conventionally 16); an MN-major
/// one: stride = 1024 (8 K rows), leading = the bytes between 64-column
/// atoms.
struct SmemDescriptorFields {
  uint32_t startAddress = 0; ///< shared-memory byte address (< 2^18)
  uint32_t leadingBytes = 0; ///< leading-dimension byte offset (LBO)
  uint32_t strideBytes = 0;  ///< stride-dimension byte offset (SBO)
  uint32_t baseOffset = 0;   ///< 3 bits: for atoms not 1024-byte aligned
  SmemSwizzle swizzle = SmemSwizzle::Bytes128;
};

/// The field positions, shared by both encodings.
namespace smem_desc {
constexpr unsigned kStartShift = 0, kLeadingShift = 16, kStrideShift = 32,
                   kVersionShift = 46, kBaseOffsetShift = 49,
                   kLeadingModeShift = 52;
constexpr uint64_t kFieldMask = 0x3FFF; ///< 14 bits of (bytes >> 4)
} // namespace smem_desc

/// Why `fields` cannot be encoded (an address or offset that is not a
/// multiple of 16 or does not fit 14 bits after the shift, a base offset
/// past 3 bits), or nothing.
std::optional<std::string> checkSmemDescriptor(const SmemDescriptorFields &fields);

/// sm_90a wgmma's descriptor: swizzle at bits 62-63 (0 none, 1 128B, 2 64B,
/// 3 32B). Fields must pass checkSmemDescriptor.
uint64_t wgmmaSmemDescriptor(const SmemDescriptorFields &fields);

/// sm_100a tcgen05's descriptor: version 1 at bits 46-47, LBO mode relative
/// (bit 52 clear), layout at bits 61-63 (0 none, 2 128B, 4 64B, 6 32B):
/// wgmmaSmemDescriptor(fields) | 1 << 46 for every swizzle.
uint64_t tcgen05SmemDescriptor(const SmemDescriptorFields &fields);

/// The element types of tcgen05.mma kind::f16.
enum class MmaInputType { F16, BF16 };
enum class MmaAccumulatorType { F16, F32 };
/// Which dimension is contiguous in an operand's shared-memory tile.
enum class OperandMajor { K, MN };

/// The fields of tcgen05.mma kind::f16's instruction descriptor.
struct Tcgen05InstrFields {
  MmaInputType a = MmaInputType::BF16, b = MmaInputType::BF16;
  MmaAccumulatorType d = MmaAccumulatorType::F32;
  OperandMajor aMajor = OperandMajor::K, bMajor = OperandMajor::K;
  bool negateA = false, negateB = false;
  int64_t m = 128, n = 256;
  /// cta_group::2 (a CTA pair, M = 128 or 256) instead of ::1 (M = 64, 128).
  bool ctaPair = false;
};

namespace instr_desc {
constexpr unsigned kDFormatShift = 4, kAFormatShift = 7, kBFormatShift = 10,
                   kNegateAShift = 13, kNegateBShift = 14, kAMajorShift = 15,
                   kBMajorShift = 16, kNShift = 17, kMShift = 24;
} // namespace instr_desc

/// Why `fields` is not an MMA shape tcgen05 kind::f16 has (cta_group::1:
/// M = 64 with N % 8 == 0, or M = 128 with N % 16 == 0; cta_group::2:
/// M = 128 or 256 with N % 16 == 0; N in [8 or 16, 256]), or nothing.
std::optional<std::string> checkTcgen05Instr(const Tcgen05InstrFields &fields);

/// The 32-bit instruction descriptor (D format at 4-5, A/B formats at 7-9 /
/// 10-12, negations at 13/14, majors at 15/16, N >> 3 at 17-22, M >> 4 at
/// 24-28). Fields must pass checkTcgen05Instr.
uint32_t tcgen05InstrDescriptor(const Tcgen05InstrFields &fields);

} // namespace mlir::fusion

#endif // FUSION_TARGET_NVPTX_MMADESCRIPTORS_H
