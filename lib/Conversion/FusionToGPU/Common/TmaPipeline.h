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
  /// Consumers: this thread is done reading the slot of position `pos`.
  void release(KernelBuilder &kb, Value pos) const {
    kb.arrive(empty, stageOf(kb, pos));
  }
  /// Producer threads of a ring between threads: this thread's writes to
  /// the slot of position `pos` are done.
  void publish(KernelBuilder &kb, Value pos) const {
    kb.arrive(full, stageOf(kb, pos));
  }

  int64_t stages = 0;
  Value full, empty;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_TMAPIPELINE_H
