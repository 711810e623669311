"""Issue 14's layers, written as users write them (bench/layers/gen_layers.py:
Llama's pre-norm projection, BERT's post-norm output; unfused ops only,
dynamic token count), compiled fused (fusion-compile's default pipeline) and
unfused (--no-fuse) into $FUSION_GPU_ARTIFACTS/layers/lib<name>[_unfused].so
by bench/build_gpu_artifacts.sh, run on the H200 against their nn.Modules in
float64 (bench/layers/layers_ref.py): fresh random inputs, NaN-poisoned
outputs, relative error at most 2x PyTorch's own bf16 error + 1e-3. Calls
run asynchronously on torch's current stream (the loader's default). A
library the compiler refused is skipped, with the reason.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_layers_gpu.py

About 1 minute on an H200 (every library built).
"""
import functools
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the layer libraries run only on the H200", allow_module_level=True)
import layers_ref as lr  # noqa: E402

ARTIFACTS = lr.artifacts_dir()
PROGRAMS = lr.load_manifest(ARTIFACTS)
if PROGRAMS is None:
    pytest.skip(f"{ARTIFACTS}/layers/layers.json not built (bench/build_gpu_artifacts.sh)",
                allow_module_level=True)
LIBS = lr.Libraries(ARTIFACTS)

KINDS = ("llama_prenorm", "llama_prenorm_mulweight", "bert_postnorm", "bert_postnorm_addbias",
         "qwen3_q_norm", "llama_o_proj", "gpt2_c_proj", "neox_parallel", "olmo2_post",
         "llama_mlp", "gpt2_mlp")
HS = (768, 1024, 2048, 4096)
VARIANTS = ("fused", "unfused")
M = 65536


def function(name, variant):
    """(program, compiled function), or a skip that says why not."""
    if name not in PROGRAMS:
        pytest.skip(f"{name} is not in {ARTIFACTS}/layers/layers.json")
    prog = PROGRAMS[name]
    fn = LIBS.function(prog, variant)
    if fn is None:
        pytest.skip(f"{LIBS.path(name, variant)} not built (the compiler refused it: "
                    f"bench/build_gpu_artifacts.sh printed why)")
    return prog, fn


@functools.lru_cache(maxsize=1)
def case(name, m, seed):
    """Inputs and both references; kept for the next test (the other variant)."""
    prog = PROGRAMS[name]
    x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(seed * 7919 + m))
    return x, lr.reference(prog, x, torch.float64), lr.reference(prog, x, torch.bfloat16)


def run_and_check(name, variant, m, seed=1):
    prog, fn = function(name, variant)
    x, ref64, ref16 = case(name, m, seed)
    y = lr.make_outputs(prog, m)
    fn(*x.values(), *y.values())  # enqueued on torch's current stream
    torch.cuda.synchronize()
    res = lr.check(prog, x, y, ref64, ref16)
    print(f"{name} {variant} M={m}: rel err ours {res['rel_err']:.3e}, "
          f"torch bf16 {res['torch_bf16_rel_err']:.3e}")
    assert res["ok"], res["why"]


@pytest.mark.parametrize("name,variant", [(f"{k}_h{h}", v) for k in KINDS for h in HS
                                          for v in VARIANTS] + [("olmo2_post_h256", "fused")])
def test_layer(name, variant):
    run_and_check(name, variant, M)


# The sandwich norm's residual stream (post_residual) at odd token counts:
# rows past M in the last row block (they read row M - 1's residual), in
# the consumers' form (256), a cluster (768) and rows through global memory
# (2048).
@pytest.mark.parametrize("name,m", [(f"olmo2_post_h{h}", m) for h in (256, 768, 2048)
                                    for m in (1, 100, 4097)])
def test_post_residual_token_counts(name, m):
    run_and_check(name, "fused", m)


# The MLPs at odd token counts: the gated GEMM's small-M body (a box of
# each weight per tile) at 1 and 100 tokens, its last row block part past M
# at 4097; GPT-2's activation epilogue likewise (and its decode-free small-M
# body).
@pytest.mark.parametrize("name,m", [(n, m) for n in ("llama_mlp_h1024", "llama_mlp_h4096",
                                                     "gpt2_mlp_h768")
                                    for m in (1, 100, 4097)])
def test_mlp_token_counts(name, m):
    run_and_check(name, "fused", m)


