//===- TargetInfo.h - hardware limits of the supported GPUs -----*- C++ -*-===//
//
// What the fusion decisions and the kernel planner need to know about a chip.
// Every limit is written down once, here; passes read the chip from the
// module's `fusion.target` attribute and look its limits up.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_TARGET_NVPTX_TARGETINFO_H
#define FUSION_TARGET_NVPTX_TARGETINFO_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace mlir {
class Operation;
namespace fusion {

/// The matrix-multiply engine a chip's kernels are built around; the GPU
/// lowering picks its MmaEngine (lib/Conversion/FusionToGPU/Mma/) from it.
enum class MmaKind {
  /// Hopper's warpgroup MMA: wgmma.mma_async, accumulators in registers.
  Wgmma,
  /// Blackwell's tcgen05.mma issued by one thread, accumulators in tensor
  /// memory.
  Tcgen05,
};

struct TargetInfo {
  llvm::StringRef chip;
  /// The PTX ISA features the kernels need, as the NVVM target's feature
  /// string ("+ptx81": st.async, which the cluster epilogue uses).
  llvm::StringRef ptxFeatures;
  MmaKind mma;
  /// Dynamic shared memory one CTA may opt into, in bytes.
  int64_t smemPerBlockOptin;
  /// Shared memory of one SM, and what the system reserves per resident CTA
  /// (what decides how many CTAs share an SM).
  int64_t smemPerSM;
  int64_t smemReservedPerBlock;
  /// Largest thread-block cluster launchable without the non-portable flag.
  int64_t maxPortableClusterSize;
  /// Largest cluster with CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED.
  int64_t maxClusterSize;
  /// Widest slice of an output row one CTA's f32 accumulator holds in a GEMM
  /// epilogue: 256 columns on sm_90a (a 64 x 256 wgmma accumulator is 128
  /// registers per thread), 512 on sm_100a (the TMEM columns of one lane).
  int64_t maxEpilogueTileN;
  /// Largest cluster a norm epilogue uses; wider rows exchange their
  /// statistics through global memory instead. On the H200 the GPCs hold
  /// clusters of 2 on all 132 SMs, of 4 and 8 on 120, of 16 on only 112
  /// (cuOccupancyMaxActiveClusters), so sm_90a stops at 4.
  int64_t maxEpilogueClusterSize;
  /// The unit tile_n (and an epilogue's N slice) is a multiple of: 64 on
  /// both, since the GEMM kernels stage B in 64-column swizzled TMA boxes
  /// (wgmma itself takes multiples of 8, tcgen05 with M = 128 of 16).
  int64_t tileNGranularity;
  /// Whether a forward norm epilogue over several CTAs (a cluster, or a row
  /// through global memory; 16-bit output) runs in epilogue warps,
  /// overlapped with the next tile's MMA, which stages the whole tile in
  /// shared memory: the sm_90a kernel does; the sm_100a one is planned with
  /// the register epilogue's layout.
  bool normEpilogueWarps;
  /// SMs of the chip's full part (H100/H200 SXM 132, B200 148), for the
  /// planner's split-K choice and the norm gradients' persistent grid (a
  /// compile-time constant there, so that their parameter gradients' sums
  /// do not depend on the device); the GEMM grid itself takes the device's
  /// count at run time.
  int64_t multiprocessors = 132;
  /// Elements one dimension of a TMA tensor map spans (cuTensorMapEncodeTiled:
  /// globalDim[i] <= 2^32), the bound on every GEMM dimension.
  int64_t maxTmaDimSize = int64_t(1) << 32;
  /// Tensor-memory columns of an SM (32-bit cells, 128 lanes each) where the
  /// MMA accumulates there: 512 on sm_100a (tcgen05), 0 on sm_90a (wgmma
  /// accumulates in registers). One CTA per SM owns all of them.
  int64_t tensorMemoryColumns = 0;
  /// Most CTAs a norm row may span through global memory (rows wider than
  /// maxEpilogueClusterSize CTAs; each CTA of the persistent grid must hold
  /// at most one tile of a row block, which the launch checks:
  /// fusionrtCooperativeGridLimit). sm_90a: 16 (its epilogue warps defer a
  /// tile, so twice the grid must exceed it); sm_100a: 32 (N up to 16384 in
  /// tiles of 512: rows wider than its 16-CTA clusters).
  int64_t maxGlobalRowCTAs = 16;
};

/// The limits of `chip`, or nothing for a chip this compiler does not know.
/// Inline, so that the dialect's verifiers (which this library depends on)
/// check configured resources against the same table.
///
/// Sources: CUDA C Programming Guide, "Compute capabilities" (shared memory
/// per block opt-in: 227 KB on 9.0 and 10.0, 228 KB per SM with 1 KB
/// reserved per resident block; portable cluster size 8, up to 16 with the
/// non-portable attribute), PTX ISA "wgmma.mma_async" (N up to 256 in
/// multiples of 8) and "tcgen05.mma" / "Tensor Memory" (512 columns of 128
/// lanes per SM).
inline std::optional<TargetInfo> getTargetInfo(llvm::StringRef chip) {
  constexpr int64_t kSmem227KiB = 227 * 1024, kSmem228KiB = 228 * 1024;
  if (chip == "sm_90a")
    return TargetInfo{"sm_90a", "+ptx81", MmaKind::Wgmma, kSmem227KiB, kSmem228KiB, 1024, 8, 16, 256, 4, 64,
                      /*normEpilogueWarps=*/true};
  if (chip == "sm_100a") {
    TargetInfo t{"sm_100a", "+ptx86", MmaKind::Tcgen05, kSmem227KiB, kSmem228KiB, 1024, 8, 16, 512, 16, 64,
                 /*normEpilogueWarps=*/false, /*multiprocessors=*/148};
    t.tensorMemoryColumns = 512;
    t.maxGlobalRowCTAs = 32;
    return t;
  }
  return std::nullopt;
}

/// "wgmma" or "tcgen05", for diagnostics.
llvm::StringRef stringifyMmaKind(MmaKind kind);

/// The limits of the target of the module enclosing `op`, or nothing when
/// the module has no `fusion.target`.
std::optional<TargetInfo> lookupTargetInfo(Operation *op);

} // namespace fusion
} // namespace mlir

#endif // FUSION_TARGET_NVPTX_TARGETINFO_H
