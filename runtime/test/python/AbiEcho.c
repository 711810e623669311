/*===- AbiEcho.c - a stand-in for a compiled program, for loader tests ----===//
 *
 * Exports functions in the calling convention of compiled fusion programs
 * (MLIR's expanded memref ABI, see runtime/README.md) that record the words
 * they receive instead of launching kernels, so that the Python loader's
 * argument passing is tested without a GPU.
 *===----------------------------------------------------------------------===*/

#include "fusion_runtime_mgpu.h"

#include <stdint.h>

#define ECHO_EXPORT __attribute__((visibility("default")))

/* The words received by the last call, in order; echo_count says how many. */
ECHO_EXPORT int64_t echo_words[64];
ECHO_EXPORT int64_t echo_count;

/* The description fusion-compile exports for each function, read by the
 * loader when no signature is given and checked against one given. */
ECHO_EXPORT const char __fusion_signature_echo_matmul[] =
    "a: bf16[M,K]; b: bf16[K,N]; c: f32[M,N]";
/* A user symbol that looks like the old convention: never read as
 * echo_fail's description. */
ECHO_EXPORT const char echo_fail_signature[] = "x: f32[1]; y: f32[1]";

static void put(int64_t word) {
  if (echo_count < 64)
    echo_words[echo_count++] = word;
}

static void putMemRef2(void *allocated, void *aligned, int64_t offset, int64_t s0, int64_t s1,
                       int64_t t0, int64_t t1) {
  put((int64_t)(intptr_t)allocated);
  put((int64_t)(intptr_t)aligned);
  put(offset);
  put(s0);
  put(s1);
  put(t0);
  put(t1);
}

/* Three rank-2 memrefs: a (M x K), b (K x N), c (M x N). */
ECHO_EXPORT void echo_matmul(void *a0, void *a1, int64_t ao, int64_t as0, int64_t as1,
                             int64_t at0, int64_t at1, void *b0, void *b1, int64_t bo,
                             int64_t bs0, int64_t bs1, int64_t bt0, int64_t bt1, void *c0,
                             void *c1, int64_t co, int64_t cs0, int64_t cs1, int64_t ct0,
                             int64_t ct1) {
  echo_count = 0;
  putMemRef2(a0, a1, ao, as0, as1, at0, at1);
  putMemRef2(b0, b1, bo, bs0, bs1, bt0, bt1);
  putMemRef2(c0, c1, co, cs0, cs1, ct0, ct1);
}

/* One rank-1 memref; fails the way a lowered host function fails: through an
 * mgpu* entry point, here a tensor map of an invalid rank (no driver call). */
ECHO_EXPORT void echo_fail(void *x0, void *x1, int64_t xo, int64_t xs0, int64_t xt0) {
  int64_t descriptor[5] = {(int64_t)(intptr_t)x0, (int64_t)(intptr_t)x1, xo, xs0, xt0};
  int64_t box[1] = {64};
  echo_count = 0;
  mgpuTensorMapEncodeTiledMemref(7, descriptor, 9, 0, 0, 0, 0, box);
}
