//===- SizeTies.h - dynamic sizes a function ties together --*- C++ -*-===//
//
// A function compiled into a library takes tensors whose dynamic sizes the
// caller chooses, but its ops fix how they relate: the rows of a GEMM's
// output are the rows of its lhs, a norm's rstd has the input's rows, a
// broadcast bias has the output's columns. A kernel trusts those relations
// (the row count it reads from one argument bounds the rows it writes into
// another), so a call that breaks them would read or write out of bounds.
// SizeTies collects them from the function's ops, so that the library's
// description can name each tied dynamic size and the loader can check it
// before the call ("arg0: bf16[s0,1024]; result0: bf16[s0,1024]").
//
// Only relations an op guarantees are recorded: an op the analysis does not
// know ties nothing (its sizes stay `?`, as before), so a tie can make a call
// fail only where the kernels would have read or written past a tensor.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_CONVERSION_LIBRARYABI_SIZETIES_H
#define FUSION_CONVERSION_LIBRARYABI_SIZETIES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir::fusion {

/// The equivalence classes of (tensor value, dimension) pairs of one
/// function that its ops require to be equal.
class SizeTies {
public:
  /// Collects the ties of `func`'s body; a returned value's dimensions are
  /// those of the matching result.
  explicit SizeTies(func::FuncOp func);

  /// Requires dimension `da` of `a` to equal dimension `db` of `b`.
  void tie(Value a, int64_t da, Value b, int64_t db);

  /// Ties every dimension of `a` to the same dimension of `b` (equal ranks).
  void tieAll(Value a, Value b);

  /// A representative of the class of (v, dim), comparable across calls.
  unsigned classOf(Value v, int64_t dim);

  /// The static size of the class of (v, dim), if some member has one (and
  /// all that have one agree).
  std::optional<int64_t> staticSize(Value v, int64_t dim);

  /// Whether the members of the class of (v, dim) with a static size agree
  /// (a class where they do not is not named: some rule was wrong).
  bool consistent(Value v, int64_t dim);

private:
  unsigned id(Value v, int64_t dim);
  unsigned find(unsigned i);

  llvm::DenseMap<std::pair<Value, int64_t>, unsigned> ids;
  SmallVector<unsigned> parent;
  /// Per class root: a member's static size (kDynamic if none has one), and
  /// whether two members' static sizes differ.
  SmallVector<int64_t> size;
  SmallVector<bool> conflict;
};

} // namespace mlir::fusion

#endif // FUSION_CONVERSION_LIBRARYABI_SIZETIES_H
