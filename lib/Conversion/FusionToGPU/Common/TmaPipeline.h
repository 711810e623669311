//===- TmaPipeline.h - the TMA ring's barriers and positions ----*- C++ -*-===//
//
// The multi-stage shared-memory ring a producer fills by TMA and consumers
// drain: a `full` mbarrier per stage (the stage's TMA bytes landed; armed by
// the producer with expect_tx) and an `empty` one (every consumer thread is
// done reading it). Each role counts the K steps it has run modulo
// 2 x stages, its position `pos`: slot pos mod stages, phase parity
// pos >= stages, with no division. A fresh barrier counts as completed in
// the phase before its first, so the producer's first wait on `empty`
// passes at once.
//
// A ring shared with a peer CTA (shareWith: a pair of CTAs whose producers
// each multicast part of the same B tile into both): a slot may be refilled
// only when the consumers of both CTAs are done with it, so a stage's
// `empty` barrier also counts one arrival from each consumer warp of the
// peer, which each warp's lane 0 sends (a remote arrive, release at CTA
// scope as CUTLASS's cluster barriers) after the warp's own releases. The
// producer then waits for the last slots' releases before it exits
// (drain), so that no peer arrival lands in a CTA that has already exited.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_TMAPIPELINE_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_TMAPIPELINE_H

#include "KernelBuilder.h"

