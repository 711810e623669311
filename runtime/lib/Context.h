//===- Context.h - device selection and primary contexts --------*- C++ -*-===//
//
// Each thread has a selected device (default 0; mgpuSetDefaultDevice,
// fusionrtSetDevice). Entry points run in that device's primary context, the
// same context PyTorch and the CUDA runtime use, so pointers and streams pass
// freely between them. The driver is initialized once per process; a failed
// cuInit is remembered and reported by every later call.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_RUNTIME_CONTEXT_H
#define FUSION_RUNTIME_CONTEXT_H

#include <cuda.h>

#include <string>

namespace fusionrt {

void selectDevice(int device);
int selectedDevice();

/// Initializes the driver, retains the selected device's primary context and
/// makes it current on this thread. On failure returns the failing result and
/// names the failing driver call in `*failedCall`.
CUresult activateContext(CUcontext *context, CUdevice *device, const char **failedCall);

/// fusionrtInvoke brackets a compiled function's run with these: the first
/// entry point that makes the context current pins it for the rest of the
/// run, so later entry points make no driver call for it (nothing but the
/// runtime's entry points runs in between).
void beginInvocation();
void endInvocation();

/// activateContext for mgpu* entry points: records a failure as the pending
/// status, attributed to `entryPoint`. Returns false on failure.
bool activateContextOrRecord(const char *entryPoint, CUcontext *context = nullptr,
                             CUdevice *device = nullptr);

/// The opt-in limit of dynamic shared memory per block of `device` (cached).
CUresult maxSharedMemoryPerBlockOptin(CUdevice device, int *bytes);

/// True for results that mean the driver is shutting down (or already gone):
/// release calls made from static destructors at exit see these.
bool isShutdownResult(CUresult result);

/// The stream a call runs on (fusionrtSetCallStream), or null without one.
/// CU_STREAM_LEGACY for a null stream set as the call stream.
CUstream currentCallStream();

/// Forgets the streams of the host function this thread last ran (a new call
/// begins): the next mgpuStreamCreate makes the primary again.
void resetCallStreams();

/// Makes the side streams of the running host function wait for the work
/// enqueued on `stream` so far (a tensor map uploaded there that a kernel on
/// a side stream may read); records a failure for `entryPoint`.
void orderSideStreamsAfter(CUstream stream, const char *entryPoint);

} // namespace fusionrt

#endif // FUSION_RUNTIME_CONTEXT_H
