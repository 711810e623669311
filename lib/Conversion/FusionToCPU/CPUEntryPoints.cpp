//===- CPUEntryPoints.cpp - the fusion-cpu-entry-points pass --------------===//
//
// Gives a module of functions on tensors the ABI of a fusion library
// (LibraryABI.h), before the reference lowering takes it to the CPU: each
// public function gets one output memref argument per result, which its
// result is materialized into (bufferization.materialize_in_destination, so
// that after eliminate-empty-tensors the last op writes the caller's buffer),
// and returns nothing; its description is exported as
// __fusion_signature_<function>. The CPU library is then called exactly like
// the GPU one, with host memory.
//
//===----------------------------------------------------------------------===//

#include "fusion/Conversion/LibraryABI/LibraryABI.h"
#include "fusion/Conversion/Passes.h"
#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::fusion {
#define GEN_PASS_DEF_FUSIONCPUENTRYPOINTSPASS
#include "fusion/Conversion/Passes.h.inc"
} // namespace mlir::fusion

using namespace mlir;
using namespace mlir::fusion;

static constexpr LibraryKind kCPULibrary = {"the CPU", "a CPU library function"};

/// Rewrites `func` into destination-passing style: one identity-layout
/// memref argument per result, written in place.
static void passResultsAsArguments(func::FuncOp func) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Type> outTypes;
  for (Type t : func.getResultTypes()) {
    auto tensor = cast<RankedTensorType>(t);
    outTypes.push_back(
        MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  Block &body = func.getBody().front();
  SmallVector<Location> locs(outTypes.size(), func.getLoc());
  unsigned first = body.getNumArguments();
  // insertArguments keeps the argument attributes (fusion.weight, ...) in step.
  SmallVector<unsigned> at(outTypes.size(), first);
  SmallVector<DictionaryAttr> noAttrs(outTypes.size());
  (void)func.insertArguments(at, outTypes, noAttrs, locs);
  OpBuilder b(ret);
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto op = bufferization::MaterializeInDestinationOp::create(
        b, ret.getLoc(), value, body.getArgument(first + i));
    op.setRestrict(true);
    op.setWritable(true);
  }
  func::ReturnOp::create(b, ret.getLoc());
  ret.erase();
  SmallVector<Type> argTypes(body.getArgumentTypes());
  func.setFunctionType(FunctionType::get(func.getContext(), argTypes, {}));
}

namespace {
struct FusionCPUEntryPointsPass
    : fusion::impl::FusionCPUEntryPointsPassBase<FusionCPUEntryPointsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkReshapeIndices(module)) ||
        failed(checkLibrarySymbols(module, kCPULibrary)))
      return signalPassFailure();
    SmallVector<std::pair<func::FuncOp, std::string>> entries;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isPrivate() || f.getBody().empty())
        continue;
      FailureOr<std::string> description = describeFunction(f, kCPULibrary);
      if (failed(description))
        return signalPassFailure();
      entries.emplace_back(f, std::move(*description));
    }
    if (entries.empty()) {
      module.emitError("fusion-cpu-entry-points: the module has no public "
                       "function with a body to export");
      return signalPassFailure();
    }
    for (auto &[f, description] : entries) {
      passResultsAsArguments(f);
      emitDescription(module, f.getName(), description);
    }
    // The GPU target does not apply to a CPU library, and upstream tools
    // (mlir-translate) do not know the attribute.
    module->removeAttr(TargetAttr::getModuleAttrName());
  }
};
} // namespace
