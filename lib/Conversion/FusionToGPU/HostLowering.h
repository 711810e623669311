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
/// A GEMM with a side kernel (fusion.side_kernel) runs on a second chain:
/// fork() makes a `gpu.wait async` without dependencies, which the runtime
/// answers, while the function's first stream is live, with a side stream
/// of the greatest priority waiting for the work enqueued so far
/// (runtime/lib/Stream.cpp); onSide() builds the GEMM on it, so that its
/// persistent CTAs are placed before the side kernel's, which onMain()
/// builds on the main chain; join() waits for the side chain with
/// `gpu.wait`, which the runtime turns into the main stream waiting for it,
/// the host not waiting. Between fork() and join() every free waits for the
/// join: a kernel on the other stream may still read what it frees, and the
/// pool must not hand that memory out again (nor make one stream wait for
/// the other's free).
class DeviceChain {
public:
  explicit DeviceChain(ImplicitLocOpBuilder &b) : b(b) {
    token = gpu::WaitOp::create(b, tokenType(), ValueRange{}).getAsyncToken();
  }

  Value alloc(MemRefType type, ValueRange dynSizes) {
    auto op = gpu::AllocOp::create(b, type, tokenType(), ValueRange{token},
                                   dynSizes, ValueRange{}, /*hostShared=*/false);
    token = op.getAsyncToken();
    return op.getMemref();
  }
  /// Sets every element of `buffer` to `value` (a memset of its bits).
  void fill(Value buffer, Value value) {
    token = gpu::MemsetOp::create(b, tokenType(), ValueRange{token}, buffer, value)
                .getAsyncToken();
  }
  void zero(Value buffer, Value zero) { fill(buffer, zero); }
  /// Copies `src` into `dst` (same shape), device to device.
  void copy(Value dst, Value src) {
    token = gpu::MemcpyOp::create(b, tokenType(), ValueRange{token}, dst, src)
                .getAsyncToken();
  }
  void free(Value buffer) {
    if (side) {
      deferredFrees.push_back(buffer);
      return;
    }
    token = gpu::DeallocOp::create(b, tokenType(), ValueRange{token}, buffer)
                .getAsyncToken();
  }
  /// Opens a side chain after the work enqueued so far.
  void fork() {
    assert(!side && "one side chain at a time");
    side = gpu::WaitOp::create(b, tokenType(), ValueRange{}).getAsyncToken();
    mainToken = token;
  }
  /// Builds on the side chain until onMain() or join().
  void onSide() {
    assert(side && !building && "fork() first");
    mainToken = token;
    token = side;
    building = true;
  }
  /// Builds on the main chain again, the side chain left open.
  void onMain() {
    assert(building && "onSide() first");
    side = token;
    token = mainToken;
    building = false;
  }
  /// The main chain continues after the side chain's work; then the frees
  /// deferred since fork().
  void join() {
    if (building)
      onMain();
    assert(side && "fork() first");
    gpu::WaitOp::create(b, Type(), ValueRange{side});
    side = Value();
    for (Value buffer : deferredFrees)
      free(buffer);
    deferredFrees.clear();
  }
  /// Whether a side chain is open (fork() without its join()): the kernels
  /// built now run beside another.
  bool forked() const { return static_cast<bool>(side); }
  /// The token a launch depends on; `after` the one it yields.
  Value current() const { return token; }
  void advance(Value after) { token = after; }
  /// Waits for the whole chain (the host function returns when it is done).
  void finish() { gpu::WaitOp::create(b, Type(), ValueRange{token}); }

private:
  Type tokenType() { return gpu::AsyncTokenType::get(b.getContext()); }
  ImplicitLocOpBuilder &b;
  Value token;
  // The side chain's token (its latest while the main chain is built),
  // whether launches go on it, and the main chain's token meanwhile.
  Value side, mainToken;
  bool building = false;
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
