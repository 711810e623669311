/*===- fusion_runtime.h - C API of the fusion host runtime --------*- C -*-===//
 *
 * The runtime that compiled fusion programs run on: it implements the `mgpu*`
 * host ABI that MLIR 22's gpu-to-LLVM lowering calls (declared in
 * fusion_runtime_mgpu.h) on the CUDA driver API, and this C API.
 *
 * Errors. The `mgpu*` entry points return nothing, so they cannot hand an
 * error back. Instead, the first failure on a thread (the entry point, the
 * driver call and its CUDA error name, the kernel) becomes that thread's
 * *pending status*. While a status is pending, entry points that start work
 * or create objects do nothing (those that return a handle return NULL);
 * entry points that wait for or release objects still run, so nothing leaks.
 * Read the pending status with fusionrtPeekStatus(), read and clear it with
 * fusionrtClearStatus(), and get its text with fusionrtGetLastError().
 *
 * The fusionrt* functions below return their status directly and also leave
 * their message in fusionrtGetLastError(); they never make a status pending.
 * Nothing in the runtime ends the process.
 *
 * Dimensions are numbered row-major, as in a memref or a PyTorch tensor:
 * dimension 0 is the outermost, dimension rank-1 the innermost (contiguous).
 *===----------------------------------------------------------------------===*/

#ifndef FUSION_RUNTIME_H
#define FUSION_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define FUSIONRT_EXPORT __declspec(dllexport)
#else
#define FUSIONRT_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define FUSIONRT_ALIGNAS(n) alignas(n)
#else
#define FUSIONRT_ALIGNAS(n) _Alignas(n)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===
 * Status
 *===----------------------------------------------------------------------===*/

typedef enum fusionrtStatus {
  FUSIONRT_SUCCESS = 0,
  /* An argument is invalid; the message names it, with expected and given values. */
  FUSIONRT_ERROR_INVALID_ARGUMENT = 1,
  /* A CUDA driver call failed; the message names the call and the CUDA error. */
  FUSIONRT_ERROR_CUDA = 2,
  /* A device limit is exceeded (shared memory per block, cluster size). */
  FUSIONRT_ERROR_LIMIT_EXCEEDED = 3,
  /* The device lacks a feature the call needs (clusters, tensor maps). */
  FUSIONRT_ERROR_UNSUPPORTED = 4,
  /* Not values: they make every int32 representable, as callers may pass
   * values outside the list (the runtime refuses them with a message). */
  FUSIONRT_STATUS_MIN_ENUM = -0x7fffffff - 1,
  FUSIONRT_STATUS_MAX_ENUM = 0x7fffffff,
} fusionrtStatus;

/* The enumerator's name without the prefix, e.g. "invalid argument". */
FUSIONRT_EXPORT const char *fusionrtStatusName(fusionrtStatus status);

/* The message of the most recent failure on this thread ("" if none). It stays
 * readable after fusionrtClearStatus(); the pointer is valid until the next
 * failure on this thread. */
FUSIONRT_EXPORT const char *fusionrtGetLastError(void);

/* This thread's pending status, left pending. */
FUSIONRT_EXPORT fusionrtStatus fusionrtPeekStatus(void);

/* This thread's pending status; clears it, so that entry points work again. */
FUSIONRT_EXPORT fusionrtStatus fusionrtClearStatus(void);

/*===----------------------------------------------------------------------===
 * Devices
 *===----------------------------------------------------------------------===*/

/* Selects the device whose primary context this thread's entry points use
 * (default 0). Checks only the ordinal's sign; no driver call. */
FUSIONRT_EXPORT fusionrtStatus fusionrtSetDevice(int device);
FUSIONRT_EXPORT int fusionrtGetDevice(void);

/* Initializes the driver and makes `device`'s primary context current on this
 * thread (and selects it, as fusionrtSetDevice). */
FUSIONRT_EXPORT fusionrtStatus fusionrtInit(int device);

FUSIONRT_EXPORT fusionrtStatus fusionrtGetDeviceCount(int *count);

/*===----------------------------------------------------------------------===
 * The call stream
 *===----------------------------------------------------------------------===*/

/* Makes the compiled functions this thread calls next run on `stream` (a
 * CUstream the caller owns and keeps alive, e.g. PyTorch's current stream;
 * NULL is the legacy default stream), asynchronously: a call enqueues its
 * allocations, launches and frees on `stream` and returns without waiting
 * for them, creates no stream and synchronizes nothing, so calls are ordered
 * with the caller's other work on that stream and can be captured in a CUDA
 * graph (after a first call outside the capture, which loads the module and
 * uploads the TMA descriptors). A failure of an enqueued kernel surfaces at
 * the next synchronization of the stream (the caller's, or the next call's
 * status). Until fusionrtClearCallStream, or by default: each call creates
 * its own stream, waits for it and destroys it. */
