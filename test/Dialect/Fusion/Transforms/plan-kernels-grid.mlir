// RUN: %python %S/Inputs/plan_kernels_grid.py fusion-opt sm_90a | FileCheck %s --check-prefix=SM90
// RUN: %python %S/Inputs/plan_kernels_grid.py fusion-opt sm_100a | FileCheck %s --check-prefix=SM100

// Test that every configuration fusion-plan-kernels selects over a grid of
// bf16 GEMMs (M in {1, 1000, 262144} x K in {64, 256, 512, 4096} x N in
// {8, 200, 256, 264, 512, 576, 1024, 2048, 4096} x each of the 6 epilogues)
// is consistent: smem_bytes <= 232448 and equal to the shared-memory formula
// recomputed in Python, stages in [2, 6] and the deepest that fits, tile_m
// 128, tile_k 64, the target's consumers (2 wgmma warpgroups on sm_90a, 1
// epilogue warpgroup on sm_100a), tile_n a multiple of 64 within its
// accumulator slice (on sm_100a at most 256 for a row-independent epilogue:
// two tensor-memory stages; at most 512 for a row); a norm or grad
// row covered by tile_n x cluster_n as the rule says (up to 4 CTAs on
// sm_90a: the power-of-two cluster that holds the row, slices of ceil(N / C)
// rounded up, no CTA left without a column, the whole tile staged for the
// epilogue warps; wider rows: tiles of 256 columns
// and no cluster, the statistics through global memory), no cluster
// otherwise; and that every shape refused is
// refused only for its row (cluster) or its shared memory; row-independent
// epilogues take the widest tile that fits. The script prints VIOLATION for
// anything else. The counts pin how much of the grid fits.

// A few selections, spelled out.
// SM90: planned g_1_64_264_rms_norm: tile_m = 128, tile_n = 192, tile_k = 64, stages = 4, cluster_n = 2, consumers = 2, smem_bytes = 216576
// SM90: planned g_1000_256_200_rms_norm: tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912
// SM90: planned g_1000_256_256_rms_norm: tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912
// SM90: planned g_1000_256_512_rms_norm: tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 2, consumers = 2, smem_bytes = 216576
// SM90: planned g_1000_256_576_layer_norm: tile_m = 128, tile_n = 192, tile_k = 64, stages = 4, cluster_n = 3, consumers = 2, smem_bytes = 220672
// SM90: planned g_1000_256_2048_rms_norm: tile_m = 128, tile_n = 256, tile_k = 64, stages = 3, cluster_n = 1, consumers = 2, smem_bytes = 215552
// SM90: planned g_262144_4096_4096_none: tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 2, smem_bytes = 230912
// SM90-NOT: VIOLATION
// SM90: sm_90a: 648 shapes, 648 planned, 0 refused, 0 violations

// SM100: planned g_1000_256_8_none: tile_m = 128, tile_n = 64, tile_k = 64, stages = 6, cluster_n = 1, consumers = 1, smem_bytes = 181760
// SM100: planned g_1000_256_264_none: tile_m = 128, tile_n = 256, tile_k = 64, stages = 4, cluster_n = 1, consumers = 1, smem_bytes = 230912
// SM100: planned g_1000_256_512_rms_norm: tile_m = 128, tile_n = 512, tile_k = 64, stages = 2, cluster_n = 1, consumers = 1, smem_bytes = 198144
// SM100-NOT: VIOLATION
// SM100: sm_100a: 648 shapes, 648 planned, 0 refused, 0 violations
