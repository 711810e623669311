//===- FakeDriver.h - a CUDA driver stand-in that counts calls --*- C++ -*-===//
//
// FakeDriver.cpp defines every driver function the runtime calls, so that a
// test binary linked with it (instead of libcuda) runs the runtime's paths
// that need a working driver, on a machine without a GPU, and can count the
// driver calls a steady-state call makes. One device (ordinal 0, 132 SMs,
// memory pools, 227 KiB of opt-in shared memory); every call succeeds unless
// a test sets a failure.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_RUNTIME_TEST_FAKEDRIVER_H
#define FUSION_RUNTIME_TEST_FAKEDRIVER_H

#include <cuda.h>

#include <map>
#include <string>

namespace fake_driver {

/// Calls per driver function so far (names without the _v2 suffix).
std::map<std::string, long> calls();

/// The calls made between two snapshots of calls(), as "name count, ...".
std::string difference(const std::map<std::string, long> &before,
                       const std::map<std::string, long> &after);

/// What cuLaunchKernel and cuLaunchKernelEx return (CUDA_SUCCESS by default).
void setLaunchResult(CUresult result);

/// Whether cuStreamIsCapturing reports an active capture (false by default).
void setCapturing(bool capturing);

/// A context other than the device's primary one, to make current as
/// another library could.
CUcontext otherContext();

} // namespace fake_driver

#endif // FUSION_RUNTIME_TEST_FAKEDRIVER_H