FUSIONRT_EXPORT fusionrtStatus fusionrtSetCallStream(void *stream);
FUSIONRT_EXPORT fusionrtStatus fusionrtClearCallStream(void);

/*===----------------------------------------------------------------------===
 * Calling a compiled function in one foreign call
 *===----------------------------------------------------------------------===*/

/* For callers whose foreign calls cost per argument (the Python loader's
 * ctypes): calls a compiled host function, whose arguments are all 64-bit
 * words (MLIR's expanded memref descriptors: pointers and int64_t), from one
 * packet of int64_t words:
 *
 *   [0] the function's address        [3] flags (FUSIONRT_INVOKE_*)
 *   [1] n, its number of words        [4] the stream (a CUstream, or 0)
 *   [2] the device ordinal            [5 .. 5+n) the function's words, in order
 *
 * In one call it does what a caller would do around the function: if a
 * failure is pending, it clears it and returns its status or'ed with
 * FUSIONRT_INVOKE_NOT_CALLED, without calling; else it selects the device
 * (fusionrtSetDevice), with FUSIONRT_INVOKE_CALL_STREAM runs the function on
 * the stream (fusionrtSetCallStream, cleared after), with
 * FUSIONRT_INVOKE_SYNCHRONIZE then waits for the stream
 * (mgpuStreamSynchronize), and returns the pending status, cleared
 * (fusionrtClearStatus: 0 on success; the message in fusionrtGetLastError).
 * While the function runs, the device's context is made current by the first
 * entry point that needs it, and later entry points do not ask the driver
 * again. A malformed packet (null function, more than
 * FUSIONRT_INVOKE_MAX_WORDS words, negative device, unknown flags) returns
 * FUSIONRT_ERROR_INVALID_ARGUMENT without calling and without a pending
 * status. */
#define FUSIONRT_INVOKE_HEADER_WORDS 5
#define FUSIONRT_INVOKE_MAX_WORDS 256
#define FUSIONRT_INVOKE_CALL_STREAM 1
#define FUSIONRT_INVOKE_SYNCHRONIZE 2
#define FUSIONRT_INVOKE_NOT_CALLED 0x100
FUSIONRT_EXPORT int32_t fusionrtInvoke(const int64_t *packet);

/* Returns the memory the runtime keeps cached for the compiled code's
 * workspaces and intermediates (stream-ordered allocations that are reused
 * from call to call) to the driver, like torch.cuda.empty_cache(). Memory in
 * use is not affected. */
FUSIONRT_EXPORT fusionrtStatus fusionrtReleaseCachedMemory(void);

typedef struct fusionrtDeviceInfo {
  int ordinal;
  char name[256];
  int computeCapabilityMajor;
  int computeCapabilityMinor;
  int multiprocessorCount;
  int maxThreadsPerBlock;
  int warpSize;
  /* Shared memory per block without opt-in (48 KiB) and with opt-in (227 KiB on sm_90). */
  int maxSharedMemoryPerBlock;
  int maxSharedMemoryPerBlockOptin;
  int maxSharedMemoryPerMultiprocessor;
  int l2CacheBytes;
  /* 1 when the device launches thread-block clusters (sm_90 and later). */
  int clusterLaunch;
  /* 1 when the device has the tensor memory accelerator (sm_90 and later). */
  int tensorMapSupported;
  uint64_t totalGlobalMemoryBytes;
} fusionrtDeviceInfo;

FUSIONRT_EXPORT fusionrtStatus fusionrtGetDeviceInfo(int device, fusionrtDeviceInfo *info);

/*===----------------------------------------------------------------------===
 * Tensor maps (TMA descriptors)
 *
 * The enumerators have the values of the CUDA driver's CUtensorMap* enums.
 *===----------------------------------------------------------------------===*/

typedef enum fusionrtDataType {
  FUSIONRT_DATA_TYPE_UINT8 = 0,
  FUSIONRT_DATA_TYPE_UINT16 = 1,
  FUSIONRT_DATA_TYPE_UINT32 = 2,
  FUSIONRT_DATA_TYPE_INT32 = 3,
  FUSIONRT_DATA_TYPE_UINT64 = 4,
  FUSIONRT_DATA_TYPE_INT64 = 5,
  FUSIONRT_DATA_TYPE_FLOAT16 = 6,
  FUSIONRT_DATA_TYPE_FLOAT32 = 7,
  FUSIONRT_DATA_TYPE_FLOAT64 = 8,
  FUSIONRT_DATA_TYPE_BFLOAT16 = 9,
  FUSIONRT_DATA_TYPE_FLOAT32_FTZ = 10,
  FUSIONRT_DATA_TYPE_TFLOAT32 = 11,
  FUSIONRT_DATA_TYPE_TFLOAT32_FTZ = 12,
  /* Not values: they make every int32 representable, as callers may pass
   * values outside the list (the runtime refuses them with a message). */
  FUSIONRT_DATA_TYPE_MIN_ENUM = -0x7fffffff - 1,
  FUSIONRT_DATA_TYPE_MAX_ENUM = 0x7fffffff,
} fusionrtDataType;