namespace mlir::fusion {

/// The tensor map type of a box of `box` elements of `elem` in shared
/// memory (zero fill out of bounds) with `swizzle`.
inline Type tensorMapType(MLIRContext *ctx, ArrayRef<int64_t> box, Type elem,
                          nvgpu::TensorMapSwizzleKind swizzle) {
  auto tile = MemRefType::get(box, elem, MemRefLayoutAttrInterface{},
                              IntegerAttr::get(IntegerType::get(ctx, 64), 3));
  return nvgpu::TensorMapDescriptorType::get(
      ctx, tile, swizzle, nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
}

/// 128-byte swizzled: what every kernel's TMA loads and stores, and the
/// MMA descriptors of their tiles, use.
inline Type swizzledTensorMapType(MLIRContext *ctx, ArrayRef<int64_t> box,
                                  Type elem) {
  return tensorMapType(ctx, box, elem, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B);
}

/// An mbarrier group of `count` barriers in shared memory.
inline Value createBarrierGroup(KernelBuilder &kb, int64_t count) {
  return nvgpu::MBarrierCreateOp::create(
      kb.b, nvgpu::MBarrierGroupType::get(kb.ctx, sharedSpace(kb.ctx), count));
}

class TmaRing {
public:
  TmaRing() = default;
  /// Creates the full and empty barriers of `stages` stages.
  TmaRing(KernelBuilder &kb, int64_t stages) : stages(stages) {
    full = createBarrierGroup(kb, stages);
    empty = createBarrierGroup(kb, stages);
  }
  /// Initializes them (by `leader`): `full` completes on the producer's
  /// arrival and the TMA bytes, `empty` when `consumerThreads` threads
  /// arrived.
  void init(KernelBuilder &kb, int64_t consumerThreads, Value leader) const {
    init(kb, 1, consumerThreads, leader);
  }
  /// Initializes them (by `leader`) for a ring between threads: `full`
  /// completes when `producerThreads` threads arrived, `empty` when
  /// `consumerThreads` did.
  void init(KernelBuilder &kb, int64_t producerThreads, int64_t consumerThreads,
            Value leader) const {
    for (int64_t st = 0; st < stages; ++st) {
      nvgpu::MBarrierInitOp::create(kb.b, full, kb.idx(producerThreads), kb.idx(st),
                                    leader);
      nvgpu::MBarrierInitOp::create(kb.b, empty, kb.idx(consumerThreads),
                                    kb.idx(st), leader);
    }
  }

  Value stageOf(KernelBuilder &kb, Value pos) const {
    return arith::SelectOp::create(kb.b, kb.ult(pos, kb.idx(stages)), pos,
                                   kb.sub(pos, kb.idx(stages)));
  }
  Value parityOf(KernelBuilder &kb, Value pos) const {
    return arith::CmpIOp::create(kb.b, arith::CmpIPredicate::uge, pos,
                                 kb.idx(stages));
  }
  Value nextPos(KernelBuilder &kb, Value pos) const {
    Value next = kb.add(pos, kb.idx(1));
    return arith::SelectOp::create(kb.b, kb.eq(next, 2 * stages), kb.idx(0),
                                   next);
  }
  Value prevPos(KernelBuilder &kb, Value pos) const {
    return arith::SelectOp::create(kb.b, kb.eq(pos, 0),
                                   kb.idx(2 * stages - 1),
                                   kb.sub(pos, kb.idx(1)));
  }

  /// Producer: waits until slot `stageOf(pos)` is free again.
  void acquire(KernelBuilder &kb, Value stage, Value pos) const {
    kb.wait(empty, stage, kb.flip(parityOf(kb, pos)));
  }
  /// Consumers: wait until slot `stage` holds position `pos`'s tiles.
  void waitFull(KernelBuilder &kb, Value stage, Value pos) const {
    kb.wait(full, stage, parityOf(kb, pos));
  }
  /// Consumers: this thread is done reading the slot of position `pos`
  /// (and, in a shared ring, its warp tells the peer's barrier so, once
  /// every lane has released).
  void release(KernelBuilder &kb, Value pos) const {
    Value stage = stageOf(kb, pos);
    kb.arrive(empty, stage);
    if (!peerRank)
      return;
    ImplicitLocOpBuilder &b = kb.b;
    NVVM::SyncWarpOp::create(b, kb.i32(-1));
    Value lane = arith::RemUIOp::create(
        b, gpu::ThreadIdOp::create(b, gpu::Dimension::x), kb.idx(32));
    kb.ifThen(kb.eq(lane, 0), [&] {
      Value address =
          nvgpu::MBarrierGetOp::create(b, b.getI32Type(), empty, stage);
      Value local = LLVM::IntToPtrOp::create(
          b, LLVM::LLVMPointerType::get(kb.ctx, 3), ValueRange{address});
      Value remote = NVVM::MapaOp::create(
          b, LLVM::LLVMPointerType::get(kb.ctx, 7), local, peerRank);
      // Release at CTA scope, as a local release: the warp's reads of the
      // slot (its wgmma's, complete at the wait) need no cluster-wide
      // fence. At cluster scope the release waited for the warp's MMA
      // still in flight: the tensor pipe 94% -> 57% busy on the H100.
      NVVM::MBarrierArriveOp::create(b, Type(), remote, Value(),
                                     NVVM::MemScopeKind::CTA,
                                     /*relaxed=*/false);
    });
  }
  /// Shares the ring with the CTA of rank `peer` in the cluster (an i32),
  /// whose `consumerWarps` consumer warps each arrive once per slot here.
  void shareWith(Value peer, int64_t consumerWarps) {
    peerRank = peer;
    peerWarps = consumerWarps;
  }
  bool shared() const { return static_cast<bool>(peerRank); }
  /// The arrivals a stage's `empty` barrier waits for: `consumerThreads`
  /// of this CTA, and the peer's warps in a shared ring.
  int64_t emptyArrivals(int64_t consumerThreads) const {
    return consumerThreads + (peerRank ? peerWarps : 0);
  }
  /// Producer, after its last load: waits until the slots of the `stages`
  /// positions from `pos` on are released, i.e. every slot it filled
  /// (a shared ring's peer arrivals included).
  void drain(KernelBuilder &kb, Value pos) const {
    kb.forLoop(kb.idx(0), kb.idx(stages), kb.idx(1), ValueRange{pos},
               [&](Value, ValueRange it) {
                 acquire(kb, stageOf(kb, it[0]), it[0]);
                 return SmallVector<Value>{nextPos(kb, it[0])};
               });
  }
  /// Producer threads of a ring between threads: this thread's writes to
  /// the slot of position `pos` are done.
  void publish(KernelBuilder &kb, Value pos) const {
    kb.arrive(full, stageOf(kb, pos));
  }

  int64_t stages = 0;
  Value full, empty;
  /// A shared ring's peer (its rank in the cluster, i32) and the consumer
  /// warps it counts from it; null peerRank: not shared.
  Value peerRank;
  int64_t peerWarps = 0;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_TMAPIPELINE_H
