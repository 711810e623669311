//===- RuntimeFuzz.cpp - libFuzzer target over the runtime's checks -------===//
//
// fusion-runtime-fuzz: the runtime's argument checks on arbitrary values,
// against the driver stand-in of fake/ (no GPU, no libcuda). The first byte
// of an input picks the entry point, the rest are its arguments as 64-bit
// words (missing words read as 0):
//   0  fusionrtValidateTensorMap / fusionrtEncodeTensorMap (the C API's spec);
//   1  mgpuTensorMapEncodeTiledMemref (a ranked memref descriptor, as the
//      compiled code passes it);
//   2  mgpuLaunchKernel / mgpuLaunchClusterKernel (grid, block, cluster and
//      shared memory sizes);
//   3  fusionrtInvoke (a packet: word count, device, flags, stream).
// Each must return or record an error, never crash; a tensor map the runtime
// accepts must also meet the driver's documented requirements for
// cuTensorMapEncodeTiled, checked here independently (checkAccepted): a map
// that passes our checks but not the driver's is a bug too, as the user then
// sees CUDA_ERROR_INVALID_VALUE instead of our message.
//
//===----------------------------------------------------------------------===//

#include "fusion_runtime.h"
#include "fusion_runtime_mgpu.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Words {
  const uint8_t *data;
  size_t size, at = 0;
  int64_t next() {
    int64_t v = 0;
    size_t n = size - at < 8 ? size - at : 8;
    std::memcpy(&v, data + at, n);
    at += n;
    return v;
  }
};

/// The harness's verdict on a broken property: abort is how a libFuzzer target
/// reports a bug (the input is saved as a crash). Test code only; the runtime
/// itself returns errors.
[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "fusion-runtime-fuzz: accepted, but %s\n", what);
  std::abort();
}

int elementBytes(int64_t dataType) {
  switch (dataType) {
  case 0: return 1;
  case 1: case 6: case 9: return 2;
  case 2: case 3: case 7: case 10: case 11: case 12: return 4;
  case 4: case 5: case 8: return 8;
  default: return 0;
  }
}

/// cuTensorMapEncodeTiled's requirements (CUDA driver API reference), on the
/// row-major spec: dimension rank-1 is CUDA's innermost dimension 0.
void checkAccepted(const fusionrtTensorMapSpec &s) {
  int bytes = elementBytes(s.dataType);
  if (bytes == 0) fail("the data type is not one of CUtensorMapDataType's");
  if (s.rank < 1 || s.rank > 5) fail("the rank is not 1..5");
  if (s.interleave < 0 || s.interleave > 2) fail("interleave is not a CUtensorMapInterleave");
  if (s.swizzle < 0 || s.swizzle > 3) fail("swizzle is not a CUtensorMapSwizzle");
  if (s.l2Promotion < 0 || s.l2Promotion > 3) fail("l2Promotion is not a CUtensorMapL2promotion");
  if (s.oobFill < 0 || s.oobFill > 1) fail("oobFill is not a CUtensorMapFloatOOBfill");
  if (s.interleave != 0 && s.rank < 3) fail("an interleaved map has rank < 3");
  uintptr_t align = s.interleave == 2 ? 32 : 16;
  if (reinterpret_cast<uintptr_t>(s.globalAddress) % align) fail("the address is misaligned");
  int inner = s.rank - 1;
  if (s.strides[inner] != 1) fail("the innermost stride is not 1");
  for (int d = 0; d < s.rank; ++d) {
    if (s.sizes[d] < 1 || s.sizes[d] > (int64_t(1) << 32)) fail("a size is not 1..2^32");
    if (s.boxSizes[d] < 1 || s.boxSizes[d] > 256) fail("a box size is not 1..256");
    int32_t e = s.elementStrides[d] == 0 ? 1 : s.elementStrides[d];
    if (e < 1 || e > 8) fail("an element stride is not 1..8");
    if (d != inner) {
      if (s.strides[d] < 1 || s.strides[d] > (int64_t(1) << 40) / bytes)
        fail("a stride is out of range");
      __int128 strideBytes = static_cast<__int128>(s.strides[d]) * bytes;
      if (strideBytes % 16 || strideBytes >= (static_cast<__int128>(1) << 40))
        fail("a byte stride is not a multiple of 16 below 2^40");
    }
  }
  int64_t innerBoxBytes = int64_t(s.boxSizes[inner]) * bytes;
  if (s.interleave == 0 && innerBoxBytes % 16) fail("the inner box is not a multiple of 16 bytes");
  if (s.interleave == 0 && s.swizzle != 0) {
    int64_t span = s.swizzle == 1 ? 32 : s.swizzle == 2 ? 64 : 128;
    if (innerBoxBytes > span) fail("the inner box is wider than the swizzle span");
  }
  if (s.oobFill != 0 && s.dataType <= 5)
    fail("NaN fill on an integer type");
}

