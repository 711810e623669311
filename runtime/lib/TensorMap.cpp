//===- TensorMap.cpp - tiled tensor maps (TMA descriptors) ----------------===//
//
// The rules checked here are those of cuTensorMapEncodeTiled in the CUDA
// driver API reference:
//   - rank 1..5; with interleave, rank >= 3;
//   - global address 16-byte aligned (32 with 32-byte interleave);
//   - sizes 1..2^32; the innermost dimension contiguous (the driver takes no
//     innermost stride); the other strides multiples of 16 bytes (32 with
//     32-byte interleave) and below 2^40 bytes;
//   - box sizes 1..256, element strides 1..8;
//   - without interleave, the inner box row (innermost box size x element
//     size) a multiple of 16 bytes and, with a swizzle, at most the swizzle
//     span (32, 64 or 128 bytes);
//   - 32-byte interleave only with 32-byte swizzle;
//   - the NaN out-of-bounds fill only for floating-point element types.
//
//===----------------------------------------------------------------------===//

#include "TensorMap.h"

#include "Context.h"
#include "MemRef.h"
#include "Status.h"
#include "fusion_runtime_mgpu.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace fusionrt {

// The C API's enumerators are CUDA's values.
static_assert(int(FUSIONRT_DATA_TYPE_BFLOAT16) == int(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16), "");
static_assert(int(FUSIONRT_DATA_TYPE_TFLOAT32_FTZ) == int(CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ),
              "");
static_assert(int(FUSIONRT_SWIZZLE_128B) == int(CU_TENSOR_MAP_SWIZZLE_128B), "");
static_assert(int(FUSIONRT_INTERLEAVE_32B) == int(CU_TENSOR_MAP_INTERLEAVE_32B), "");
static_assert(int(FUSIONRT_L2_PROMOTION_256B) == int(CU_TENSOR_MAP_L2_PROMOTION_L2_256B), "");
static_assert(int(FUSIONRT_OOB_FILL_NAN_REQUEST_ZERO_FMA) ==
                  int(CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA), "");
static_assert(sizeof(fusionrtTensorMap) == sizeof(CUtensorMap), "");
static_assert(alignof(fusionrtTensorMap) == alignof(CUtensorMap), "");

namespace {

struct DataTypeInfo {
  const char *name;
  int bytes;
  bool floatingPoint;
};

// Indexed by CUtensorMapDataType.
constexpr DataTypeInfo kDataTypes[] = {
    {"uint8", 1, false},   {"uint16", 2, false},      {"uint32", 4, false},
    {"int32", 4, false},   {"uint64", 8, false},      {"int64", 8, false},
    {"float16", 2, true},  {"float32", 4, true},      {"float64", 8, true},
    {"bfloat16", 2, true}, {"float32_ftz", 4, true},  {"tfloat32", 4, true},
    {"tfloat32_ftz", 4, true},
};
constexpr int64_t kNumDataTypes = sizeof(kDataTypes) / sizeof(kDataTypes[0]);

const char *const kSwizzleNames[] = {"none", "32B", "64B", "128B"};
const char *const kInterleaveNames[] = {"none", "16B", "32B"};
constexpr int64_t kSwizzleSpanBytes[] = {0, 32, 64, 128};

constexpr int64_t kMaxBoxSize = 256;
constexpr int64_t kMaxElementStride = 8;
constexpr int64_t kMaxSize = int64_t(1) << 32;
constexpr int64_t kStrideLimitBytes = int64_t(1) << 40;

std::string str(int64_t value) { return std::to_string(value); }

std::string hex(const void *ptr) {
  char text[32];
  std::snprintf(text, sizeof(text), "%#llx",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(ptr)));
  return text;
}

std::string dim(int64_t d) { return "dimension " + str(d); }

} // namespace

int tensorMapElementBytes(int64_t dataType) {
  return dataType >= 0 && dataType < kNumDataTypes ? kDataTypes[dataType].bytes : 0;
}

