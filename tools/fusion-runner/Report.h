//===- Report.h - fusion-runner inputs, printing and comparison -*- C++ -*-===//
//
// The host-side half of fusion-runner: everything that only touches f32
// buffers. Inputs are generated here, results are printed and compared here;
// none of it depends on how the program was compiled.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_TOOLS_FUSION_RUNNER_REPORT_H
#define FUSION_TOOLS_FUSION_RUNNER_REPORT_H

#include "Runner.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>

namespace mlir {
namespace fusion_runner {

/// How inputs are drawn: uniform in [lo, hi), plus `offset`.
struct InputOptions {
  uint64_t seed = 0;
  double lo = -1.0;
  double hi = 1.0;
  double offset = 0.0;
};

/// One pseudo-random buffer per argument of `type`. The values of argument i
/// depend only on the seed, i, the range and the offset, so two functions
/// with the same signature always get the same inputs. Values are rounded
/// to the argument's element type (the program rounds them the same way).
std::vector<HostTensor> generateInputs(FunctionType type,
                                       const InputOptions &options);

/// Formats `value` like printf("%g") with `digits` significant digits
/// (6 by default); every NaN prints as "nan".
std::string formatValue(double value, int digits = 6);

/// Prints `<label>: <type>`, then ` = <values>` when `printValues`, then a
/// line `  min=.. max=.. mean=..` (and `nan=N` when there are NaNs). Up to 64
/// values go on one line, larger tensors get one innermost row per line.
void printTensor(llvm::raw_ostream &os, llvm::StringRef label,
                 const HostTensor &tensor, bool printValues);

/// The outcome of comparing one result pair.
struct Comparison {
  size_t numElements = 0;
  size_t numMismatches = 0;
  /// Largest |got - ref| and |got - ref| / |ref| over the pairs where neither
  /// is NaN (and ref != 0 for the relative error).
  double maxAbsErr = 0.0;
  double maxRelErr = 0.0;
  /// Row-major index of the first mismatch.
  std::optional<size_t> firstMismatch;
};

/// Compares element by element like numpy.allclose(got, ref, rtol, atol):
/// a pair matches when |got - ref| <= atol + rtol * |ref|, when both are NaN,
/// or when both are the same infinity.
Comparison compareTensors(const HostTensor &ref, const HostTensor &got,
                          double atol, double rtol);

/// Formats a row-major index of `type` as "[i, j, ...]".
std::string formatIndex(RankedTensorType type, size_t linearIndex);

} // namespace fusion_runner
} // namespace mlir

#endif // FUSION_TOOLS_FUSION_RUNNER_REPORT_H
