//===- Passes.td - fusion conversion passes ----------------*- tablegen -*-===//

#ifndef FUSION_CONVERSION_PASSES
#define FUSION_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// FusionToLinalg
//===----------------------------------------------------------------------===//

def ConvertFusionToLinalgPass : Pass<"convert-fusion-to-linalg"> {
  let summary = "lower every fusion op to its reference semantics in linalg";
  let description = [{
    Rewrites each `fusion` op, fused ones included, into upstream `linalg`,
    `tensor`, `arith`, `math` and `scf` ops on tensors that compute exactly
    the formula in the op's description: inputs are extended to f32, every
    reduction accumulates in f32, and each result is rounded once to its
    element type. This is the reference semantics of the dialect: it is how
    programs run on the CPU (`fusion-runner`), and how every rewrite is
    checked, by running the program before and after it on the same inputs.

    Example:
    ```mlir
    %y, %rstd = fusion.rms_norm %x {epsilon = 1.0e-05 : f32}
        : tensor<4x8xbf16> -> tensor<4x8xbf16>, tensor<4xf32>
    ```
    becomes (abridged)
    ```mlir
    %xf = linalg.generic ... ins(%x : tensor<4x8xbf16>)  // arith.extf
    %ss = linalg.generic {iterator_types = ["parallel", "reduction"]} ...
    %rstd = linalg.generic ... // math.rsqrt(%ss / 8 + eps)
    %y = linalg.generic ... ins(%xf, %rstd ...)  // x * rstd, arith.truncf
    ```

    #### Input invariants
    - Verified `fusion` ops on ranked tensors; dynamic dimensions are allowed.
    - Jagged attention offsets are non-decreasing, start at 0 and end at or
      before the number of query tokens (not checked at run time).

    #### Output IR
    No `fusion` op remains; only `linalg`, `tensor`, `arith`, `math`, `scf`
    ops, which bufferize with `one-shot-bufferize`. Reductions are
    `linalg.generic` ops with f32 accumulators; matmuls are `linalg.generic`
    contractions in f32. Jagged attention is an `scf.for` over the batch.

    #### Options
    None.

    #### Target requirements
    None: this is the target-independent reference, used on the CPU.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}


//===----------------------------------------------------------------------===//
// FusionToCPU
//===----------------------------------------------------------------------===//

def FusionCPUEntryPointsPass
    : Pass<"fusion-cpu-entry-points", "::mlir::ModuleOp"> {
  let summary = "give each public function the library ABI the loader calls, for the CPU";
  let description = [{
    The first step of `fusion-to-cpu`, the CPU library's pipeline (then
    `convert-fusion-to-linalg`, bufferization and the lowering to LLVM).
    Each public function on tensors becomes a library entry point with the
    ABI of the GPU host functions (`convert-fusion-to-gpu`), so that the
    Python loader calls CPU and GPU libraries alike: every result becomes one
    more argument, an identity-layout memref the caller allocates, which the
    result is materialized into (`bufferization.materialize_in_destination`
    `restrict writable`; after `eliminate-empty-tensors` the op computing it
    writes there directly), and the function returns nothing. Its
    description is exported as the string `__fusion_signature_<function>`.
    The module's `fusion.target` is removed (it names a GPU).

    Example:
    ```mlir
    func.func @f(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
      %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32}
          : tensor<?x64xbf16> -> tensor<?x64xbf16>
      return %y : tensor<?x64xbf16>
    }
    ```
    becomes
    ```mlir
    func.func @f(%x: tensor<?x64xbf16>, %out: memref<?x64xbf16>) {
      %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32}
          : tensor<?x64xbf16> -> tensor<?x64xbf16>
      bufferization.materialize_in_destination %y in restrict writable %out
          : (tensor<?x64xbf16>, memref<?x64xbf16>) -> ()
      return
    }
    llvm.mlir.global external constant @__fusion_signature_f(
        "arg0: bf16[?,64]; result0: bf16[?,64]\00")
    ```

    #### Input invariants
    Functions on ranked tensors of the loader's element types; private
    functions and declarations are left alone. Refused with an error: a
    top-level symbol with a name the library reserves (the compiler's
    `__fusion_` symbols, the runtimes' and the C library's names), a public
    function whose name is not a C identifier, an argument or result of
    another type, and a module without a public function.

    #### Output IR
    Public functions in destination-passing style (tensor arguments, memref
    outputs), one `llvm.mlir.global` description each.

    #### Options
    None.

    #### Target requirements
    None: the reference lowering runs wherever LLVM does.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect"
  ];
}

//===----------------------------------------------------------------------===//
// FusionToGPU
//===----------------------------------------------------------------------===//

def ConvertFusionToGPUPass : Pass<"convert-fusion-to-gpu", "::mlir::ModuleOp"> {
  let summary = "lower planned fused ops to GPU kernels (one per op, by kernel family and MMA engine) and host launches";
  let description = [{
    Every function made of planned `fusion.fused_matmul` ops becomes a host
    function on memrefs, in destination-passing style (each result becomes an
    extra memref argument that the caller allocates on the device), which
    encodes the TMA descriptors (`nvgpu.tma.create.descriptor`) and launches
    one kernel per fused op, built by the op's kernel family (the fused GEMM,
    `Gemm/`; the row ops, `Rows/`; `fusion.gdpa` and `fusion.norm_attention`,
    `Attention/`) around the MMA engine of the module's target (`Mma/`:
    wgmma on sm_90a), from the arch-neutral pieces of `Common/`. The kernels go into a
    `gpu.module` carrying the target's `#nvvm.target` (from `TargetInfo`:
    `chip = "sm_90a"`, `features = "+ptx81"`); each is a persistent, warp-specialized
    kernel built from NVGPU/NVVM ops, launched on min(tiles, SMs) CTAs (the
    SM count from the runtime's `fusionrtMultiprocessorCount`), each looping
    over output tiles:
    - a producer warpgroup (`nvvm.setmaxregister decrease`) whose thread 0
      fills a multi-stage TMA ring, with `full`/`empty` mbarriers per slot;
    - consumer warpgroups of 64 rows (`nvvm.setmaxregister increase`) that
      issue `nvgpu.warpgroup.mma` (wgmma), add the Lazy Pre-Norm squares of
      their A rows from the same slot while the MMA runs, and release a slot
      only after both of their reads of it are done;
    - an epilogue on the accumulator fragments: row scaling, column bias,
      residual (with epilogue warps and a residual of the output's type,
      TMA-loaded into the staging buffers as soon as the previous tile's
      store has read them; otherwise prefetched into L2 by the producer
      when the tile starts), RMSNorm/LayerNorm (quad-shuffle reductions), the statistics
      for the backward; 16-bit outputs leave through swizzled staging tiles
      and `nvgpu.tma.async.store`, f32 outputs straight from registers;
    - with `cluster_n` = C > 1, a persistent cluster launch: min(row blocks,
      co-resident clusters) clusters of C CTAs (the count from the runtime's
      `fusionrtMaxActiveClusters`, which asks the driver: GPCs hold whole
      clusters only), each cluster taking whole row blocks, CTA `rank`
      holding columns [rank x tile_n, ...); the row partial sums go to every
      peer by `nvvm.mapa` + `st.async` (inline PTX: no op exists) into DSMEM
      slots whose mbarrier counts the bytes (`expect_tx`): RMSNorm its sum
      of squares; LayerNorm its slice's mean and centered sum of squares in
      two rounds sent before either is awaited, merged with Chan's formula;
      double-buffered by tile parity. With a 16-bit output the consumers
      send the partials and hand the tile, rounded, to epilogue warps
      (warps 1-3 of the producer warpgroup) through whole-tile staging
      (`tileFull`/`tileEmpty` mbarriers) and start the next tile; those
      warps merge the partials, normalize in place and TMA-store, overlapped
      with the next tile's MMA;
    - with `cluster_n` = 1 and `tile_n` < N (norm rows wider than a cluster
      takes, 16-bit outputs), the statistics go through global memory: each
      tile stores its rows' partial statistics and bumps its row block's
      counter (a GPU-scope fence, then an atomic add), then the consumers
      hand the tile to the epilogue warps as with a cluster; those spin
      until the row block's counter reaches tiles_n, merge the partials,
      normalize the tile in shared memory and TMA-store it; the host allocates the partials and counters and zeroes the
      counters (`gpu.alloc`, `gpu.memset`). The CTAs wait for one another,
      so the grid is min(tiles, `fusionrtCooperativeGridLimit`) CTAs and the
      runtime launches the kernel cooperatively (all of the grid resident);
    - with `transpose_rhs` (B is [N, K], nn.Linear's weight layout), B
      arrives K-major like A and each K step is four `nvvm.wgmma.mma_async`
      (K-major descriptors advanced 32 bytes per k16 step; the nvgpu op
      steps only N-major B);
    - with `fusion.kernel_small_m` (sm_90a; `fusion-plan-kernels small-m`),
      one kernel holding two bodies, the main configuration's and the
      small-M one's (tiles of 64 columns), under an `scf.if` on an index
      argument after the others; the host sets it where the main kernel's
      tiles x 2 are at most the SMs, and launches with the grid and dynamic
      shared memory of the body it picked (`arith.select`). One launch op,
      one symbol: no async token crosses control flow (gpu-to-llvm would
      take a token through a block argument for an event). The bodies must
      take the same arguments, threads and registers, or the op is refused.

    Example:
    ```mlir
    func.func @f(%a: tensor<8192x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<8192x256xbf16> {
      %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>,
          epsilon = 1.0e-05 : f32, fusion.kernel = #fusion.kernel_config<...>} : ...
      return %y : tensor<8192x256xbf16>
    }
    ```
    becomes
    ```mlir
    func.func @f(%a: memref<8192x512xbf16>, %b: memref<512x256xbf16>, %y: memref<8192x256xbf16>) {
      %ta = nvgpu.tma.create.descriptor ... box[%c128, %c64]
      %sms = call @fusionrtMultiprocessorCount() : () -> i32
      gpu.launch_func @fusion_kernels::@f_kernel0 blocks in (%grid, %c1, %c1)
          threads in (%c384, %c1, %c1) dynamic_shared_memory_size %smem args(...)
      return
    }
    gpu.module @fusion_kernels [#nvvm.target<chip = "sm_90a", features = "+ptx81">] { ... }
    ```

    #### Input invariants
    - The module has `fusion.target = #fusion.target<"sm_90a">`.
    - Functions holding fused ops hold only `fusion.fused_matmul` ops, each
      with a `fusion.kernel` configuration (`fusion-plan-kernels`) whose
      epilogue strategy (`epilogue_warps`, `global_rows`, `staged_residual`)
      the generator follows, and refuses where it cannot (a norm row its CTAs
      do not cover, a 16-bit multi-CTA row without epilogue warps).

    #### Output IR
    Host functions with `nvgpu.tma.create.descriptor`, calls to the
    runtime's `fusionrtMultiprocessorCount` (single-CTA grids),
    `fusionrtMaxActiveClusters` (cluster grids) or
    `fusionrtCooperativeGridLimit` (rows through global memory), with the
    kernel's name as an `llvm.mlir.global` string, declared
    `func.func private`; and the device work as one chain of async ops on
    one stream: `gpu.wait async`, then `gpu.alloc`/`gpu.memset` for
    intermediates and workspaces, each `gpu.launch_func`, `gpu.dealloc`,
    each taking the previous token, and one final `gpu.wait`. A GEMM
    with `fusion.side_kernel` (fusion-plan-kernels) and the norm gradient
    after it go on two side chains, each forked from the work so far by a
    call of `fusionrtNextSideStreamPriority` (the GEMM's: the greatest, the
    norm gradient's: the least) and a `gpu.wait async` without
    dependencies, which the runtime answers with a side stream of that
    priority waiting for the main stream's work so far; a `gpu.wait` of each
    joins them before the next kernel, and the deallocs in between follow
    the joins:
    ```mlir
    %0 = gpu.wait async
    call @fusionrtNextSideStreamPriority(%c1_i32) : (i32) -> ()
    %1 = gpu.wait async                                   // the GEMM's
    call @fusionrtNextSideStreamPriority(%c0_i32) : (i32) -> ()
    %2 = gpu.wait async                                   // the norm gradient's
    %3 = gpu.launch_func async [%1] @fusion_kernels::@f_kernel0 ...
    %4 = gpu.launch_func async [%2] @fusion_kernels::@f_kernel1 ...
    gpu.wait [%3]
    gpu.wait [%4]
    ```
    The kernels are emitted into a `gpu.module @fusion_kernels`.
    The module's `fusion.target` moves onto that `gpu.module` as
    `#nvvm.target` (and is removed from the module, so that upstream tools
    such as `mlir-translate` accept the result).
    Lower further with `gpu-lower-to-nvvm-pipeline`.

    #### Options
    `norm-grad-stages` (default 0): the steps of rows a norm gradient's
    kernel keeps in flight through shared memory (cp.async into a ring, S - 1
    steps ahead of the one computed), at most this many where its CTAs
    still fit the SM. 0: none (the rows' loads go to registers); -1: only a
    norm gradient beside a GEMM (a side kernel), at most 3; N >= 2: every
    norm gradient, at most N. Off by default: on an H100 the staged kernel
    beside the weight gradient ran 7-14% slower at H 1024 (its loop has
    more instructions, and there it is bound by issue, not by bytes in
    flight; HISTORY.md, session 52).

    `l2-prefetch-a` (default false; measured 3-4% slower on an H100 in
    session 54, kept for experiments): in a forward norm epilogue run by
    epilogue warps (a cluster's row block or rows through global memory,
    whose whole-tile staging leaves the A/B ring 3 stages), the producer
    prefetches its share of the next tile's A boxes into L2 as each tile
    starts (`nvvm.cp.async.bulk.tensor.prefetch` through A's tensor map, a
    tile ahead), so that the ring's loads of A hit L2:
    ```mlir
    scf.if %next_row_inside_m {
      scf.for %k = %rank to %num_k step %cluster_n {   // this CTA's share
        nvvm.cp.async.bulk.tensor.prefetch %tma_a, box[%k0, %next_row] : !llvm.ptr
      }
    }
    ```

    #### Target requirements
    sm_90a (PTX 8.1 for `st.async`). What this generator does not handle yet
    is refused with a diagnostic naming it: grad epilogues, the LayerNorm
    prologue, tile_n not a multiple of 64, a
    cluster for an epilogue without a row reduction or above 16 CTAs; and
    targets without an MMA engine (sm_100a: "no MMA engine for sm_100a: the
    tcgen05 engine ... is not implemented yet").
  }];
  let options = [
    Option<"normGradStages", "norm-grad-stages", "int64_t", /*default=*/"0",
           "steps of rows a norm gradient keeps in flight through shared "
           "memory (0: none, -1: side kernels only, N >= 2: every one, at "
           "most N)">,
    Option<"l2PrefetchA", "l2-prefetch-a", "bool", /*default=*/"false",
           "forward norm epilogues in epilogue warps: the producer prefetches "
           "the next tile's A into L2 as each tile starts">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FusionExternDynamicSharedMemoryPass
    : Pass<"fusion-extern-dynamic-shared-memory", "::mlir::gpu::GPUModuleOp"> {
  let summary = "make the dynamic shared memory base the real dynamic region (external, after every static)";
  let description = [{
    `convert-gpu-to-nvvm` lowers `gpu.dynamic_shared_memory` to an internal
    zero-sized global, which the NVPTX backend demotes into the kernel as a
    1-byte *static* `.shared` variable. ptxas lays the kernel's statics out
    with it first (alignment 16 before the mbarriers' 8), so its address is
    the start of the static section, not of the dynamic region: the kernels'
    tiles, from that base rounded up to 1024 bytes, began on top of the
    static mbarriers (the first ~0x58-0xa8 bytes of stage 0 at
    0x400 in the Kunlun block kernel; racecheck saw the barrier operations
    against the stage's writes).

    This pass gives every such global external linkage, which the backend
    prints as `.extern .shared .align 16 .b8 __dynamic_shmem__0[];` at
    module scope: CUDA's dynamic shared memory, which ptxas places after
    all the statics.

    Before (LLVM dialect, in the gpu.module after convert-gpu-to-nvvm):

    ```mlir
    llvm.mlir.global internal @__dynamic_shmem__0()
        {addr_space = 3 : i32, alignment = 16 : i64, dso_local}
        : !llvm.array<0 x i8>
    ```

    After:

    ```mlir
    llvm.mlir.global external @__dynamic_shmem__0()
        {addr_space = 3 : i32, alignment = 16 : i64}
        : !llvm.array<0 x i8>
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def FusionContractFloatOpsPass
    : Pass<"fusion-contract-float-ops", "::mlir::gpu::GPUModuleOp"> {
  let summary = "allow FMA contraction of the device code's float arithmetic";
  let description = [{
    Gives every arith floating-point operation inside the gpu.module the
    `contract` fast-math flag. The NVPTX backend then fuses a multiply that
    feeds an add or a subtract into one `fma.rn` (one rounding instead of
    two), which is what nvcc does by default (`--fmad=true`) and Triton too
    (`enable_fp_fusion`). Without the flag NVPTX prints the multiply as
    `mul.rn` and the add as `add.rn`, which ptxas must not fuse: every
    element-wise step of the kernels (the activations of the attention
    kernels and their derivatives, the norms' statistics and scaling, the
    epilogues) took a multiply and an add where one FMA does.

    Only the flag changes; the operations stay where they are. The host
    code and the CPU reference lowering are not touched (they are not inside
    a gpu.module). `fusion-to-gpu` runs it right after
    `convert-fusion-to-gpu` unless its option `fp-contract` is false
    (`fusion-compile --no-fp-contract`).

    Before (inside a kernel, after convert-fusion-to-gpu):

    ```mlir
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %p, %z : f32
    ```

    After:

    ```mlir
    %p = arith.mulf %x, %y fastmath<contract> : f32
    %s = arith.addf %p, %z fastmath<contract> : f32
    ```

    and in the PTX, `fma.rn.f32 %s, %x, %y, %z` where there were a
    `mul.rn.f32` and an `add.rn.f32`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // FUSION_CONVERSION_PASSES
