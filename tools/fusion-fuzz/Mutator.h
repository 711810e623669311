//===- Mutator.h - structure-aware mutations of .mlir text ------*- C++ -*-===//
//
// libFuzzer's custom mutator for fusion-fuzz: edits an MLIR text where the
// compiler takes its decisions, so that most mutants still parse and reach
// the verifiers, the planner and the kernel generators.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_TOOLS_FUSION_FUZZ_MUTATOR_H
#define FUSION_TOOLS_FUSION_FUZZ_MUTATOR_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace fusion_fuzz {

/// One mutation of `text`, chosen by `seed`:
///   - a shape dimension (one, or every equal one) set to 0, 1, a power of
///     two or its neighbour, a size past 2^31, 2^32 or 2^62, or `?`;
///   - an element type (bf16, f16, f32, ..., i1, index) swapped for another;
///   - an integer or float literal (attributes, epsilon, constants) set to an
///     edge value (0, -1, 2^63 - 1, NaN, inf, -0.0, denormals, ...);
///   - a keyword (an op name, an enum value, an attribute name) or an SSA
///     operand replaced by another one from the same text;
///   - a line dropped, duplicated or swapped with its neighbour; a token
///     range dropped; the text truncated.
/// Returns false when `text` offers no site for the chosen mutation.
bool mutateText(std::string &text, unsigned seed);

/// The libFuzzer entry: mutateText most of the time, libFuzzer's own byte
/// mutations (LLVMFuzzerMutate) otherwise or when the result would not fit.
size_t mutate(uint8_t *data, size_t size, size_t maxSize, unsigned seed);

} // namespace fusion_fuzz

#endif // FUSION_TOOLS_FUSION_FUZZ_MUTATOR_H