# A projection's rotary embedding in its GEMM's epilogue (fusion-compile's
# default; the unfused library runs a GEMM and the rope row kernel):
# Llama's (RMSNorm's row scale, heads of 128, rotate-half: each thread holds
# column groups 8 apart), GPT-NeoX's (bias, the first 32 of 128 rotated),
# GPT-J's (interleaved pairs over the first 64 of 256), tables [M, R] with a
# row per token; at 65536 tokens both ways, and at odd counts the fused
# library's small-M body (tiles of one head), a single row and a last row
# block past M (rows clamped into the tables); and tables per position
# [2048, 128] (token m's row m mod 2048).
ROPE_LAYERS = [f"{k}_h{h}" for k in ("llama_q_rope", "neox_q_rope", "gptj_q_rope")
               for h in (1024, 4096)] + ["llama_q_rope_pos2048_h1024"]


@pytest.mark.parametrize("name,variant", [(n, v) for n in ROPE_LAYERS for v in VARIANTS])
def test_rope_epilogue(name, variant):
    run_and_check(name, variant, M)


@pytest.mark.parametrize("name,m", [(n, m) for n in ROPE_LAYERS for m in (1, 100, 4097)])
def test_rope_epilogue_token_counts(name, m):
    run_and_check(name, "fused", m)


def test_activation_tail():
    """silu(g) * u element by element, x scaled so that g spans about
    [-40, 40]: every element within the output's rounding (2^-8 of its
    value) of float64, plus what f32 sums of g and u may differ by (2^-20 of
    the sums of |x w|, through silu' <= 1.1 and |silu(g)|). The MUFU tanh
    form of silu (h + h tanh h) erred by |g| 2^-12 absolute in its negative
    tail: 73% of silu(-8), 47 times this bound in a CPU emulation (the
    exact sigmoid's worst element 0.98 of it, f32 sums emulated too)."""
    import torch.nn.functional as F
    prog, fn = function("gate_up_h1024", "fused")
    m = 4097
    x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(11))
    x["x"] = (x["x"].float() * 24).to(torch.bfloat16)
    y = lr.make_outputs(prog, m)
    fn(*x.values(), *y.values())
    torch.cuda.synchronize()
    xd, wg, wu = x["x"].double(), x["wg"].double(), x["wu"].double()
    g, u = F.linear(xd, wg), F.linear(xd, wu)
    ref = F.silu(g) * u
    sums_g, sums_u = F.linear(xd.abs(), wg.abs()), F.linear(xd.abs(), wu.abs())
    bound = ref.abs() * 1.05 * 2.0**-8 + 2.0**-20 * (1.1 * u.abs() * sums_g + F.silu(g).abs() * sums_u)
    worst = ((y["y"].double() - ref).abs() / bound.clamp_min(1e-30)).max().item()
    print(f"gate_up_h1024 tail: gate in [{g.min().item():.1f}, {g.max().item():.1f}], "
          f"worst error {worst:.3f} of the bound")
    assert not torch.isnan(y["y"]).any()
    assert worst <= 1.0, f"an element off by {worst:.2f} x its bound"


@pytest.mark.parametrize("name,variant,m", [(n, v, m) for n in ("llama_prenorm_h1024",
                                                                 "bert_postnorm_h1024",
                                                                 "qwen3_q_norm_h2048",
                                                                 "llama_o_proj_h4096")
                                            for m in (1, 7, 8192, 262144) for v in VARIANTS])
def test_dynamic_token_count(name, variant, m):
    """One library, any token count: a single row, fewer rows than a tile,
    and more rows than the benchmark's."""
    run_and_check(name, variant, m)


# The small-M body of a GEMM planned for a dynamic token count (tiles of 64
# columns, fusion.kernel_small_m) runs where the main kernel's tiles of 256
# would occupy at most half the SMs; on 132 SMs that is up to 2048 tokens at
# hidden 1024 (16 row blocks x 4 tiles x 2 = 128) and up to 512 at 4096
# (4 x 16 x 2); Qwen3's q_proj + q_norm takes tiles of one head (128
# columns) up to 1024 tokens at 2048 (8 x 8 x 2): both sides of each
# boundary, decode sizes, odd counts.
@pytest.mark.parametrize("name,m", [("llama_prenorm_h1024", m) for m in (16, 300, 2048, 2049)]
                         + [("llama_prenorm_h4096", m) for m in (1, 16, 129, 512, 513)]
                         + [("qwen3_q_norm_h2048", m) for m in (16, 1024, 1025)]
                         + [("gpt2_c_proj_h768", m) for m in (16, 33, 1001)])
