//===- Report.cpp - fusion-runner inputs, printing and comparison ---------===//

#include "Report.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::fusion_runner;

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

namespace {
/// SplitMix64: tiny, fast, and the same on every platform (unlike the
/// distributions of <random>, whose output is implementation-defined).
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1), on a 2^-24 grid.
  double nextUnit() { return static_cast<double>(next() >> 40) * 0x1p-24; }

private:
  uint64_t state;
};
} // namespace

/// Rounds `value` to `element` (bf16, f16 or f32) to nearest, ties to even,
/// and returns it as an f32 (exactly representable). This is what
/// arith.truncf does in the program, so the printed inputs are the ones the
/// program computes with.
static float roundTo(Type element, double value) {
  float f32 = static_cast<float>(value);
  if (element.isF32())
    return f32;
  llvm::APFloat rounded(f32);
  bool losesInfo;
  rounded.convert(cast<FloatType>(element).getFloatSemantics(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  rounded.convert(llvm::APFloat::IEEEsingle(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return rounded.convertToFloat();
}

std::vector<HostTensor>
mlir::fusion_runner::generateInputs(FunctionType type,
                                    const InputOptions &options) {
  std::vector<HostTensor> inputs;
  for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
    auto tensorType = cast<RankedTensorType>(argType);
    // One independent stream per argument.
    SplitMix64 rng(SplitMix64(options.seed).next() ^
                   (0xD1B54A32D192ED03ULL * (i + 1)));
    HostTensor input{tensorType, {}};
    input.data.resize(tensorType.getNumElements());
    Type element = tensorType.getElementType();
    for (float &value : input.data)
      value = roundTo(element, options.lo +
                                   (options.hi - options.lo) * rng.nextUnit() +
                                   options.offset);
    inputs.push_back(std::move(input));
  }
  return inputs;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string mlir::fusion_runner::formatValue(double value, int digits) {
  if (std::isnan(value))
    return "nan";
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
  return buffer;
}

/// Prints dimension `dim` of `tensor` starting at element `offset`.
/// `multiLine` puts each innermost row on its own line, numpy style.
static void printValues(llvm::raw_ostream &os, const HostTensor &tensor,
                        unsigned dim, size_t offset, size_t stride,
                        bool multiLine) {
  ArrayRef<int64_t> shape = tensor.type.getShape();
  os << '[';
  size_t innerStride = shape[dim] == 0 ? 0 : stride / shape[dim];
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (i > 0) {
      if (multiLine && dim + 1 < shape.size())
        os << ",\n" << std::string(dim + 1, ' ');
      else
        os << ", ";
    }
    if (dim + 1 == shape.size())
      os << formatValue(tensor.data[offset + i]);
    else
      printValues(os, tensor, dim + 1, offset + i * innerStride, innerStride,
                  multiLine);
  }
  os << ']';
}

void mlir::fusion_runner::printTensor(llvm::raw_ostream &os,
                                      llvm::StringRef label,
                                      const HostTensor &tensor,
                                      bool printValues) {
  os << label << ": " << tensor.type;
  if (printValues) {
    os << " =";
    if (tensor.type.getRank() == 0) {
      os << ' ' << formatValue(tensor.data[0]);
    } else {
      bool multiLine = tensor.data.size() > 64 && tensor.type.getRank() > 1;
      os << (multiLine ? '\n' : ' ');
      ::printValues(os, tensor, 0, 0, tensor.data.size(), multiLine);
    }
  }
  os << '\n';

  if (tensor.data.empty()) {
    os << "  empty\n";
    return;
  }
  double min = INFINITY, max = -INFINITY, sum = 0.0;
  size_t numNaN = 0;
  for (float value : tensor.data) {
    if (std::isnan(value)) {
      ++numNaN;
      continue;
    }
    min = std::min<double>(min, value);
    max = std::max<double>(max, value);
    sum += value;
  }
  size_t numValid = tensor.data.size() - numNaN;
  if (numValid == 0) {
    os << "  min=nan max=nan mean=nan nan=" << numNaN << '\n';
    return;
  }
  os << "  min=" << formatValue(min) << " max=" << formatValue(max)
     << " mean=" << formatValue(sum / numValid);
  if (numNaN)
    os << " nan=" << numNaN;
  os << '\n';
}

std::string mlir::fusion_runner::formatIndex(RankedTensorType type,
                                             size_t linearIndex) {
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<size_t> index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = linearIndex % shape[d];
    linearIndex /= shape[d];
  }
  std::string s = "[";
  for (auto [i, v] : llvm::enumerate(index))
    s += (i ? ", " : "") + std::to_string(v);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

Comparison mlir::fusion_runner::compareTensors(const HostTensor &ref,
                                               const HostTensor &got,
                                               double atol, double rtol) {
  Comparison result;
  result.numElements = ref.data.size();
  for (size_t k = 0; k < ref.data.size(); ++k) {
    double b = ref.data[k], a = got.data[k];
    bool match;
    if (std::isnan(a) || std::isnan(b)) {
      match = std::isnan(a) && std::isnan(b);
    } else if (a == b) {
      match = true;
    } else {
      double absErr = std::fabs(a - b);
      result.maxAbsErr = std::max(result.maxAbsErr, absErr);
      if (b != 0.0)
        result.maxRelErr = std::max(result.maxRelErr, absErr / std::fabs(b));
      // Different values with an infinity among them never match (for finite
      // values the bound is finite).
      match = !std::isinf(a) && !std::isinf(b) &&
              absErr <= atol + rtol * std::fabs(b);
    }
    if (!match) {
      ++result.numMismatches;
      if (!result.firstMismatch)
        result.firstMismatch = k;
    }
  }
  return result;
}
