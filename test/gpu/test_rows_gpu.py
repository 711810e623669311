"""Issue 14's standalone row ops on the H200: fusion.rms_norm (with weight,
returning rstd), fusion.layer_norm (weight, bias, returning mean and rstd),
fusion.add of a row bias [H] and of a same-shape tensor, fusion.mul by a
column [M, 1] of f32, fusion.rope (test_rope), each alone in a program (bench/layers/gen_layers.py)
compiled fused and unfused into $FUSION_GPU_ARTIFACTS/layers/ by
bench/build_gpu_artifacts.sh. Against float64 PyTorch on fresh random
inputs with NaN-poisoned outputs: relative error at most 2x PyTorch's own
bf16 error + 1e-3, statistics within 1e-3 of the row's scale. Rows of
H = 768..4096 and the odd H = 1000 and 1001 (rows not a multiple of 16
bytes), at M = 65536 and the odd M = 4097; the token count M = 1, 7, 8192,
262144 through one library; LayerNorm on inputs with a large mean. A
library the compiler refused is skipped, with the reason.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_rows_gpu.py

About 1 minute on an H200 (every library built).
"""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the row-op libraries run only on the H200", allow_module_level=True)
import layers_ref as lr  # noqa: E402

ARTIFACTS = lr.artifacts_dir()
PROGRAMS = lr.load_manifest(ARTIFACTS)
if PROGRAMS is None:
    pytest.skip(f"{ARTIFACTS}/layers/layers.json not built (bench/build_gpu_artifacts.sh)",
                allow_module_level=True)
LIBS = lr.Libraries(ARTIFACTS)

KINDS = ("rms_norm", "layer_norm", "add_rowbias", "add", "mul_col")
HS = (768, 1024, 2048, 4096, 1000, 1001)
VARIANTS = ("fused", "unfused")


def run_and_check(name, variant, m, seed=1, offset=0.0):
    if name not in PROGRAMS:
        pytest.skip(f"{name} is not in {ARTIFACTS}/layers/layers.json")
    prog = PROGRAMS[name]
    fn = LIBS.function(prog, variant)
    if fn is None:
        pytest.skip(f"{LIBS.path(name, variant)} not built (the compiler refused it: "
                    f"bench/build_gpu_artifacts.sh printed why)")
    x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(seed * 7919 + m),
                       offset=offset)
    y = lr.make_outputs(prog, m)
    fn(*x.values(), *y.values())  # enqueued on torch's current stream
    torch.cuda.synchronize()
    res = lr.check(prog, x, y)
    stats = "".join(f", {s} {res[s + '_err']:.2e}" for s in ("mean", "rstd") if s + "_err" in res)
    print(f"{name} {variant} M={m} offset={offset:g}: rel err ours {res['rel_err']:.3e}, "
          f"torch bf16 {res['torch_bf16_rel_err']:.3e}{stats}")
    assert res["ok"], res["why"]


@pytest.mark.parametrize("name,variant,m", [(f"{k}_h{h}", v, m) for k in KINDS for h in HS
                                            for m in (65536, 4097) for v in VARIANTS])
def test_row_op(name, variant, m):
    run_and_check(name, variant, m)


@pytest.mark.parametrize("name,variant,m", [(f"{k}_infer_h{h}", v, m)
                                            for k in ("rms_norm", "layer_norm")
                                            for h in (768, 1024, 4096) for m in (65536, 4097, 1)
                                            for v in VARIANTS])
def test_norm_inference_form(name, variant, m):
    """y only: the statistics are unused, and the kernel does not write them."""
    run_and_check(name, variant, m)


@pytest.mark.parametrize("name,variant,m", [(n, v, m) for n in ("rms_norm_h1024",
                                                                 "layer_norm_h1024",
                                                                 "add_rowbias_h1024")
                                            for m in (1, 7, 8192, 262144) for v in VARIANTS])
def test_dynamic_token_count(name, variant, m):
    run_and_check(name, variant, m)


@pytest.mark.parametrize("name,variant", [(f"layer_norm_h{h}", v) for h in (1024, 4096, 1001)
                                          for v in VARIANTS])
def test_layer_norm_large_mean(name, variant):
    """Rows of mean 100 and standard deviation 1: a one-pass variance
    (E[x^2] - E[x]^2 in f32) loses the statistics here; docs/PERF.md."""
    run_and_check(name, variant, 65536, seed=5, offset=100.0)


@pytest.mark.parametrize("name,m", [(f"{k}_h{h}", m) for k in ("rope", "rope_neox", "rope_gptj")
                                    for h in (1024, 4096) for m in (65536, 4097, 7, 1)])
def test_rope(name, m):
    """fusion.rope's element-wise kernel: Llama's halves over heads of 128,
    GPT-NeoX's quarter of each head (the rest passed through), GPT-J's
    pairs over 64 columns of heads of 256; per-token tables."""
    run_and_check(name, "fused", m)


def test_outputs_of_other_rows_are_refused():
    """The library's description names the token count the norm ties to its
    outputs (s0): an output of other rows, or an rstd of another length, is
    refused by the loader before the kernel could write past it."""
    name = "rms_norm_h1024"
    prog = PROGRAMS.get(name)
    if prog is None or LIBS.function(prog, "fused") is None:
        pytest.skip(f"{name} (fused) not built")
    # Its description alone (no signature given: the tie is the compiler's).
    library = LIBS.fr.Library(LIBS.path(name, "fused"), runtime=LIBS.runtime)
    fn = library.function(name + lr.variant_suffix("fused"))
    assert "s0" in library.signature(name + lr.variant_suffix("fused"))
    x = lr.make_inputs(prog, 64, torch.Generator(device="cuda").manual_seed(3))
    for short in ("y", "rstd"):
        y = lr.make_outputs(prog, 64)
        y[short] = y[short][:32]
        with pytest.raises(LIBS.fr.ArgumentError, match=r"expected size s0 = 64 in dimension 0"):
            fn(*x.values(), *y.values())


def test_consecutive_token_counts_through_one_function():
    """Calls with different M back to back on one stream, without a
    synchronization between them (cached launch state must follow M)."""
    name = "rms_norm_h1024"
    prog = PROGRAMS.get(name)
    fn = prog and LIBS.function(prog, "fused")
    if fn is None:
        pytest.skip(f"{name} (fused) not built")
    calls = []
    for i, m in enumerate((8192, 7, 65536, 1, 4097)):
        x = lr.make_inputs(prog, m, torch.Generator(device="cuda").manual_seed(i))
        y = lr.make_outputs(prog, m)
        fn(*x.values(), *y.values())
        calls.append((m, x, y))
    torch.cuda.synchronize()
    for m, x, y in calls:
        res = lr.check(prog, x, y)
        assert res["ok"], (m, res["why"])