typedef enum fusionrtSwizzle {
  FUSIONRT_SWIZZLE_NONE = 0,
  FUSIONRT_SWIZZLE_32B = 1,
  FUSIONRT_SWIZZLE_64B = 2,
  FUSIONRT_SWIZZLE_128B = 3,
  /* Not values: they make every int32 representable, as callers may pass
   * values outside the list (the runtime refuses them with a message). */
  FUSIONRT_SWIZZLE_MIN_ENUM = -0x7fffffff - 1,
  FUSIONRT_SWIZZLE_MAX_ENUM = 0x7fffffff,
} fusionrtSwizzle;

typedef enum fusionrtInterleave {
  FUSIONRT_INTERLEAVE_NONE = 0,
  FUSIONRT_INTERLEAVE_16B = 1,
  FUSIONRT_INTERLEAVE_32B = 2,
  /* Not values: they make every int32 representable, as callers may pass
   * values outside the list (the runtime refuses them with a message). */
  FUSIONRT_INTERLEAVE_MIN_ENUM = -0x7fffffff - 1,
  FUSIONRT_INTERLEAVE_MAX_ENUM = 0x7fffffff,
} fusionrtInterleave;

typedef enum fusionrtL2Promotion {
  FUSIONRT_L2_PROMOTION_NONE = 0,
  FUSIONRT_L2_PROMOTION_64B = 1,
  FUSIONRT_L2_PROMOTION_128B = 2,
  FUSIONRT_L2_PROMOTION_256B = 3,
  /* Not values: they make every int32 representable, as callers may pass
   * values outside the list (the runtime refuses them with a message). */
  FUSIONRT_L2_PROMOTION_MIN_ENUM = -0x7fffffff - 1,
  FUSIONRT_L2_PROMOTION_MAX_ENUM = 0x7fffffff,
} fusionrtL2Promotion;

typedef enum fusionrtOobFill {
  FUSIONRT_OOB_FILL_ZERO = 0,
  /* NaN that a following FMA treats as zero; floating-point element types only. */
  FUSIONRT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1,
  /* Not values: they make every int32 representable, as callers may pass
   * values outside the list (the runtime refuses them with a message). */
  FUSIONRT_OOB_FILL_MIN_ENUM = -0x7fffffff - 1,
  FUSIONRT_OOB_FILL_MAX_ENUM = 0x7fffffff,
} fusionrtOobFill;

#define FUSIONRT_TENSOR_MAP_MAX_RANK 5

/* A tiled tensor map over a row-major view of global memory. */
typedef struct fusionrtTensorMapSpec {
  fusionrtDataType dataType;
  int32_t rank;                 /* 1..5 */
  const void *globalAddress;    /* 16-byte aligned (32 with FUSIONRT_INTERLEAVE_32B) */
  int64_t sizes[FUSIONRT_TENSOR_MAP_MAX_RANK];   /* elements, 1..2^32 */
  /* In elements. strides[rank-1] must be 1; the others, in bytes, multiples of 16 below 2^40. */
  int64_t strides[FUSIONRT_TENSOR_MAP_MAX_RANK];
  int32_t boxSizes[FUSIONRT_TENSOR_MAP_MAX_RANK]; /* 1..256 */
  /* 1..8; 0 is read as 1. */
  int32_t elementStrides[FUSIONRT_TENSOR_MAP_MAX_RANK];
  fusionrtSwizzle swizzle;
  fusionrtInterleave interleave;
  fusionrtL2Promotion l2Promotion;
  fusionrtOobFill oobFill;
} fusionrtTensorMapSpec;

/* The encoded descriptor, bit-identical to CUDA's CUtensorMap. */
typedef struct fusionrtTensorMap {
  FUSIONRT_ALIGNAS(128) uint64_t opaque[16];
} fusionrtTensorMap;

/* Checks `spec` without any driver call. */
FUSIONRT_EXPORT fusionrtStatus fusionrtValidateTensorMap(const fusionrtTensorMapSpec *spec);

/* Checks `spec` (as fusionrtValidateTensorMap, before any driver call), then
 * encodes it with cuTensorMapEncodeTiled into `*out`. */
FUSIONRT_EXPORT fusionrtStatus fusionrtEncodeTensorMap(const fusionrtTensorMapSpec *spec,
                                                       fusionrtTensorMap *out);

/* Bytes per element of `dataType`, or 0 when it is not a fusionrtDataType. */
FUSIONRT_EXPORT int fusionrtDataTypeSize(int dataType);

#ifdef __cplusplus
}
#endif

#endif /* FUSION_RUNTIME_H */
