//===- MmaEngine.h - the per-architecture matrix-multiply seam --*- C++ -*-===//
//
// Everything a kernel family needs from the tensor cores, behind one
// interface, so that a family (Gemm/, later Attention/) is written once and
// an architecture adds an engine beside the others:
//
//   roles      the consumer group that issues the MMA (threads, tile rows)
//              and the register budgets setmaxnreg moves between roles;
//   main loop  init the accumulator, issue one K step from shared-memory
//              tiles, wait until at most N steps are in flight;
//   epilogue   an AccumulatorView: which rows and columns of the tile this
//              thread holds, each element pair, and the row reduction over
//              the threads that share a row.
//
// Sm90Wgmma.cpp implements it with wgmma (accumulator fragments in
// registers, a quad of lanes per row); an sm_100a engine (tcgen05 into
// tensor memory, tcgen05.ld one row per thread) goes beside it.
// createMmaEngine picks the engine from the module's target (TargetInfo).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_MMA_MMAENGINE_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_MMA_MMAENGINE_H

#include "../Common/KernelBuilder.h"

#include "fusion/Target/NVPTX/TargetInfo.h"

#include <memory>
#include <string>

namespace mlir::fusion {

/// What the engine multiplies: per K step an A tile [groupRows, tileK] (this
/// group's rows) and a B tile [tileK, tileN] (or [tileN, tileK] with
/// transposeB), both 128-byte swizzled in shared memory as TMA wrote them.
struct MmaShape {
  int64_t tileN = 0, tileK = 0;
  Type abType;
  /// transposeA: the group's A tile is [tileK, groupRows], M-major (a
  /// weight gradient's lhs [K, M] as TMA wrote it).
  bool transposeA = false, transposeB = false;
};

/// Registers per thread: the launch budget (.maxnreg) and what setmaxnreg
/// gives the producer warpgroup and the consumer groups.
struct RegisterBudget {
  int64_t launch = 0, producer = 0, consumer = 0;
};

/// One thread's share of the f32 accumulator of its group's tile rows. The
/// thread holds rowsPerThread() rows, row h at tile row
/// firstRow + rowOffset(h); of each row, columnGroups() groups of 8 columns,
/// and in group j the pair of adjacent columns 8 j + pairColumn() (+1).
class AccumulatorView {
public:
  virtual ~AccumulatorView() = default;
  virtual int64_t rowsPerThread() const = 0;
  virtual int64_t rowOffset(int64_t h) const = 0;
  virtual int64_t columnGroups() const = 0;
  /// The pair of row h, group j, as vector<2xf32>.
  virtual Value pair(int64_t h, int64_t j) = 0;
  /// Which pair of each 8-column group this thread holds (its columns are
  /// 2 pairIndex and 2 pairIndex + 1). `fresh`: rebuilt from the thread
  /// index at the insertion point, rather than the value computed when the
  /// view was made (for uses deep inside the epilogue's branches, so that
  /// the value is not held in a register across the whole epilogue).
  virtual Value pairIndex(bool fresh = false) = 0;
  /// The column of this thread's pair inside each 8-column group.
  virtual Value pairColumn() = 0;
  /// This thread's rows modulo 8 (the phase of the 128-byte swizzle the
  /// staging buffers use), for rowOffset(h) multiples of 8; rebuilt at the
  /// insertion point.
  virtual Value rowPhase() = 0;
  /// `partial` summed over the threads that share this thread's rows.
  virtual Value rowReduce(Value partial) = 0;
  /// `partial` (f32) summed over the threads of this warp that hold this
  /// thread's columns (a column sum over the warp's rows), and whether this
  /// thread is the one of them that writes it.
  virtual Value columnReduce(Value partial) = 0;
  virtual Value isColumnLeader() = 0;
  /// Whether this thread holds the first pair of its rows (it writes the
  /// rows' per-row results once); `fresh` as for pairIndex.
  virtual Value isRowLeader(bool fresh = false) = 0;
};

class MmaEngine {
public:
  virtual ~MmaEngine() = default;
  virtual StringRef name() const = 0;

  /// Roles: threads of one consumer group, and the tile rows it computes.
  virtual int64_t groupThreads() const = 0;
  virtual int64_t groupRows() const = 0;
  /// The register budgets of a CTA of `threads` threads, `consumers` groups
  /// besides the producer warpgroup; `producerWorks`: the producer
  /// warpgroup runs more than one thread's TMA issue (epilogue warps).
  virtual RegisterBudget registerBudget(int64_t threads, int64_t consumers,
                                        bool producerWorks) const = 0;

  /// Main loop. The accumulator type, a fresh (zero) accumulator, one K
  /// step on the tiles `aTile` and `bTile` (memref views of shared memory;
  /// `tmaA`/`tmaB` the tensor maps that wrote them, for their swizzle),
  /// and the wait until at most `pending` issued steps are in flight.
  virtual Value initAccumulator(KernelBuilder &kb) = 0;
  virtual Value issue(KernelBuilder &kb, Value aTile, Value bTile, Value tmaA,
                      Value tmaB, Value acc) = 0;
  virtual void waitPending(KernelBuilder &kb, int64_t pending) = 0;

  /// Epilogue. The tile row of this thread's first accumulator row in group
  /// `group` (thread `tid` of the group), and the view of `acc`.
  virtual Value firstRow(KernelBuilder &kb, Value group, Value tid) = 0;
  virtual std::unique_ptr<AccumulatorView> view(KernelBuilder &kb, Value acc,
                                                Value tid) = 0;
};

/// The engine of `target` for `shape`, or null with `whyNot` set ("the
/// tcgen05 engine (sm_100a) is not implemented yet").
std::unique_ptr<MmaEngine> createMmaEngine(const TargetInfo &target,
                                           const MmaShape &shape,
                                           std::string &whyNot);
/// The sm_90a engine.
std::unique_ptr<MmaEngine> createSm90WgmmaEngine(const MmaShape &shape);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_MMA_MMAENGINE_H