def test_small_m_kernel(name, m):
    run_and_check(name, "fused", m)


# The swapped decode body (fusion-compile --decode-swap, fusion.kernel_decode;
# libraries built with the flag, bench/layers/run_decode_swap.sh): calls of
# at most 32 tokens, both sides of that boundary, odd counts; Llama's
# projection (row scale), a LayerNorm pre-norm's linear (column bias), the
# residual stream after o_proj (the residual), and
# Qwen3's q_proj + q_norm (tiles of one head, the per-head RMSNorm across
# both consumer groups). Without the flag they run the small-M body.
@pytest.mark.parametrize("name,m", [("llama_prenorm_h4096", m) for m in (1, 7, 16, 31, 32, 33)]
                         + [("ln_prenorm_h1024", m) for m in (1, 16, 32, 33)]
                         + [("qwen3_q_norm_h2048", m) for m in (7, 32)]
                         + [("llama_o_proj_h4096", m) for m in (1, 16, 32, 33)])
def test_decode_body(name, m):
    run_and_check(name, "fused", m)


# nn.LayerNorm (weight, bias) then nn.Linear (bias): the default pipeline
# (a LayerNorm row kernel, then the GEMM), unfused, and lazyln (fusion-compile
# --lazy-layer-norm: the LayerNorm deferred into the GEMM, B's column sums
# from a 1-row GEMM of ones; not yet run on the H200 when added).
LN_PRENORM_VARIANTS = ("fused", "unfused", "lazyln")


@pytest.mark.parametrize("name,variant", [(f"ln_prenorm_h{h}", v) for h in HS
                                          for v in LN_PRENORM_VARIANTS])
def test_ln_prenorm_layer(name, variant):
    run_and_check(name, variant, M)


@pytest.mark.parametrize("m", (1, 7, 1001, 262144))
def test_ln_prenorm_lazy_dynamic_token_count(m):
    """The deferred LayerNorm at any token count: a single row, fewer rows
    than a tile, an odd count, and more rows than the benchmark's."""
    run_and_check("ln_prenorm_h1024", "lazyln", m)


SMALL_CASES = [(n, v) for n in ("llama_prenorm_h1024", "bert_postnorm_h1024") for v in VARIANTS]


@pytest.mark.parametrize("name,variant", SMALL_CASES)
def test_call_is_asynchronous_on_the_current_stream(name, variant):
    """With a long sleep queued before it on a side stream made current, the
    call returns while that stream is still busy, and its result (read after
    the stream) is right."""
    m = 8192
    prog, fn = function(name, variant)
    x, ref64, ref16 = case(name, m, 3)
    y = lr.make_outputs(prog, m)
    fn(*x.values(), *y.values(), synchronize=True)  # loads the module
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for t in y.values():
            t.fill_(float("nan"))
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time ahead of the call
        fn(*x.values(), *y.values())
        busy = not side.query()
    side.synchronize()
    res = lr.check(prog, x, y, ref64, ref16)
    print(f"async {name} {variant}: busy after the call {busy}, rel err {res['rel_err']:.3e}")
    assert busy, "the call waited for the stream"
    assert res["ok"], res["why"]


@pytest.mark.parametrize("name,variant", SMALL_CASES)
def test_cuda_graph_capture_and_replay(name, variant):
    """A layer call captured in a CUDA graph replays on fresh inputs copied
    into the captured tensors, its output poisoned before each replay."""
    m = 8192
    prog, fn = function(name, variant)
    gen = torch.Generator(device="cuda").manual_seed(4243)
    x = lr.make_inputs(prog, m, gen)
    y = lr.make_outputs(prog, m)
    fn(*x.values(), *y.values(), synchronize=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(*x.values(), *y.values())
    for seed in (1, 2):
        fresh = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(seed))
        for key, t in x.items():
            t.copy_(fresh[key])
        for t in y.values():
            t.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        res = lr.check(prog, x, y)
        print(f"graph replay {seed} {name} {variant}: rel err {res['rel_err']:.3e}")
        assert res["ok"], res["why"]