std::string validateTensorMap(const TensorMapRequest &r) {
  // Step 1: the scalar arguments, which the per-dimension checks depend on.
  if (r.rank < 1 || r.rank > kMaxTensorMapRank)
    return "expected rank in 1..5, but got " + str(r.rank);
  if (r.dataType < 0 || r.dataType >= kNumDataTypes)
    return "expected element type in 0..12 (uint8 .. tfloat32_ftz), but got " + str(r.dataType);
  if (r.swizzle < 0 || r.swizzle > 3)
    return "expected swizzle in 0..3 (none, 32B, 64B, 128B), but got " + str(r.swizzle);
  if (r.interleave < 0 || r.interleave > 2)
    return "expected interleave in 0..2 (none, 16B, 32B), but got " + str(r.interleave);
  if (r.l2Promotion < 0 || r.l2Promotion > 3)
    return "expected L2 promotion in 0..3 (none, 64B, 128B, 256B), but got " +
           str(r.l2Promotion);
  if (r.oobFill < 0 || r.oobFill > 1)
    return "expected out-of-bounds fill in 0..1 (zero, NaN), but got " + str(r.oobFill);
  const DataTypeInfo &type = kDataTypes[r.dataType];
  const int64_t bytes = type.bytes;
  const int64_t inner = r.rank - 1;

  // Step 2: the global memory view.
  const int64_t alignment = r.interleave == FUSIONRT_INTERLEAVE_32B ? 32 : 16;
  if (!r.globalAddress)
    return "expected a global address, but got a null pointer";
  if (reinterpret_cast<uintptr_t>(r.globalAddress) % alignment != 0)
    return "expected global address aligned to " + str(alignment) + " bytes, but got " +
           hex(r.globalAddress);
  for (int64_t d = 0; d < r.rank; ++d)
    if (r.sizes[d] < 1 || r.sizes[d] > kMaxSize)
      return "expected size of " + dim(d) + " in 1..2^32, but got " + str(r.sizes[d]);
  if (r.strides[inner] != 1)
    return "expected stride 1 (contiguous) in the innermost " + dim(inner) + ", but got " +
           str(r.strides[inner]);
  for (int64_t d = 0; d < inner; ++d) {
    const int64_t stride = r.strides[d];
    if (stride < 1 || stride >= kStrideLimitBytes / bytes)
      return "expected stride of " + dim(d) + " in 1..2^40 bytes, but got " + str(stride) +
             " elements of " + str(bytes) + " bytes";
    if ((stride * bytes) % alignment != 0)
      return "expected stride of " + dim(d) + " to be a multiple of " + str(alignment) +
             " bytes, but got " + str(stride * bytes) + " bytes (" + str(stride) +
             " elements of " + str(bytes) + " bytes)";
  }

  // Step 3: the box in shared memory.
  for (int64_t d = 0; d < r.rank; ++d) {
    if (r.boxSizes[d] < 1 || r.boxSizes[d] > kMaxBoxSize)
      return "expected box size of " + dim(d) + " in 1..256, but got " + str(r.boxSizes[d]);
    if (r.elementStrides[d] < 1 || r.elementStrides[d] > kMaxElementStride)
      return "expected element stride of " + dim(d) + " in 1..8, but got " +
             str(r.elementStrides[d]);
  }
  const int64_t rowBytes = r.boxSizes[inner] * bytes;
  // Built only for a message: this runs on every encode.
  auto row = [&] {
    return "box size " + str(r.boxSizes[inner]) + " of " + dim(inner) + " x " + str(bytes) +
           " bytes";
  };
  if (r.interleave == FUSIONRT_INTERLEAVE_NONE) {
    if (rowBytes % 16 != 0)
      return "expected the inner box row to be a multiple of 16 bytes, but got " + str(rowBytes) +
             " bytes (" + row() + ")";
    if (r.swizzle != FUSIONRT_SWIZZLE_NONE && rowBytes > kSwizzleSpanBytes[r.swizzle])
      return "expected the inner box row to span at most " + str(kSwizzleSpanBytes[r.swizzle]) +
             " bytes with " + kSwizzleNames[r.swizzle] + " swizzle, but got " + str(rowBytes) +
             " bytes (" + row() + ")";
  } else {
    if (r.rank < 3)
      return std::string("expected rank >= 3 with ") + kInterleaveNames[r.interleave] +
             " interleave, but got " + str(r.rank);
    if (r.interleave == FUSIONRT_INTERLEAVE_32B && r.swizzle != FUSIONRT_SWIZZLE_32B)
      return std::string("expected 32B swizzle with 32B interleave, but got ") +
             kSwizzleNames[r.swizzle];
  }

  // Step 4: the fill.
  if (r.oobFill == FUSIONRT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !type.floatingPoint)
    return std::string("expected a floating-point element type with the NaN out-of-bounds "
                       "fill, but got ") +
           type.name;
  return {};
}

