//===- FakeDriverTests.cpp - the per-call path against a counting driver --===//
//
// The binary fusion-runtime-fake-driver-tests links FakeDriver.cpp instead of
// libcuda: every driver call succeeds and is counted. Host functions shaped
// like the lowered code of the three kinds of kernels (see the disassembly of
// a compiled library: a persistent GEMM, a cooperative kernel with a
// workspace, a cluster kernel) are called through fusionrtInvoke as the
// Python loader calls them, and the tests pin the driver calls a repeated
// call makes: the launch, the workspace's stream-ordered allocations, and one
// look at the current context; nothing else (issue 14, host overhead).
//
//===----------------------------------------------------------------------===//

#include "../cpp/Harness.h"
#include "FakeDriver.h"

#include <chrono>
#include <vector>

using namespace fusionrt_test;

namespace {

constexpr int kSuiteOrder = 0;

// Kernel names as lowered code passes them: string globals.
const char kGemmKernel[] = "gemm_kernel";
const char kRowsKernel[] = "rows_kernel";
const char kClusterKernel[] = "cluster_kernel";
const char kImage[] = "a device image";

void *module = nullptr;
int hostCalls = 0;

struct MemRef2 {
  int64_t allocated, aligned, offset, sizes[2], strides[2];
};

void *encode(MemRef2 &m, int64_t box0, int64_t box1) {
  int64_t box[] = {box0, box1};
  return mgpuTensorMapEncodeTiledMemref(2, &m, /*bf16=*/9, 0, /*128B=*/3, 0, 0, box);
}

void launchGemm(void *stream, MemRef2 &a, MemRef2 &b, MemRef2 &c) {
  void *maps[] = {encode(a, 128, 64), encode(b, 64, 64), encode(c, 128, 64)};
  int64_t tiles = (a.sizes[0] / 128) * (b.sizes[1] / 128);
  int64_t sms = fusionrtMultiprocessorCount();
  void *function = mgpuModuleGetFunction(module, kGemmKernel);
  void *params[] = {&maps[0], &maps[1], &maps[2]};
  mgpuLaunchKernel(function, std::min(tiles, sms), 1, 1, 384, 1, 1, 200000, stream, params,
                   nullptr, 3);
}

#define MEMREF2_PARAMS(x)                                                                          \
  int64_t x##0, int64_t x##1, int64_t x##o, int64_t x##s0, int64_t x##s1, int64_t x##t0,          \
      int64_t x##t1
#define MEMREF2(x) MemRef2{x##0, x##1, x##o, {x##s0, x##s1}, {x##t0, x##t1}}

/// A persistent GEMM: c = a @ b.
extern "C" void hostGemm(MEMREF2_PARAMS(a), MEMREF2_PARAMS(b), MEMREF2_PARAMS(c)) {
  ++hostCalls;
  MemRef2 a = MEMREF2(a), b = MEMREF2(b), c = MEMREF2(c);
  void *stream = mgpuStreamCreate();
  launchGemm(stream, a, b, c);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

/// A cooperative kernel whose rows go through a workspace in global memory.
extern "C" void hostRows(MEMREF2_PARAMS(a), MEMREF2_PARAMS(b), MEMREF2_PARAMS(c)) {
  ++hostCalls;
  MemRef2 a = MEMREF2(a), b = MEMREF2(b), c = MEMREF2(c);
  void *stream = mgpuStreamCreate();
  void *partials = mgpuMemAlloc(uint64_t(a.sizes[0]) * 8 * 4, stream, false);
  void *counters = mgpuMemAlloc(uint64_t(a.sizes[0] / 128) * 4, stream, false);
  mgpuMemset32(counters, 0, size_t(a.sizes[0] / 128), stream);
  void *maps[] = {encode(a, 128, 64), encode(b, 64, 64), encode(c, 128, 64)};
  int64_t limit = fusionrtCooperativeGridLimit(kRowsKernel, 384, 100000, 4);
  void *function = mgpuModuleGetFunction(module, kRowsKernel);
  void *params[] = {&maps[0], &maps[1], &maps[2], &partials, &counters};
  mgpuLaunchKernel(function, limit, 1, 1, 384, 1, 1, 100000, stream, params, nullptr, 5);
  mgpuMemFree(partials, stream);
  mgpuMemFree(counters, stream);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

/// A persistent kernel on clusters of 16 CTAs (non-portable).
extern "C" void hostCluster(MEMREF2_PARAMS(a), MEMREF2_PARAMS(b), MEMREF2_PARAMS(c)) {
  ++hostCalls;
  MemRef2 a = MEMREF2(a), b = MEMREF2(b), c = MEMREF2(c);
  void *stream = mgpuStreamCreate();
  void *maps[] = {encode(a, 128, 64), encode(b, 64, 64), encode(c, 128, 64)};
  int64_t clusters = fusionrtMaxActiveClusters(kClusterKernel, 16, 384, 200000);
  void *function = mgpuModuleGetFunction(module, kClusterKernel);
  void *params[] = {&maps[0], &maps[1], &maps[2]};
  mgpuLaunchClusterKernel(function, 16, 1, 1, 16 * clusters, 1, 1, 384, 1, 1, 200000, stream,
                          params, nullptr);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

/// A kernel with a small-M body (fusion.kernel_small_m): per call, the
/// host picks the body from M, and with it the grid and the dynamic shared
/// memory (the main body's 4 stages of 128 x 256 tiles, or the small one's
/// 6 stages of 128 x 64), passing the choice as the last argument.
extern "C" void hostTwoBody(MEMREF2_PARAMS(a), MEMREF2_PARAMS(b), MEMREF2_PARAMS(c)) {
  ++hostCalls;
  MemRef2 a = MEMREF2(a), b = MEMREF2(b), c = MEMREF2(c);
  void *stream = mgpuStreamCreate();
  void *maps[] = {encode(a, 128, 64), encode(b, 64, 64), encode(c, 128, 64)};
  int64_t sms = fusionrtMultiprocessorCount();
  int64_t rowBlocks = (a.sizes[0] + 127) / 128;
  int64_t small = rowBlocks * (b.sizes[1] / 256) * 2 <= sms;
  int64_t tiles = rowBlocks * (b.sizes[1] / (small ? 64 : 256));
  void *function = mgpuModuleGetFunction(module, kGemmKernel);
  void *params[] = {&maps[0], &maps[1], &maps[2], &small};
  mgpuLaunchKernel(function, std::min(tiles, sms), 1, 1, 384, 1, 1, small ? 181760 : 230912,
                   stream, params, nullptr, 4);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

/// A weight gradient beside a norm gradient (fusion-plan-kernels' side
/// kernels): two side streams forked from the work before them, the GEMM on
/// one of the greatest priority, the rows kernel on one of the least, both
/// joined to the primary before the next kernel. `sides` records the
/// streams each call got.
std::vector<void *> sides;
extern "C" void hostSide(MEMREF2_PARAMS(a), MEMREF2_PARAMS(b),
                         MEMREF2_PARAMS(c)) {
  ++hostCalls;
  MemRef2 a = MEMREF2(a), b = MEMREF2(b), c = MEMREF2(c);
  void *stream = mgpuStreamCreate();
  fusionrtNextSideStreamPriority(1);
  void *gemmSide = mgpuStreamCreate();
  fusionrtNextSideStreamPriority(0);
  void *rowsSide = mgpuStreamCreate();
  sides.insert(sides.end(), {stream, gemmSide, rowsSide});
  launchGemm(gemmSide, a, b, c);
  void *function = mgpuModuleGetFunction(module, kRowsKernel);
  void *params[] = {&a.aligned, &c.aligned};
  mgpuLaunchKernel(function, 528, 1, 1, 256, 1, 1, 0, rowsSide, params, nullptr,
                   2);
  for (void *side : {gemmSide, rowsSide}) {
    mgpuStreamSynchronize(side);
    mgpuStreamDestroy(side);
  }
  launchGemm(stream, c, b, a);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

/// The packet fusionrtInvoke takes for a host function of three bf16
/// matrices of rows x 512, 512 x 512 and rows x 512, on `stream`.
std::vector<int64_t> packet(void *function, int64_t flags = FUSIONRT_INVOKE_CALL_STREAM,
                            int64_t stream = 0x5000, int64_t rows = 8192) {
  std::vector<int64_t> p = {reinterpret_cast<int64_t>(function), 21, 0, flags, stream};
  const int64_t shapes[3][2] = {{rows, 512}, {512, 512}, {rows, 512}};
  for (int i = 0; i < 3; ++i) {
    int64_t pointer = 0x7f1000000000 + i * 0x10000000;
    p.insert(p.end(), {pointer, pointer, 0, shapes[i][0], shapes[i][1], shapes[i][1], 1});
  }
  return p;
}

/// The driver calls of `calls` repeated calls of `p`, after a first call.
std::string steadyStateCalls(const std::vector<int64_t> &p, int calls) {
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  auto before = fake_driver::calls();
  for (int i = 0; i < calls; ++i)
    EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  return fake_driver::difference(before, fake_driver::calls());
}

TEST(fake_driver_loads_the_module) {
  resetStatus();
  EXPECT_TRUE(driverWorks());
  module = mgpuModuleLoad(const_cast<char *>(kImage), sizeof(kImage));
  EXPECT_TRUE(module != nullptr);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(first_call_prepares_then_repeated_calls_only_launch) {
  resetStatus();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostGemm));
  auto before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  std::printf("  first call: %s\n", fake_driver::difference(before, fake_driver::calls()).c_str());
  std::string steady = steadyStateCalls(p, 100);
  std::printf("  100 more calls: %s\n", steady.c_str());
  EXPECT_EQ(steady, std::string("cuCtxGetCurrent 100, cuLaunchKernel 100"));
}

TEST(cooperative_call_with_a_workspace_adds_only_its_stream_ordered_work) {
  resetStatus();
  std::string steady = steadyStateCalls(packet(reinterpret_cast<void *>(&hostRows)), 100);
  std::printf("  100 calls: %s\n", steady.c_str());
  EXPECT_EQ(steady, std::string("cuCtxGetCurrent 100, cuLaunchKernelEx 100, "
                                "cuMemAllocFromPoolAsync 200, cuMemFreeAsync 200, "
                                "cuMemsetD32Async 100"));
}

TEST(cluster_call_only_launches) {
  resetStatus();
  std::string steady = steadyStateCalls(packet(reinterpret_cast<void *>(&hostCluster)), 100);
  std::printf("  100 calls: %s\n", steady.c_str());
  EXPECT_EQ(steady, std::string("cuCtxGetCurrent 100, cuLaunchKernelEx 100"));
}

TEST(a_two_body_kernel_takes_each_calls_shared_memory) {
  resetStatus();
  // The GEMM kernel's limit is 200000 from the tests before: the small
  // body's 181760 fits it, the main body's 230912 raises it once.
  std::vector<int64_t> decode = packet(reinterpret_cast<void *>(&hostTwoBody),
                                       FUSIONRT_INVOKE_CALL_STREAM, 0x5000, 16);
  std::vector<int64_t> prefill = packet(reinterpret_cast<void *>(&hostTwoBody),
                                        FUSIONRT_INVOKE_CALL_STREAM, 0x5000, 65536);
  auto before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(decode.data()), 0);
  EXPECT_EQ(fusionrtInvoke(prefill.data()), 0);
  std::string first = fake_driver::difference(before, fake_driver::calls());
  std::printf("  a decode-sized call, then a long one: %s\n", first.c_str());
  EXPECT_CONTAINS(first, "cuFuncSetAttribute 1,");
  EXPECT_CONTAINS(first, "cuLaunchKernel 2");
  // The limit only grows: alternating calls launch and nothing else.
  before = fake_driver::calls();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(fusionrtInvoke(decode.data()), 0);
    EXPECT_EQ(fusionrtInvoke(prefill.data()), 0);
  }
  EXPECT_EQ(fake_driver::difference(before, fake_driver::calls()),
            std::string("cuCtxGetCurrent 20, cuLaunchKernel 20"));
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(direct_calls_ask_for_the_context_per_entry_point) {
  // Without fusionrtInvoke (a C caller calling the function itself), each
  // entry point that needs the context looks at it once: still no other
  // driver query.
  resetStatus();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostGemm));
  const int64_t *w = p.data() + FUSIONRT_INVOKE_HEADER_WORDS;
  int marker = 0;
  fusionrtSetCallStream(&marker);
  // The first call on this stream uploads its tensor maps (they are cached
  // per stream); the second is the steady state.
  hostGemm(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13],
           w[14], w[15], w[16], w[17], w[18], w[19], w[20]);
  auto before = fake_driver::calls();
  hostGemm(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13],
           w[14], w[15], w[16], w[17], w[18], w[19], w[20]);
  std::string calls = fake_driver::difference(before, fake_driver::calls());
  fusionrtClearCallStream();
  std::printf("  one call: %s\n", calls.c_str());
  EXPECT_EQ(calls, std::string("cuCtxGetCurrent 5, cuLaunchKernel 1"));
  EXPECT_EQ(fusionrtClearStatus(), FUSIONRT_SUCCESS);
}