void tensorMapSpec(Words &w) {
  fusionrtTensorMapSpec s{};
  s.dataType = static_cast<fusionrtDataType>(w.next() % 16);
  s.rank = static_cast<int32_t>(w.next());
  s.globalAddress = reinterpret_cast<const void *>(w.next());
  for (int d = 0; d < 5; ++d) {
    s.sizes[d] = w.next();
    s.strides[d] = w.next();
    int64_t packed = w.next();
    s.boxSizes[d] = static_cast<int32_t>(packed);
    s.elementStrides[d] = static_cast<int32_t>(packed >> 32);
  }
  int64_t enums = w.next();
  s.swizzle = static_cast<fusionrtSwizzle>(static_cast<int8_t>(enums));
  s.interleave = static_cast<fusionrtInterleave>(static_cast<int8_t>(enums >> 8));
  s.l2Promotion = static_cast<fusionrtL2Promotion>(static_cast<int8_t>(enums >> 16));
  s.oobFill = static_cast<fusionrtOobFill>(static_cast<int8_t>(enums >> 24));
  if (fusionrtValidateTensorMap(&s) != FUSIONRT_SUCCESS) {
    if (std::strlen(fusionrtGetLastError()) == 0)
      fail("... no: rejected without a message");
    return;
  }
  checkAccepted(s);
  fusionrtTensorMap out;
  (void)fusionrtEncodeTensorMap(&s, &out);
}

void tensorMapMemref(Words &w) {
  int64_t rank = w.next() % 8; // the runtime must refuse 0, 6, 7 and negatives
  std::vector<int64_t> descriptor(3 + 2 * 8);
  descriptor[0] = descriptor[1] = w.next();
  descriptor[2] = w.next();
  for (int d = 0; d < 16; ++d)
    descriptor[3 + d] = w.next();
  int64_t dataType = w.next() % 16, interleave = w.next() % 4, swizzle = w.next() % 5;
  int64_t l2 = w.next() % 5, oob = w.next() % 3;
  int64_t box[8];
  for (int64_t &b : box)
    b = w.next();
  void *map = mgpuTensorMapEncodeTiledMemref(rank, descriptor.data(), dataType, interleave,
                                             swizzle, l2, oob, box);
  fusionrtStatus status = fusionrtClearStatus();
  if ((map == nullptr) != (status != FUSIONRT_SUCCESS))
    fail("a null map and the status disagree");
}

int kernelAnchor;

void launch(Words &w) {
  void *function = (w.next() & 1) ? &kernelAnchor : nullptr;
  intptr_t v[9];
  for (intptr_t &x : v)
    x = static_cast<intptr_t>(w.next());
  int32_t smem = static_cast<int32_t>(w.next());
  if (w.next() & 1)
    mgpuLaunchKernel(function, v[0], v[1], v[2], v[3], v[4], v[5], smem, nullptr, nullptr,
                     nullptr, 0);
  else
    mgpuLaunchClusterKernel(function, v[6], v[7], v[8], v[0], v[1], v[2], v[3], v[4], v[5],
                            smem, nullptr, nullptr, nullptr);
  (void)fusionrtClearStatus();
}

void sink() {}

void invoke(Words &w) {
  std::vector<int64_t> packet(FUSIONRT_INVOKE_HEADER_WORDS + FUSIONRT_INVOKE_MAX_WORDS, 0);
  packet[0] = (w.next() & 1) ? reinterpret_cast<int64_t>(&sink) : 0;
  packet[1] = w.next();
  packet[2] = w.next();
  packet[3] = w.next();
  packet[4] = 0; // the stream: a fuzzed handle is not something the runtime can check
  int32_t status = fusionrtInvoke(packet.data());
  bool wellFormed = packet[0] != 0 && packet[1] >= 0 &&
                    packet[1] <= FUSIONRT_INVOKE_MAX_WORDS && packet[2] >= 0 &&
                    (packet[3] & ~int64_t(3)) == 0;
  if (!wellFormed && status != FUSIONRT_ERROR_INVALID_ARGUMENT)
    fail("a malformed packet was called");
  (void)fusionrtClearStatus();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  Words w{data + 1, size - 1};
  switch (data[0] % 4) {
  case 0: tensorMapSpec(w); break;
  case 1: tensorMapMemref(w); break;
  case 2: launch(w); break;
  default: invoke(w); break;
  }
  return 0;
}
