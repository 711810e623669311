"""A whole training step on the H200 from one function: Linear (W1, [out,
in]) -> RMSNorm (weight g) -> Linear (W2), given the output gradient dy,
returning y, dx, dW1, dg and dW2 (bench/layers/gen_layers.py,
train_step_rms_h{H}), and the same with LayerNorm (weight gamma, bias beta;
y, dx, dW1, dgamma, dbeta, dW2: train_step_ln_h{H}): forward GEMMs, the
standalone norm with its statistics, the dgrad GEMMs, the weight-gradient
GEMMs dy^T x and the norm's gradient kernels, compiled by fusion-compile
into $FUSION_GPU_ARTIFACTS/layers/. Against PyTorch autograd of the same
nn.Module (layers_ref.TrainBlock; checked against the programs on the CPU by
bench/layers/check_ref_cpu.py in CI) in float64 on fresh random inputs,
outputs poisoned with NaN: every output within 2x autograd's own bf16 error
+ 1e-3; the norm's parameter gradients bitwise the same over two calls.

    FUSION_GPU_ARTIFACTS=build/gpu python3 -m pytest -v -s test/gpu/test_train_step_gpu.py
"""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "layers"))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the training-step libraries run only on the H200",
                allow_module_level=True)
import layers_ref as lr  # noqa: E402

ARTIFACTS = lr.artifacts_dir()
PROGRAMS = lr.load_manifest(ARTIFACTS)
if PROGRAMS is None:
    pytest.skip(f"{ARTIFACTS}/layers/layers.json not built (bench/build_gpu_artifacts.sh)",
                allow_module_level=True)
LIBS = lr.Libraries(ARTIFACTS)
FLOOR = 1e-3


def run(name, m, seed=1):
    if name not in PROGRAMS:
        pytest.skip(f"{name} is not in {ARTIFACTS}/layers/layers.json")
    prog = PROGRAMS[name]
    fn = LIBS.function(prog, "fused")
    if fn is None:
        pytest.skip(f"{LIBS.path(name, 'fused')} not built (bench/build_gpu_artifacts.sh printed why)")
    inputs = lr.make_train_case(prog["h"], m, seed * 7919 + m, lr.train_norm(prog))
    outs = lr.make_outputs(prog, m)
    fn(*inputs.values(), *outs.values())
    torch.cuda.synchronize()
    return prog, fn, inputs, outs


CASES = [(f"train_step_{norm}_h{h}", m) for norm in ("rms", "ln")
         for h in (512, 768, 1024, 2048, 4096) for m in (65536, 4097)]
CASES += [("train_step_rms_h1024", 7), ("train_step_rms_h768", 1), ("train_step_rms_h512", 100),
          ("train_step_ln_h1024", 7), ("train_step_ln_h768", 1), ("train_step_ln_h512", 100)]
# Rows one CTA holds (H = 256) and the residual blocks (train_step_res_*:
# regrouped, the skip gradient is the grad epilogue's residual).
CASES += [(f"train_step_{norm}_h256", m) for norm in ("rms", "ln") for m in (65536, 4097, 7)]
# H = 1000: rows and K not whole tiles (the row dot's K tail, a last column
# tile of 232).
CASES += [(f"train_step_{norm}_h1000", m) for norm in ("rms", "ln") for m in (4097, 7)]
CASES += [(f"train_step_res_{norm}_h{h}", m) for norm in ("rms", "ln") for h in (256, 1024)
          for m in (65536, 4097, 7)]
# The row-dot regroup's whole row blocks (waves of gridDim.x row blocks,
# then the last ones tile by tile): 132 x 128 rows are one whole wave on a
# 132-SM GPU and nothing after it, 264 x 128 + 5 two and a ragged tail.
CASES += [("train_step_rms_h1024", 16896), ("train_step_ln_h2048", 33797)]


def check_against_float64(prog, inputs, outs, label):
    """Each output within 2x PyTorch's bf16 error of float64 (+ FLOOR), no
    NaN left; the errors, for the log."""
    # The references mark their inputs as requiring grad: give them copies,
    # so that the caller's tensors (a CUDA graph's captured ones) stay plain.
    inputs = {k: v.detach().clone() for k, v in inputs.items()}
    norm, skip = lr.train_norm(prog), lr.train_skip(prog)
    ref64 = lr.train_reference(inputs, prog["h"], prog["eps"], torch.float64, norm, skip)
    ref16 = lr.train_reference(inputs, prog["h"], prog["eps"], torch.bfloat16, norm, skip)
    report = []
    for (out_name, got), want, theirs16 in zip(outs.items(), ref64, ref16):
        assert not torch.isnan(got).any(), f"{label} {out_name}: {int(torch.isnan(got).sum())} NaN left"
        ours, theirs = lr.rel_error(got, want), lr.rel_error(theirs16, want)
        report.append(f"{out_name} {ours:.2e} (torch bf16 {theirs:.2e})")
        assert ours <= 2 * theirs + FLOOR, f"{label} {out_name}: {ours:.3e} > 2 x {theirs:.3e} + {FLOOR}"
    return report


@pytest.mark.parametrize("name,m", CASES)
def test_train_step(name, m):
    prog, fn, inputs, outs = run(name, m)
    report = check_against_float64(prog, inputs, outs, f"{name} M={m}")
    print(f"{name} M={m}: " + ", ".join(report))
    again = lr.make_outputs(prog, m)
    fn(*inputs.values(), *again.values())
    torch.cuda.synchronize()
    for param in ("dg", "dgamma", "dbeta"):
        if param in outs:
            assert torch.equal(outs[param], again[param]), f"{param} differs run to run"


@pytest.mark.parametrize("name", ["train_step_rms_h1024", "train_step_ln_h2048"])
def test_side_kernel_async_and_in_a_cuda_graph(name):
    """The weight gradient runs on a side stream beside the norm gradient
    (fusion.side_kernel): on a non-default PyTorch stream the call returns
    before its work is done and its results are right once that stream is
    synchronized; captured in a CUDA graph (the side stream's fork and join
    too), the step replays on fresh inputs into NaN-poisoned outputs."""
    m = 4097
    prog, fn, inputs, outs = run(name, m)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for t in outs.values():
            t.fill_(float("nan"))
        fn(*inputs.values(), *outs.values())
        busy = not side.query()
    side.synchronize()
    check_against_float64(prog, inputs, outs, f"{name} async")
    print(f"{name}: busy after the call {busy}")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(*inputs.values(), *outs.values())
    for seed in (2, 3):
        fresh = lr.make_train_case(prog["h"], m, seed * 7919 + m, lr.train_norm(prog))
        with torch.no_grad():  # the float64 reference marks the inputs requiring grad
            for key, t in inputs.items():
                t.copy_(fresh[key])
            for t in outs.values():
                t.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        check_against_float64(prog, inputs, outs, f"{name} graph replay {seed}")
