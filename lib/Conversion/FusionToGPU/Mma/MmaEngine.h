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
// registers, a quad of lanes per row). createMmaEngine picks the engine from
// the module's target (TargetInfo).
//
// sm_100a's tcgen05 does not fit that shape: one thread issues the MMA, the
// accumulator lives in tensor memory (TMEM), completion is signalled to an
// mbarrier (tcgen05.commit) rather than waited for, and the epilogue reads
// the accumulator back itself (tcgen05.ld, a row per thread). It has its own
// interface below, TensorMemoryMmaEngine (Sm100Tcgen05.cpp); a family that
// has a tensor-memory variant (the GEMM, so far) builds it from
// createTensorMemoryMmaEngine, the others keep asking createMmaEngine, which
// refuses sm_100a with the reason.
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
  /// tcgen05 with transposeA: the bytes from one 64-row box of the M-major
  /// A tile to the next (its descriptor's leading byte offset); 0: the
  /// next box directly after (8192). The attention backward's dS, [128
  /// tokens, 64 keys] as two boxes of [128 keys, 64 tokens] blocks, has
  /// 16384.
  int64_t aBoxBytes = 0;
};

/// Registers per thread: the launch budget (.maxnreg) and what setmaxnreg
/// gives the producer warpgroup and the consumer groups.
struct RegisterBudget {
  /// The producer warpgroup's registers (setmaxnreg) when only its TMA
  /// thread works, and when its other warps work too (the GEMM's epilogue
  /// warps); setmaxnreg's least, for a TMA thread whose loop is small
  /// enough (the attention kernels': the consumers get 8 more each).
  static constexpr int64_t kTmaThread = 40, kEpilogueWarps = 72, kLeast = 24;
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
  /// besides the producer warpgroup, which keeps `producerRegisters` (e.g.
  /// RegisterBudget::kTmaThread); the consumers share the rest.
  virtual RegisterBudget registerBudget(int64_t threads, int64_t consumers,
                                        int64_t producerRegisters) const = 0;

  /// Main loop. The accumulator type, a fresh (zero) accumulator, one K
  /// step on the tiles `aTile` and `bTile` (memref views of shared memory;
  /// `tmaA`/`tmaB` the tensor maps that wrote them, for their swizzle),
  /// and the wait until at most `pending` issued steps are in flight.
  /// `issue` with a null `acc` starts a fresh accumulator: its first k16
  /// overwrites instead of adding (wgmma's scale-d = 0), so no registers
  /// are zeroed before it; a loop whose first step is not distinguished
  /// starts from initAccumulator instead.
  virtual Value initAccumulator(KernelBuilder &kb) = 0;
  /// An accumulator holding `pair(positions, h, j)` (vector<2xf32>) at each
  /// of this thread's pairs (thread `tid` of the group), where `positions`
  /// is a view that gives their rows and columns (its pair() is not to be
  /// called): the starting value of MMAs that add to it (an epilogue's
  /// addend taken in f32 before the rounding, at no register cost beside
  /// the accumulator's). Null where the accumulator is not in registers.
  virtual Value accumulatorFromPairs(
      KernelBuilder &kb, Value tid,
      function_ref<Value(AccumulatorView &positions, int64_t h, int64_t j)> pair) {
    return Value();
  }
  virtual Value issue(KernelBuilder &kb, Value aTile, Value bTile, Value tmaA,
                      Value tmaB, Value acc) = 0;
  /// One K step with A in registers instead of shared memory: `pairs(h, j)`
  /// (vector<2xelem>) is A's element pair at the positions an accumulator
  /// of [64, tileK] holds as its pair (h, j) (a previous MMA's result,
  /// rounded, can be the next one's A without a trip through shared
  /// memory: the sm_90a attention kernels' P of O = P V). Every
  /// register-accumulator engine has it: sm_90a's wgmma is the only one
  /// (tcgen05, which reads A from shared or tensor memory, is a
  /// TensorMemoryMmaEngine).
  virtual Value issueRegisterA(KernelBuilder &kb,
                               function_ref<Value(int64_t h, int64_t j)> pairs,
                               Value bTile, Value tmaB, Value acc) = 0;
  virtual void waitPending(KernelBuilder &kb, int64_t pending) = 0;

  /// Epilogue. The tile row of this thread's first accumulator row in group
  /// `group` (thread `tid` of the group), and the view of `acc`.
  virtual Value firstRow(KernelBuilder &kb, Value group, Value tid) = 0;
  virtual std::unique_ptr<AccumulatorView> view(KernelBuilder &kb, Value acc,
                                                Value tid) = 0;
};

/// The tensor-memory MMA (tcgen05, sm_100a), cta_group::1: one thread
/// issues M = 128 x N = tileN x K = 16 MMAs (two per k16 where tileN > 256)
/// from 128-byte swizzled shared-memory tiles into an f32 accumulator in
/// tensor memory (row i in lane i, column j in column j), and commits them
/// to an mbarrier; warps read the accumulator back 32 columns at a time, a
/// lane a row, and may write such a row back. Which thread may call what is
/// part of the contract (PTX ISA, "tcgen05"):
///   warp-wide (.sync.aligned: every lane, warp-uniform control flow):
///     allocate, relinquish, deallocate, load, waitLoads, store, waitStores;
///   one thread: issue, commit;
///   fenceBefore / fenceAfter: around every thread synchronization (a
///   barrier or an mbarrier) that orders tcgen05 operations of different
///   threads, after the wait / before the arrive.
class TensorMemoryMmaEngine {
public:
  virtual ~TensorMemoryMmaEngine() = default;
  virtual StringRef name() const = 0;