CUresult encodeTensorMap(const TensorMapRequest &r, CUtensorMap *tensorMap) {
  // CUDA's order is the reverse: its dimension 0 is the innermost, and it
  // takes the byte strides of its dimensions 1..rank-1 only.
  const int64_t rank = r.rank;
  const int64_t bytes = tensorMapElementBytes(r.dataType);
  cuuint64_t globalDim[kMaxTensorMapRank];
  cuuint64_t globalStrides[kMaxTensorMapRank];
  cuuint32_t boxDim[kMaxTensorMapRank];
  cuuint32_t elementStrides[kMaxTensorMapRank];
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = rank - 1 - i;
    globalDim[i] = static_cast<cuuint64_t>(r.sizes[d]);
    boxDim[i] = static_cast<cuuint32_t>(r.boxSizes[d]);
    elementStrides[i] = static_cast<cuuint32_t>(r.elementStrides[d]);
    if (i > 0)
      globalStrides[i - 1] = static_cast<cuuint64_t>(r.strides[d] * bytes);
  }
  return cuTensorMapEncodeTiled(
      tensorMap, static_cast<CUtensorMapDataType>(r.dataType), static_cast<cuuint32_t>(rank),
      const_cast<void *>(r.globalAddress), globalDim, globalStrides, boxDim, elementStrides,
      static_cast<CUtensorMapInterleave>(r.interleave), static_cast<CUtensorMapSwizzle>(r.swizzle),
      static_cast<CUtensorMapL2promotion>(r.l2Promotion),
      static_cast<CUtensorMapFloatOOBfill>(r.oobFill));
}

TensorMapRequest requestFromSpec(const fusionrtTensorMapSpec &spec) {
  TensorMapRequest r;
  // Through int: an out-of-range enumerator keeps its sign.
  r.dataType = static_cast<int>(spec.dataType);
  r.rank = spec.rank;
  r.globalAddress = spec.globalAddress;
  for (int d = 0; d < kMaxTensorMapRank; ++d) {
    r.sizes[d] = spec.sizes[d];
    r.strides[d] = spec.strides[d];
    r.boxSizes[d] = spec.boxSizes[d];
    r.elementStrides[d] = spec.elementStrides[d] == 0 ? 1 : spec.elementStrides[d];
  }
  r.interleave = static_cast<int>(spec.interleave);
  r.swizzle = static_cast<int>(spec.swizzle);
  r.l2Promotion = static_cast<int>(spec.l2Promotion);
  r.oobFill = static_cast<int>(spec.oobFill);
  return r;
}