TEST(another_context_made_current_between_calls_is_replaced) {
  resetStatus();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostGemm));
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  cuCtxSetCurrent(fake_driver::otherContext()); // as another library might
  auto before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  std::string calls = fake_driver::difference(before, fake_driver::calls());
  std::printf("  next call: %s\n", calls.c_str());
  EXPECT_EQ(calls, std::string("cuCtxGetCurrent 1, cuCtxSetCurrent 1, cuLaunchKernel 1"));
}

TEST(new_pointers_encode_new_tensor_maps) {
  resetStatus();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostGemm));
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  // A new output tensor: its map is encoded and uploaded once.
  int64_t *c = p.data() + FUSIONRT_INVOKE_HEADER_WORDS + 14;
  c[0] = c[1] = 0x7f2000000000;
  auto before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  std::string calls = fake_driver::difference(before, fake_driver::calls());
  std::printf("  call with a new output: %s\n", calls.c_str());
  // Uploaded by an asynchronous copy on the call's stream, into a slot of
  // the chunk the first call allocated: no allocation, no synchronization.
  EXPECT_EQ(calls, std::string("cuCtxGetCurrent 1, cuLaunchKernel 1, cuMemcpyHtoDAsync 1, "
                               "cuStreamIsCapturing 1, cuTensorMapEncodeTiled 1"));
  EXPECT_EQ(steadyStateCalls(p, 10), std::string("cuCtxGetCurrent 10, cuLaunchKernel 10"));
}

