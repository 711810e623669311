//===- HostLowering.h - the host side of a lowered function -----*- C++ -*-===//
//
// What every kernel family's host launch needs from the function being
// lowered: the builder at the launch point, the stream-ordered chain of
// device work, the map from the function's tensors to device memrefs, the
// gpu.module that receives the kernels, and the runtime entry points.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_HOSTLOWERING_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_HOSTLOWERING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::fusion {

/// The device work of one host function is one chain of async ops on one
/// stream: `gpu.wait async` creates the stream, every alloc, memset, launch
/// and dealloc takes the previous token and yields the next, and the final
/// `gpu.wait` synchronizes and destroys the stream. Stream order keeps a
/// buffer alive until the kernels before its dealloc are done; the runtime
/// serves allocations on a stream from its caching pool.
///
/// A GEMM with a side kernel (fusion.side_kernel) and that kernel run on
/// two side chains: fork() makes a `gpu.wait async` without dependencies,
/// which the runtime answers, while the function's first stream is live,
/// with a side stream waiting for the work enqueued so far
/// (runtime/lib/Stream.cpp), of the greatest or the least priority as the
/// call `fusionrtNextSideStreamPriority` before it asks. Both streams then
/// wait for the same event, and the priority decides whose pending CTAs are
/// placed first: the GEMM's (persistent, on the SMs it takes), then the side
/// kernel's in the SMs it leaves. buildOn() picks the chain the next ops
/// join; joinAll() makes the main chain wait for every side chain with
/// `gpu.wait`, which the runtime turns into an event wait, the host not
/// waiting. Between fork() and joinAll() every free waits for the join: a
/// kernel on another stream may still read what it frees, and the pool must
/// not hand that memory out again (nor make one stream wait for another's
/// free).
class DeviceChain {
public:
  explicit DeviceChain(ImplicitLocOpBuilder &b) : b(b) {
    tokens.push_back(
        gpu::WaitOp::create(b, tokenType(), ValueRange{}).getAsyncToken());
  }

  Value alloc(MemRefType type, ValueRange dynSizes) {
    auto op =
        gpu::AllocOp::create(b, type, tokenType(), ValueRange{current()},
                             dynSizes, ValueRange{}, /*hostShared=*/false);
    advance(op.getAsyncToken());
    return op.getMemref();
  }
  /// Sets every element of `buffer` to `value` (a memset of its bits).
  void fill(Value buffer, Value value) {
    advance(gpu::MemsetOp::create(b, tokenType(), ValueRange{current()}, buffer,
                                  value)
                .getAsyncToken());
  }
  void zero(Value buffer, Value zero) { fill(buffer, zero); }
  /// Copies `src` into `dst` (same shape), device to device.
  void copy(Value dst, Value src) {
    advance(
        gpu::MemcpyOp::create(b, tokenType(), ValueRange{current()}, dst, src)
            .getAsyncToken());
  }
  void free(Value buffer) {
    if (forked()) {
      deferredFrees.push_back(buffer);
      return;
    }
    advance(
        gpu::DeallocOp::create(b, tokenType(), ValueRange{current()}, buffer)
            .getAsyncToken());
  }
  /// Opens a side chain after the work enqueued so far; its index for
  /// buildOn(). (The caller asks the runtime for its priority first.)
  unsigned fork() {
    tokens.push_back(
        gpu::WaitOp::create(b, tokenType(), ValueRange{}).getAsyncToken());
    return tokens.size() - 1;
  }
  /// Builds on chain `index` (0: the main chain) until the next buildOn().
  void buildOn(unsigned index) {
    assert(index < tokens.size() && "no such chain");
    building = index;
  }
  /// The main chain continues after every side chain's work; then the frees
  /// deferred since the first fork().
  void joinAll() {
    building = 0;
    for (Value side : ArrayRef<Value>(tokens).drop_front())
      gpu::WaitOp::create(b, Type(), ValueRange{side});
    tokens.resize(1);
    for (Value buffer : deferredFrees)
      free(buffer);
    deferredFrees.clear();
  }
  /// Whether side chains are open (fork() without joinAll()): the kernels
  /// built now run beside another.
  bool forked() const { return tokens.size() > 1; }
  /// The token a launch depends on; `after` the one it yields.
  Value current() const { return tokens[building]; }
  void advance(Value after) { tokens[building] = after; }
  /// Waits for the whole chain (the host function returns when it is done).
  void finish() {
    assert(!forked() && "joinAll() first");
    gpu::WaitOp::create(b, Type(), ValueRange{current()});
  }

private:
  Type tokenType() { return gpu::AsyncTokenType::get(b.getContext()); }
  ImplicitLocOpBuilder &b;
  // Each chain's latest token: the main chain's first, then the side
  // chains'; the one the next ops join.
  SmallVector<Value, 3> tokens;
  unsigned building = 0;
  SmallVector<Value> deferredFrees;
};

/// The host function being built, as a kernel family's launch sees it.
class HostLowering {
public:
  HostLowering(ImplicitLocOpBuilder &b, DeviceChain &chain, IRMapping &map,
               ModuleOp module, gpu::GPUModuleOp kernels)
      : b(b), chain(chain), map(map), module(module), kernels(kernels) {}

  /// A runtime entry point, declared once per module.
  func::FuncOp getRuntimeFunction(StringRef name, FunctionType type);
  /// Opens a side chain (DeviceChain::fork) whose stream the runtime gives
  /// the greatest priority, or the least; its index.
  unsigned forkSideChain(bool greatestPriority);
  /// The kernel's name as a NUL-terminated string global, for the runtime.
  Value getKernelName(StringRef kernel);
  /// The device memref of tensor `v`, with all dimensions dynamic, as the
  /// kernels take them.
  Value dynamicMemref(Value v);
  /// Tensor `v`'s device buffer viewed flat (flatView of dynamicMemref).
  Value flatMemref(Value v);

  ImplicitLocOpBuilder &b;
  DeviceChain &chain;
  IRMapping &map; ///< tensor value -> memref value
  ModuleOp module;
  gpu::GPUModuleOp kernels;
};

/// Device memref `mem` viewed as memref<?xT> over its contiguous elements
/// (a kernel's flat pointer and the count the runtime checks it against).
Value flatView(ImplicitLocOpBuilder &b, Value mem);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_HOSTLOWERING_H