namespace {

/// Every field of a request, its context and the stream it is used on, as
/// the key of DeviceTensorMaps::byRequest.
struct RequestKey {
  CUcontext context;
  CUstream stream;
  std::array<int64_t, 27> fields;
  bool operator==(const RequestKey &other) const {
    return context == other.context && stream == other.stream && fields == other.fields;
  }
};

struct RequestKeyHash {
  size_t operator()(const RequestKey &key) const {
    uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(key.context));
    h = (h ^ static_cast<uint64_t>(reinterpret_cast<uintptr_t>(key.stream))) * 0x100000001b3ull;
    for (int64_t field : key.fields)
      h = (h ^ static_cast<uint64_t>(field)) * 0x100000001b3ull; // FNV-1a over words
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

/// Slots for device copies of encoded maps, never reused: a kernel, or a
/// captured graph, may read a slot at any later time. Each chunk pairs device
/// memory with pinned host memory of the same size, so that a slot is
/// uploaded by an asynchronous copy on the call's stream (ordered before the
/// kernel that reads it, no synchronization, and capturable in a CUDA graph,
/// whose replays copy it again from the same host slot).
struct SlotChunk {
  CUdeviceptr device = 0;
  CUtensorMap *host = nullptr;
};
constexpr size_t kSlotsPerChunk = 4096; // 512 KiB

/// Device copies of encoded maps per context: a host function that runs in a
/// loop encodes the same descriptors every time.
struct DeviceTensorMaps {
  std::mutex mutex;
  std::unordered_map<RequestKey, CUdeviceptr, RequestKeyHash> byRequest;
  std::map<CUcontext, std::vector<SlotChunk>> chunks;
  std::map<CUcontext, size_t> used; ///< slots taken in the context's last chunk
};

/// Every field of a request, as the key of DeviceTensorMaps::byRequest.
RequestKey requestKey(CUcontext context, CUstream stream, const TensorMapRequest &r) {
  RequestKey key{context, stream, {}};
  size_t i = 0;
  key.fields[i++] = r.dataType;
  key.fields[i++] = r.rank;
  key.fields[i++] = static_cast<int64_t>(reinterpret_cast<intptr_t>(r.globalAddress));
  for (const int64_t *field : {r.sizes, r.strides, r.boxSizes, r.elementStrides})
    for (int d = 0; d < kMaxTensorMapRank; ++d)
      key.fields[i++] = field[d];
  key.fields[i++] = r.interleave;
  key.fields[i++] = r.swizzle;
  key.fields[i++] = r.l2Promotion;
  key.fields[i++] = r.oobFill;
  return key;
}

DeviceTensorMaps &deviceTensorMaps() {
  static DeviceTensorMaps *maps = new DeviceTensorMaps;
  return *maps;
}

/// A fresh slot of `context` (maps.mutex held): its device address and its
/// host twin. A new chunk cannot be allocated while `stream` is capturing.
CUresult takeSlot(DeviceTensorMaps &maps, CUcontext context, bool capturing,
                  CUdeviceptr *device, CUtensorMap **host, const char **failedCall) {
  std::vector<SlotChunk> &chunks = maps.chunks[context];
  size_t &used = maps.used[context];
  if (chunks.empty() || used == kSlotsPerChunk) {
    if (capturing) {
      *failedCall = "a new tensor-map chunk during stream capture (run the call once "
                    "before capturing it)";
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    SlotChunk chunk;
    *failedCall = "cuMemAlloc";
    CUresult result = cuMemAlloc(&chunk.device, kSlotsPerChunk * sizeof(CUtensorMap));
    if (result != CUDA_SUCCESS)
      return result;
    *failedCall = "cuMemAllocHost";
    result = cuMemAllocHost(reinterpret_cast<void **>(&chunk.host),
                            kSlotsPerChunk * sizeof(CUtensorMap));
    if (result != CUDA_SUCCESS) {
      cuMemFree(chunk.device);
      return result;
    }
    chunks.push_back(chunk);
    used = 0;
  }
  const SlotChunk &chunk = chunks.back();
  *device = chunk.device + used * sizeof(CUtensorMap);
  *host = chunk.host + used;
  ++used;
  return CUDA_SUCCESS;
}

void *encodeToDevice(const char *entryPoint, const TensorMapRequest &request) {
  std::string error = validateTensorMap(request);
  if (!error.empty()) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT, std::string(entryPoint) + ": " + error);
    return nullptr;
  }
  CUcontext context = nullptr;
  if (!activateContextOrRecord(entryPoint, &context))
    return nullptr;
  // The kernels reading the map run on the call's stream; without one (a
  // direct call of the compiled function), on a stream of its own, so the
  // upload is waited for.
  CUstream stream = currentCallStream();
  DeviceTensorMaps &maps = deviceTensorMaps();
  RequestKey requested = requestKey(context, stream, request);
  {
    std::lock_guard<std::mutex> lock(maps.mutex);
    auto hit = maps.byRequest.find(requested);
    if (hit != maps.byRequest.end())
      return reinterpret_cast<void *>(hit->second);
  }
  CUtensorMap tensorMap;
  if (recordIfFailed(encodeTensorMap(request, &tensorMap), entryPoint, "cuTensorMapEncodeTiled"))
    return nullptr;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (stream && recordIfFailed(cuStreamIsCapturing(stream, &capture), entryPoint,
                               "cuStreamIsCapturing"))
    return nullptr;
  bool capturing = capture != CU_STREAM_CAPTURE_STATUS_NONE;

  std::lock_guard<std::mutex> lock(maps.mutex);
  CUdeviceptr slot = 0;
  CUtensorMap *host = nullptr;
  const char *failedCall = nullptr;
  if (recordIfFailed(takeSlot(maps, context, capturing, &slot, &host, &failedCall), entryPoint,
                     failedCall))
    return nullptr;
  *host = tensorMap;
  CUresult result;
  if (stream) {
    failedCall = "cuMemcpyHtoDAsync";
    result = cuMemcpyHtoDAsync(slot, host, sizeof(tensorMap), stream);
  } else {
    failedCall = "cuMemcpyHtoD";
    result = cuMemcpyHtoD(slot, host, sizeof(tensorMap));
    if (result == CUDA_SUCCESS) {
      failedCall = "cuStreamSynchronize";
      result = cuStreamSynchronize(CU_STREAM_LEGACY);
    }
  }
  if (recordIfFailed(result, entryPoint, failedCall))
    return nullptr;
  // A kernel on a side stream may read it (a GEMM beside a norm gradient).
  if (stream)
    orderSideStreamsAfter(stream, entryPoint);
  // A copy made during capture runs only when the graph does: eager calls
  // must not find the slot.
  if (!capturing)
    maps.byRequest.emplace(requested, slot);
  return reinterpret_cast<void *>(slot);
}

} // namespace
} // namespace fusionrt

