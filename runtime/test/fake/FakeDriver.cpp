//===- FakeDriver.cpp - a CUDA driver stand-in that counts calls ----------===//

#include "FakeDriver.h"
#include <cstdlib>

#include <atomic>
#include <cstring>
#include <mutex>

namespace fake_driver {
namespace {

struct State {
  std::mutex mutex;
  std::map<std::string, long> calls;
  std::map<std::pair<CUmodule, std::string>, CUfunction> functions;
  CUresult launchResult = CUDA_SUCCESS;
  uintptr_t nextHandle = 0x10000;
  CUdeviceptr nextPointer = 0x7f0000000000;
};

State &state() {
  static State *s = new State;
  return *s;
}

void count(const char *function) {
  std::string name = function;
  if (name.size() > 3 && name.compare(name.size() - 3, 3, "_v2") == 0)
    name.resize(name.size() - 3);
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls[name];
}

template <typename T> T newHandle() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.nextHandle += 0x100;
  return reinterpret_cast<T>(s.nextHandle);
}

CUdeviceptr newPointer(size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  CUdeviceptr ptr = s.nextPointer;
  s.nextPointer += (bytes + 255) / 256 * 256 + 256;
  return ptr;
}

CUcontext const kPrimary = reinterpret_cast<CUcontext>(uintptr_t(0xc0));
CUcontext const kOther = reinterpret_cast<CUcontext>(uintptr_t(0xc1));
thread_local CUcontext current = nullptr;

} // namespace

std::map<std::string, long> calls() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.calls;
}

std::string difference(const std::map<std::string, long> &before,
                       const std::map<std::string, long> &after) {
  std::string text;
  for (const auto &[name, n] : after) {
    auto it = before.find(name);
    long delta = n - (it == before.end() ? 0 : it->second);
    if (delta)
      text += (text.empty() ? "" : ", ") + name + " " + std::to_string(delta);
  }
  return text.empty() ? "none" : text;
}

void setLaunchResult(CUresult result) { state().launchResult = result; }

bool capturingNow = false;
void setCapturing(bool capturing) { capturingNow = capturing; }

CUcontext otherContext() { return kOther; }

} // namespace fake_driver

using namespace fake_driver;

#define COUNT() count(__func__)

extern "C" {

CUresult cuInit(unsigned int) { COUNT(); return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult, const char **) {
  COUNT();
  return CUDA_ERROR_INVALID_VALUE; // the runtime's own table names it
}
CUresult cuDeviceGetCount(int *n) { COUNT(); *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  COUNT();
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice) {
  COUNT();
  std::strncpy(name, "fake device", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem(size_t *bytes, CUdevice) { COUNT(); *bytes = size_t(1) << 37; return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice) {
  COUNT();
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
  default: *value = 1; break;
  }
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  COUNT();
  *context = kPrimary;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *context) { COUNT(); *context = current; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext context) { COUNT(); current = context; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { COUNT(); return CUDA_SUCCESS; }

CUresult cuModuleLoadData(CUmodule *module, const void *) {
  COUNT();
  *module = newHandle<CUmodule>();
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadDataEx(CUmodule *module, const void *, unsigned int, CUjit_option *, void **) {
  COUNT();
  *module = newHandle<CUmodule>();
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule) { COUNT(); return CUDA_SUCCESS; }
// Every name is a kernel of every fake module: no enumeration (the runtime
// then asks each module, as with a driver older than CUDA 12.4).
CUresult cuModuleGetFunctionCount(unsigned int *, CUmodule) { COUNT(); return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuModuleEnumerateFunctions(CUfunction *, unsigned int, CUmodule) { COUNT(); return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuFuncGetName(const char **, CUfunction) { COUNT(); return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  COUNT();
  if (std::strncmp(name, "missing", 7) == 0)
    return CUDA_ERROR_NOT_FOUND;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  CUfunction &f = s.functions[{module, name}];
  if (!f) {
    s.nextHandle += 0x100;
    f = reinterpret_cast<CUfunction>(s.nextHandle);
  }
  *function = f;
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) { COUNT(); return CUDA_SUCCESS; }
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction, int, size_t) {
  COUNT();
  *blocks = 1;
  return CUDA_SUCCESS;
}
CUresult cuOccupancyMaxActiveClusters(int *clusters, CUfunction, const CUlaunchConfig *) {
  COUNT();
  *clusters = 7;
  return CUDA_SUCCESS;
}
CUresult cuOccupancyMaxPotentialClusterSize(int *size, CUfunction, const CUlaunchConfig *) {
  COUNT();
  *size = 8;
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, unsigned int, CUstream, void **, void **) {
  COUNT();
  return state().launchResult;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *, CUfunction, void **, void **) {
  COUNT();
  return state().launchResult;
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType, cuuint32_t, void *address,
                                const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  COUNT();
  std::memset(map, 0, sizeof(*map));
  std::memcpy(map, &address, sizeof(address));
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes) { COUNT(); *ptr = newPointer(bytes); return CUDA_SUCCESS; }
CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned int) {
  COUNT();
  *ptr = newPointer(bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *) {
  COUNT();
  *pool = newHandle<CUmemoryPool>();
  return CUDA_SUCCESS;
}
CUresult cuMemPoolDestroy(CUmemoryPool) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void *) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemPoolTrimTo(CUmemoryPool, size_t) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *ptr, size_t bytes, CUmemoryPool, CUstream) {
  COUNT();
  *ptr = newPointer(bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemFreeAsync(CUdeviceptr, CUstream) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemcpyAsync(CUdeviceptr, CUdeviceptr, size_t, CUstream) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoD(CUdeviceptr, const void *, size_t) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoDAsync(CUdeviceptr, const void *, size_t, CUstream) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemAllocHost(void **ptr, size_t bytes) {
  COUNT();
  *ptr = std::calloc(1, bytes);
  return *ptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus *status) {
  COUNT();
  *status = fake_driver::capturingNow ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult cuMemsetD16Async(CUdeviceptr, unsigned short, size_t, CUstream) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemsetD32Async(CUdeviceptr, unsigned int, size_t, CUstream) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemHostRegister(void *, size_t, unsigned int) { COUNT(); return CUDA_SUCCESS; }
CUresult cuMemHostUnregister(void *) { COUNT(); return CUDA_SUCCESS; }

CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  COUNT();
  *stream = newHandle<CUstream>();
  return CUDA_SUCCESS;
}
CUresult cuStreamCreateWithPriority(CUstream *stream, unsigned int, int) {
  COUNT();
  *stream = newHandle<CUstream>();
  return CUDA_SUCCESS;
}
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  COUNT();
  *least = 0;
  *greatest = -5;
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream) { COUNT(); return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream) { COUNT(); return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int) { COUNT(); return CUDA_SUCCESS; }
CUresult cuEventCreate(CUevent *event, unsigned int) {
  COUNT();
  *event = newHandle<CUevent>();
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent) { COUNT(); return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent, CUstream) { COUNT(); return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent) { COUNT(); return CUDA_SUCCESS; }

} // extern "C"