TEST(a_map_uploaded_during_capture_is_not_cached_for_eager_calls) {
  resetStatus();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostGemm));
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  int64_t *c = p.data() + FUSIONRT_INVOKE_HEADER_WORDS + 14;
  c[0] = c[1] = 0x7f3000000000;
  // Captured: the copy runs only when the graph replays, so the next eager
  // call must upload the map again.
  fake_driver::setCapturing(true);
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  fake_driver::setCapturing(false);
  auto before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  std::string calls = fake_driver::difference(before, fake_driver::calls());
  std::printf("  eager call after the captured one: %s\n", calls.c_str());
  EXPECT_EQ(calls, std::string("cuCtxGetCurrent 1, cuLaunchKernel 1, cuMemcpyHtoDAsync 1, "
                               "cuStreamIsCapturing 1, cuTensorMapEncodeTiled 1"));
  EXPECT_EQ(steadyStateCalls(p, 3), std::string("cuCtxGetCurrent 3, cuLaunchKernel 3"));
}

TEST(a_module_loaded_again_is_looked_up_queried_and_marked_again) {
  resetStatus();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostRows));
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  mgpuModuleUnload(module);
  module = mgpuModuleLoad(const_cast<char *>(kImage), sizeof(kImage));
  auto before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  std::string calls = fake_driver::difference(before, fake_driver::calls());
  std::printf("  first call after the reload: %s\n", calls.c_str());
  // The new function is found, sized and marked cooperative again, then
  // launched cooperatively (cuLaunchKernelEx).
  EXPECT_CONTAINS(calls, "cuModuleGetFunction 2");
  EXPECT_CONTAINS(calls, "cuOccupancyMaxActiveBlocksPerMultiprocessor 1");
  EXPECT_CONTAINS(calls, "cuLaunchKernelEx 1");
  EXPECT_EQ(steadyStateCalls(p, 10),
            std::string("cuCtxGetCurrent 10, cuLaunchKernelEx 10, cuMemAllocFromPoolAsync 20, "
                        "cuMemFreeAsync 20, cuMemsetD32Async 10"));
}

