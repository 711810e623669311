//===- LibraryABI.h - what a compiled library exports -----------*- C++ -*-===//
//
// The ABI shared by the GPU and the CPU libraries fusion-compile builds, which
// runtime/python/fusion_runtime.py calls: every exported function takes its
// arguments, then its results as output arguments, each as MLIR's expanded
// memref descriptor, and is described by the NUL-terminated string
// __fusion_signature_<function> ("arg0: bf16[?,1024]; ...; result0: ...").
// Names that would collide with what the library defines or calls are
// refused.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_CONVERSION_LIBRARYABI_LIBRARYABI_H
#define FUSION_CONVERSION_LIBRARYABI_LIBRARYABI_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::fusion {

/// The prefix of each function's description global. The compiler's own
/// symbols (kernel names, descriptions) start with "__fusion_".
inline constexpr llvm::StringLiteral kSignaturePrefix = "__fusion_signature_";

/// How a lowering names itself and its entry points in diagnostics, e.g.
/// {"the GPU", "a GPU host function"}.
struct LibraryKind {
  StringRef loweredTo;
  StringRef entryPoint;
};

/// Why a top-level symbol of this name would collide with what a library
/// defines or calls (the compiler's, the runtimes' and the C library's
/// symbols), or "" when it would not.
StringRef reservedSymbolReason(StringRef name);

/// Whether `name` can be an exported C symbol.
bool isCIdentifier(StringRef name);

/// Refuses every top-level symbol with a reserved name, and every function
/// whose name is not a C identifier, with an error on the op.
LogicalResult checkLibrarySymbols(ModuleOp module, const LibraryKind &kind);

/// The function's description in the loader's signature syntax: its
/// arguments, then its results as the output arguments the caller passes,
/// e.g. "arg0: bf16[s0,1024]; arg1: bf16[1024,1024]; result0: bf16[s0,1024]":
/// a dynamic size the function's ops tie to another (SizeTies.h) is named
/// (s0, s1, ...) so that the loader checks that they agree, any other is
/// `?`. Emits an error on a type the loader cannot pass.
FailureOr<std::string> describeFunction(func::FuncOp func,
                                        const LibraryKind &kind);

/// Exports `description` as the constant NUL-terminated string
/// `__fusion_signature_<name>` at the end of `module`.
void emitDescription(ModuleOp module, StringRef name, StringRef description);

/// Refuses, with an error on the op, each tensor.collapse_shape and
/// tensor.expand_shape under `root` whose reassociation holds an index
/// outside the dimensions it groups: libMLIR 22's verifiers compare the
/// indices as 32-bit values (2^32 passes as 0), and its bufferization then
/// reads past the shape and crashes (an upstream bug). Run before a
/// lowering of user IR.
LogicalResult checkReshapeIndices(Operation *root);

} // namespace mlir::fusion

#endif // FUSION_CONVERSION_LIBRARYABI_LIBRARYABI_H
