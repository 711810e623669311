//===- Runner.h - compile a func.func on tensors and run it on the CPU -*- C++ -*-===//
//
// The compile-and-execute half of fusion-runner. A "program" is one
// func.func in one module; programs that live in the same module are compiled
// together (one ExecutionEngine), so `--compare=g` costs one compilation.
//
// How a function runs (see the header comment of fusion-runner.cpp for the
// user-facing description):
//   1. `addEntryWrapper` adds `__fusion_runner_<f>`, a func.func with one f32
//      memref per argument and one per result of @f. It rounds each input to
//      the argument's element type (arith.truncf on tensors), calls @f,
//      widens every result to f32 and writes it into the output memref
//      (bufferization.materialize_in_destination).
//   2. `lowerToLLVM` makes every other function private, drops the unused
//      ones, and runs `kLoweringPipeline` (convert-fusion-to-linalg, then
//      upstream passes down to the LLVM dialect).
//   3. `Executable::run` JIT-compiles the module once and calls the
//      wrappers through ExecutionEngine::invokePacked with host f32 buffers.
//
// Every function here reports errors through the MLIR diagnostic engine or
// a returned llvm::Error; nothing aborts on user input.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_TOOLS_FUSION_RUNNER_RUNNER_H
#define FUSION_TOOLS_FUSION_RUNNER_RUNNER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
class PassManager;

namespace fusion_runner {

/// The textual pass pipeline that lowers a module with the entry wrappers to
/// the LLVM dialect.
extern const char *const kLoweringPipeline;

/// A host-side f32 buffer in row-major order, plus the type it stands for
/// (for example tensor<4x8xbf16>: the values are the bf16 ones, widened).
struct HostTensor {
  RankedTensorType type;
  std::vector<float> data;
};

/// Checks that @`funcName` exists in `module`, has a body, and that its
/// argument and result types are supported. `what` names the function in
/// messages ("@f", "@g in other.mlir"). On failure the returned error holds
/// a message for the user.
llvm::Expected<func::FuncOp> lookupEntry(ModuleOp module, StringRef funcName,
                                         StringRef what);

/// Returns an error naming the first difference between the signatures of
/// `a` and `b`, or success when they are the same.
llvm::Error checkSameSignature(func::FuncOp a, StringRef aWhat, func::FuncOp b,
                               StringRef bWhat);

/// For a function whose weight preparation fusion-outline-weight-prep
/// outlined (`fusion.prepare = @p`): adds @`<f>_with_prepare`, with @f's
/// original signature, calling @p on the weight arguments and @f on its
/// arguments and what @p returned, and returns its name; for any other
/// function, its own name. So the runner compares a program before and
/// after the outlining on the same inputs.
std::string joinWeightPreparation(func::FuncOp f);

/// Name of the wrapper `addEntryWrapper` creates for @`funcName`.
std::string wrapperName(StringRef funcName);

/// Adds the f32 memref wrapper of `entry` (which `lookupEntry` accepted) to
/// the module that holds it. Does nothing if the wrapper exists already.
void addEntryWrapper(func::FuncOp entry);

/// Parses `text`, a pipeline of the form `builtin.module(...)`, into `pm`
/// (anchored on builtin.module). On failure, `error` says why.
LogicalResult parseModulePipeline(StringRef text, PassManager &pm,
                                  std::string &error);

/// Lowers `module`, which holds the wrappers of `entries`, to the LLVM
/// dialect. Functions neither wrapped nor reachable from a wrapper are
/// removed first, so other functions in the file do not need to lower.
LogicalResult lowerToLLVM(ModuleOp module, ArrayRef<std::string> entries);

/// A lowered module, JIT-compiled.
class Executable {
public:
  /// Compiles `llvmModule` (LLVM dialect) with LLVM at `optLevel` (0-3),
  /// loading `sharedLibs` for symbol resolution.
  static llvm::Expected<Executable> create(ModuleOp llvmModule,
                                           unsigned optLevel,
                                           ArrayRef<std::string> sharedLibs);

  /// Runs the wrapper of @`funcName` on `inputs` (one buffer per argument, in
  /// the argument's shape) and fills `results` with one buffer per result of
  /// `resultTypes`.
  llvm::Error run(StringRef funcName, ArrayRef<HostTensor> inputs,
                  TypeRange resultTypes, std::vector<HostTensor> &results);

  Executable(Executable &&);
  Executable &operator=(Executable &&);
  ~Executable();

private:
  Executable(std::unique_ptr<ExecutionEngine> engine);
  std::unique_ptr<ExecutionEngine> engine;
};

} // namespace fusion_runner
} // namespace mlir

#endif // FUSION_TOOLS_FUSION_RUNNER_RUNNER_H