TEST(a_failed_launch_still_surfaces_with_its_kernel) {
  resetStatus();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostGemm));
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  fake_driver::setLaunchResult(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(fusionrtInvoke(p.data()), FUSIONRT_ERROR_CUDA);
  fake_driver::setLaunchResult(CUDA_SUCCESS);
  EXPECT_CONTAINS(printedMessage(),
                  "mgpuLaunchKernel: cuLaunchKernel failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES "
                  "(kernel 'gemm_kernel', grid 132x1x1, block 384x1x1, dynamic shared memory "
                  "200000 bytes)");
  // Returned and cleared: the next call works.
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
}

TEST(invoke_reports_a_pending_failure_without_calling) {
  resetStatus();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostGemm));
  fusionrt::recordFailure(FUSIONRT_ERROR_CUDA, "earlier failure");
  int before = hostCalls;
  EXPECT_EQ(fusionrtInvoke(p.data()), FUSIONRT_ERROR_CUDA | FUSIONRT_INVOKE_NOT_CALLED);
  EXPECT_EQ(hostCalls, before);
  EXPECT_EQ(std::string(fusionrtGetLastError()), std::string("earlier failure"));
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(invoke_selects_the_device_and_clears_the_call_stream) {
  resetStatus();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostGemm));
  p[2] = 1; // no such device in the fake driver
  EXPECT_EQ(fusionrtInvoke(p.data()), FUSIONRT_ERROR_CUDA);
  EXPECT_CONTAINS(printedMessage(), "cuDeviceGet failed with CUDA_ERROR_INVALID_DEVICE (device 1)");
  EXPECT_EQ(fusionrtGetDevice(), 1);
  fusionrtSetDevice(0);
  // The call stream does not outlive the call: a stream is created again.
  void *stream = mgpuStreamCreate();
  EXPECT_TRUE(stream != reinterpret_cast<void *>(uintptr_t(0x5000)));
  mgpuStreamDestroy(stream);
  // Without the call stream, the function creates, waits for and destroys
  // its own; with FUSIONRT_INVOKE_SYNCHRONIZE the caller's stream is waited for.
  // (The first such call uploads its tensor maps synchronously: without a
  // call stream, the kernels run on a stream of the function's own.)
  EXPECT_EQ(fusionrtInvoke(packet(reinterpret_cast<void *>(&hostGemm), 0).data()), 0);
  auto before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(packet(reinterpret_cast<void *>(&hostGemm), 0).data()), 0);
  EXPECT_EQ(fake_driver::difference(before, fake_driver::calls()),
            std::string("cuCtxGetCurrent 1, cuLaunchKernel 1, cuStreamCreate 1, "
                        "cuStreamDestroy 1, cuStreamSynchronize 1"));
  before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(packet(reinterpret_cast<void *>(&hostGemm),
                                  FUSIONRT_INVOKE_CALL_STREAM | FUSIONRT_INVOKE_SYNCHRONIZE)
                               .data()),
            0);
  EXPECT_EQ(fake_driver::difference(before, fake_driver::calls()),
            std::string("cuCtxGetCurrent 2, cuLaunchKernel 1, cuStreamSynchronize 1"));
}