  /// Allocates `columns` tensor-memory columns (a power of two >= 32) and
  /// writes their base address to `slot` (a shared-memory i32, as an index
  /// byte address), then gives up the right to allocate more (one CTA per
  /// SM owns the tensor memory; a relinquished CTA lets the next one's
  /// allocation proceed as soon as this one frees). The base, read back by
  /// every thread after a barrier: `loadBase`.
  virtual void allocate(KernelBuilder &kb, Value slot, int64_t columns) = 0;
  /// The allocation as a kernel's start-up makes it: warp `allocWarp`
  /// allocates (warp-wide, under a warp-uniform condition) into the slot at
  /// `smemBase + slotOffset`, then a CTA barrier between the fences
  /// publishes the base address (and whatever the threads initialized
  /// before it, the mbarriers) to every thread.
  void allocateInWarp(KernelBuilder &kb, int64_t allocWarp, Value smemBase,
                      int64_t slotOffset, int64_t columns) {
    Value warp = kb.div(gpu::ThreadIdOp::create(kb.b, gpu::Dimension::x), 32);
    Value slot = kb.add(smemBase, kb.idx(slotOffset));
    kb.ifThen(kb.eq(warp, allocWarp), [&] { allocate(kb, slot, columns); });
    fenceBefore(kb);
    gpu::BarrierOp::create(kb.b);
    fenceAfter(kb);
  }
  virtual Value loadBase(KernelBuilder &kb, Value slot) = 0;
  virtual void deallocate(KernelBuilder &kb, Value base, int64_t columns) = 0;
  virtual void fenceBefore(KernelBuilder &kb) = 0;
  virtual void fenceAfter(KernelBuilder &kb) = 0;

  /// The address `columns` columns (a Value, index) after `base`.
  virtual Value columnOffset(KernelBuilder &kb, Value base, Value columns) = 0;
  /// One K step (tileK) of MMAs: A [128, tileK] at shared-memory byte
  /// address `aAddr`, B at `bAddr` (index), into the accumulator at `acc`;
  /// `accumulate` (i1) false: the first k16 overwrites it.
  virtual void issue(KernelBuilder &kb, Value aAddr, Value bAddr, Value acc,
                     Value accumulate) = 0;
  /// mbarrier `id` of `group` completes one arrival once every MMA this
  /// thread issued before has completed (reading its operands included).
  virtual void commit(KernelBuilder &kb, Value group, Value id) = 0;
  /// This thread's row of the accumulator at `acc` (lane 32 (warp % 4) +
  /// lane), columns column0 .. column0 + 31, as vector<32xf32>; valid after
  /// waitLoads.
  virtual Value load(KernelBuilder &kb, Value acc, Value warp,
                     int64_t column0) = 0;
  /// Likewise `columns` (8, 16 or 32) columns, as vector<columns x f32>: a
  /// narrower load keeps fewer values live where each one takes long
  /// element-wise work (the attention backward's erf gelu and its
  /// derivative).
  virtual Value loadColumns(KernelBuilder &kb, Value acc, Value warp,
                            int64_t column0, int64_t columns) = 0;
  virtual void waitLoads(KernelBuilder &kb) = 0;
  /// Writes `values` (vector<32xf32>) into this thread's row of the
  /// accumulator at `acc`, columns column0 .. column0 + 31; complete (and
  /// visible to this thread's later loads) after waitStores.
  virtual void store(KernelBuilder &kb, Value acc, Value warp, int64_t column0,
                     Value values) = 0;
  virtual void waitStores(KernelBuilder &kb) = 0;
  /// The 32-bit instruction descriptor the MMAs carry (MmaDescriptors.h; the
  /// first one's where a k16 takes two).
  virtual uint32_t instrDescriptor() const = 0;
};

/// The engine of `target` for `shape`, or null with `whyNot` set (sm_100a:
/// its engine is the tensor-memory one).
std::unique_ptr<MmaEngine> createMmaEngine(const TargetInfo &target,
                                           const MmaShape &shape,
                                           std::string &whyNot);
/// The sm_90a engine.
std::unique_ptr<MmaEngine> createSm90WgmmaEngine(const MmaShape &shape);
/// The sm_100a engine, or null with `whyNot` (a shape tcgen05 lacks).
std::unique_ptr<TensorMemoryMmaEngine>
createSm100Tcgen05Engine(const MmaShape &shape, std::string &whyNot);
/// The tensor-memory engine of `target` for `shape`, or null with `whyNot`
/// set (a target whose MMA accumulates in registers, or a shape tcgen05
/// does not have).
std::unique_ptr<TensorMemoryMmaEngine>
createTensorMemoryMmaEngine(const TargetInfo &target, const MmaShape &shape,
                            std::string &whyNot);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_MMA_MMAENGINE_H