using namespace fusionrt;

extern "C" {

void *mgpuTensorMapEncodeTiledMemref(int64_t tensorRank, void *descriptor, int64_t tensorDataType,
                                     int64_t interleave, int64_t swizzle, int64_t l2Promotion,
                                     int64_t oobFill, int64_t *inputBoxDims) {
  const char *entryPoint = "mgpuTensorMapEncodeTiledMemref";
  if (hasPendingFailure())
    return nullptr;
  if (!descriptor || !inputBoxDims) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  std::string(entryPoint) +
                      ": expected a memref descriptor and box sizes, but got a null pointer");
    return nullptr;
  }
  TensorMapRequest request;
  request.rank = tensorRank;
  request.dataType = tensorDataType;
  request.interleave = interleave;
  request.swizzle = swizzle;
  request.l2Promotion = l2Promotion;
  request.oobFill = oobFill;
  if (tensorRank >= 1 && tensorRank <= kMaxTensorMapRank) {
    MemRefView view = MemRefView::read(descriptor, tensorRank);
    const int64_t bytes = tensorMapElementBytes(tensorDataType);
    request.globalAddress = view.begin(bytes);
    for (int64_t d = 0; d < tensorRank; ++d) {
      request.sizes[d] = view.sizes[d];
      request.strides[d] = view.strides[d];
      request.boxSizes[d] = inputBoxDims[d];
    }
  }
  return encodeToDevice(entryPoint, request);
}

void mgpuTensorMapEncodeTiled(void *tensorMap, int tensorDataType, uint32_t tensorRank,
                              void *globalAddress, const uint64_t *globalDim,
                              const uint64_t *globalStrides, const uint32_t *boxDim,
                              const uint32_t *elementStrides, int interleave, int swizzle,
                              int l2Promotion, int oobFill) {
  const char *entryPoint = "mgpuTensorMapEncodeTiled";
  if (hasPendingFailure())
    return;
  if (!tensorMap || !globalDim || !boxDim || !elementStrides || (tensorRank > 1 && !globalStrides)) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                  std::string(entryPoint) + ": expected non-null output, sizes, strides, box "
                                            "sizes and element strides, but got a null pointer");
    return;
  }
  TensorMapRequest request;
  request.rank = tensorRank;
  request.dataType = tensorDataType;
  request.globalAddress = globalAddress;
  request.interleave = interleave;
  request.swizzle = swizzle;
  request.l2Promotion = l2Promotion;
  request.oobFill = oobFill;
  const int64_t bytes = tensorMapElementBytes(tensorDataType);
  if (tensorRank >= 1 && tensorRank <= kMaxTensorMapRank && bytes > 0) {
    // CUDA order to row-major; byte strides that are not whole elements
    // cannot be multiples of 16 either and are reported as such.
    const int64_t rank = tensorRank;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t d = rank - 1 - i;
      request.sizes[d] = static_cast<int64_t>(globalDim[i]);
      request.boxSizes[d] = boxDim[i];
      request.elementStrides[d] = elementStrides[i];
      if (i == 0) {
        request.strides[d] = 1;
      } else {
        const uint64_t strideBytes = globalStrides[i - 1];
        if (strideBytes % 16 != 0) {
          recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT,
                        std::string(entryPoint) + ": expected stride of dimension " +
                            std::to_string(d) + " to be a multiple of 16 bytes, but got " +
                            std::to_string(strideBytes) + " bytes");
          return;
        }
        request.strides[d] = static_cast<int64_t>(strideBytes) / bytes;
      }
    }
  }
  std::string error = validateTensorMap(request);
  if (!error.empty()) {
    recordFailure(FUSIONRT_ERROR_INVALID_ARGUMENT, std::string(entryPoint) + ": " + error);
    return;
  }
  if (activateContextOrRecord(entryPoint))
    recordIfFailed(encodeTensorMap(request, static_cast<CUtensorMap *>(tensorMap)), entryPoint,
                   "cuTensorMapEncodeTiled");
}

} // extern "C"