TEST(side_streams_fork_from_the_primary_and_join_it) {
  resetStatus();
  sides.clear();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostSide));
  auto before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  std::string first = fake_driver::difference(before, fake_driver::calls());
  std::printf("  first call: %s\n", first.c_str());
  // The primary is the caller's stream; the side streams are the runtime's
  // own, created once each, one of the greatest priority and one of the
  // least. The first call's new tensor maps, uploaded on the caller's
  // stream, are waited for by both side streams.
  EXPECT_TRUE(sides.size() == 3 &&
              sides[0] == reinterpret_cast<void *>(uintptr_t(0x5000)) &&
              sides[1] != sides[0] && sides[2] != sides[0] &&
              sides[1] != sides[2] && sides[1] != nullptr &&
              sides[2] != nullptr);
  EXPECT_CONTAINS(first, "cuCtxGetStreamPriorityRange 2,");
  EXPECT_CONTAINS(first, "cuStreamCreateWithPriority 2,");
  // Repeated calls reuse them: a fork and a join are an event each (created,
  // recorded, waited for, released), and the host never waits.
  std::string steady = steadyStateCalls(p, 100);
  std::printf("  100 more calls: %s\n", steady.c_str());
  // (rows_kernel is cooperative since hostRows: cuLaunchKernelEx.)
  EXPECT_EQ(steady,
            std::string(
                "cuCtxGetCurrent 100, cuEventCreate 400, cuEventDestroy 400, "
                "cuEventRecord 400, cuLaunchKernel 200, cuLaunchKernelEx 100, "
                "cuStreamWaitEvent 400"));
  EXPECT_TRUE(sides.size() == 306 && sides[304] == sides[1] &&
              sides[305] == sides[2]);
  // Without a call stream: the function's own primary, the same side
  // streams, and the one host wait of the primary at the end.
  before = fake_driver::calls();
  EXPECT_EQ(
      fusionrtInvoke(packet(reinterpret_cast<void *>(&hostSide), 0).data()), 0);
  std::string own = fake_driver::difference(before, fake_driver::calls());
  std::printf("  without a call stream: %s\n", own.c_str());
  EXPECT_CONTAINS(own,
                  "cuStreamCreate 1, cuStreamDestroy 1, cuStreamSynchronize 1, "
                  "cuStreamWaitEvent 4");
  EXPECT_TRUE(own.find("cuStreamCreateWithPriority") == std::string::npos);
  EXPECT_TRUE(sides.size() == 309 && sides[307] == sides[1] &&
              sides[308] == sides[2] && sides[306] != sides[0]);
  // A stream created after the function returned is a primary again.
  void *stream = mgpuStreamCreate();
  EXPECT_TRUE(stream != sides[1] && stream != sides[2]);
  mgpuStreamDestroy(stream);
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(a_new_tensor_map_is_waited_for_by_the_side_streams) {
  // A GEMM on a side stream reads a tensor map the runtime uploads on the
  // caller's stream: with side streams live, each waits for the upload.
  resetStatus();
  std::vector<int64_t> p =
      packet(reinterpret_cast<void *>(&hostSide), FUSIONRT_INVOKE_CALL_STREAM,
             0x5000, /*rows=*/4096);
  auto before = fake_driver::calls();
  EXPECT_EQ(fusionrtInvoke(p.data()), 0);
  std::string fresh = fake_driver::difference(before, fake_driver::calls());
  std::printf("  new shapes: %s\n", fresh.c_str());
  // The side GEMM's two maps of 4096 rows are new (the weight's is not), and
  // the primary's GEMM after the join reuses them: 4 events for the forks
  // and joins, and 2 maps x 2 side streams.
  EXPECT_CONTAINS(fresh, "cuEventCreate 8,");
  EXPECT_CONTAINS(fresh, "cuMemcpyHtoDAsync 2,");
  EXPECT_CONTAINS(fresh, "cuStreamWaitEvent 8");
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(invoke_rejects_malformed_packets) {
  resetStatus();
  EXPECT_EQ(fusionrtInvoke(nullptr), FUSIONRT_ERROR_INVALID_ARGUMENT);
  printedMessage();
  std::vector<int64_t> p = packet(reinterpret_cast<void *>(&hostGemm));
  p[0] = 0;
  EXPECT_EQ(fusionrtInvoke(p.data()), FUSIONRT_ERROR_INVALID_ARGUMENT);
  printedMessage();
  p = packet(reinterpret_cast<void *>(&hostGemm));
  p[1] = FUSIONRT_INVOKE_MAX_WORDS + 1;
  EXPECT_EQ(fusionrtInvoke(p.data()), FUSIONRT_ERROR_INVALID_ARGUMENT);
  printedMessage();
  p = packet(reinterpret_cast<void *>(&hostGemm));
  p[2] = -1;
  EXPECT_EQ(fusionrtInvoke(p.data()), FUSIONRT_ERROR_INVALID_ARGUMENT);
  printedMessage();
  p = packet(reinterpret_cast<void *>(&hostGemm));
  p[3] = 4;
  EXPECT_EQ(fusionrtInvoke(p.data()), FUSIONRT_ERROR_INVALID_ARGUMENT);
  printedMessage();
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

TEST(steady_state_host_time_per_call) {
  // Not checked (machine-dependent); printed for the record. The fake
  // driver's own counting (a lock and a map per driver call) is included.
  resetStatus();
  const struct {
    const char *name;
    void (*function)(MEMREF2_PARAMS(a), MEMREF2_PARAMS(b), MEMREF2_PARAMS(c));
  } cases[] = {{"gemm", &hostGemm}, {"rows", &hostRows}, {"cluster", &hostCluster}};
  for (const auto &c : cases) {
    std::vector<int64_t> p = packet(reinterpret_cast<void *>(c.function));
    fusionrtInvoke(p.data());
    const int calls = 20000;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      fusionrtInvoke(p.data());
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                    .count() /
                calls;
    std::printf("  host time per call (%s): %.0f ns\n", c.name, ns);
  }
  EXPECT_EQ(fusionrtPeekStatus(), FUSIONRT_SUCCESS);
}

} // namespace
