//===- TensorMap.h - tiled tensor maps (TMA descriptors) --------*- C++ -*-===//
//
// Every way into cuTensorMapEncodeTiled (the C API's fusionrtTensorMapSpec,
// MLIR's memref form, CUDA's own argument order) is first turned into one
// TensorMapRequest and checked by validateTensorMap, without any driver call,
// so that a bad argument gets a message naming the dimension and the expected
// and given values instead of CUDA_ERROR_INVALID_VALUE.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_RUNTIME_TENSORMAP_H
#define FUSION_RUNTIME_TENSORMAP_H

#include "fusion_runtime.h"

#include <cuda.h>

#include <cstdint>
#include <string>

namespace fusionrt {

constexpr int kMaxTensorMapRank = FUSIONRT_TENSOR_MAP_MAX_RANK;

/// A tiled tensor map, row-major: dimension 0 is the outermost. Sizes and
/// strides count elements; the enums hold the raw values given by the caller.
struct TensorMapRequest {
  int64_t dataType = 0;
  int64_t rank = 0;
  const void *globalAddress = nullptr;
  int64_t sizes[kMaxTensorMapRank] = {};
  int64_t strides[kMaxTensorMapRank] = {};
  int64_t boxSizes[kMaxTensorMapRank] = {};
  int64_t elementStrides[kMaxTensorMapRank] = {1, 1, 1, 1, 1};
  int64_t interleave = 0;
  int64_t swizzle = 0;
  int64_t l2Promotion = 0;
  int64_t oobFill = 0;
};

/// Bytes per element of a CUtensorMapDataType value; 0 for values the runtime
/// does not support (including the sub-byte types of CUDA 12.8).
int tensorMapElementBytes(int64_t dataType);

/// The empty string when `request` is valid, else what is wrong with it:
/// lowercase, "expected X, but got Y", naming the dimension.
std::string validateTensorMap(const TensorMapRequest &request);

/// Encodes a valid request with cuTensorMapEncodeTiled (no validation).
CUresult encodeTensorMap(const TensorMapRequest &request, CUtensorMap *tensorMap);

/// The request for the C API's spec.
TensorMapRequest requestFromSpec(const fusionrtTensorMapSpec &spec);

} // namespace fusionrt

#endif // FUSION_RUNTIME_TENSORMAP_H
