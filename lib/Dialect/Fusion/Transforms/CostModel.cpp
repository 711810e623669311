//===- CostModel.cpp - how a norm rides in a GEMM on a target -------------===//
//
// The heuristics of the fusion passes, kept apart from the rewrites. Every
// limit comes from TargetInfo.
//
//===----------------------------------------------------------------------===//

#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fusion;

std::string EpilogueNormPlan::describe() const {
  if (clusterSize == 1)
    return ("one CTA holds the whole row (N = " + Twine(sliceN) + ")").str();
  return ("a cluster of " + Twine(clusterSize) + " CTAs along N, " +
          Twine(sliceN) + " columns each, exchanging partial sums through DSMEM" +
          (portable ? "" : " (non-portable cluster size)"))
      .str();
}

FailureOr<EpilogueNormPlan>
mlir::fusion::planEpilogueNorm(const TargetInfo &target, int64_t n,
                               std::string &whyNot) {
  if (ShapedType::isDynamic(n)) {
    whyNot = "the normalized dimension N is dynamic; the epilogue's cluster "
             "shape needs a static N";
    return failure();
  }
  if (n <= target.maxEpilogueTileN)
    return EpilogueNormPlan{1, n, true};
  int64_t needed = llvm::divideCeil(n, target.maxEpilogueTileN);
  int64_t cluster = static_cast<int64_t>(llvm::PowerOf2Ceil(needed));
  if (cluster > target.maxClusterSize) {
    whyNot = ("N = " + Twine(n) + " needs " + Twine(cluster) + " CTAs of at most " +
              Twine(target.maxEpilogueTileN) + " columns, more than the " +
              Twine(target.maxClusterSize) + " a cluster holds on " + target.chip)
                 .str();
    return failure();
  }
  if (n % (cluster * target.tileNGranularity) != 0) {
    whyNot = ("N = " + Twine(n) + " does not split into " + Twine(cluster) +
              " slices of a multiple of " + Twine(target.tileNGranularity) +
              " columns on " + target.chip)
                 .str();
    return failure();
  }
  return EpilogueNormPlan{cluster, n / cluster,
                          cluster <= target.maxPortableClusterSize};
}
