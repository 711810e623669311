"""The weights' folds kept between calls (`cache_weight_folds=True`) on the
GPU: Llama's pre-norm (LlamaRMSNorm with its weight, then q_proj) through
the front end, against float64, after in-place weight updates, and inside a
CUDA graph (the capture records the preparation, so a replay after an
update of the weight in place computes with the new weight; with
frozen_weights=True it reads the kept folds instead).

The libraries come from a folder `bench/frontend/bench_frontend.py --prepare
DIR --only llama_prenorm` filled where the compiler runs (with the device's
torch); run with FUSION_FRONTEND_DIR=DIR:

    FUSION_FRONTEND_DIR=build/frontend-gpu python3 -m pytest -v test/gpu/test_weight_folds_gpu.py
"""
import copy
import os
import sys

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "frontend"))

FRONTEND = os.environ.get("FUSION_FRONTEND_DIR", os.path.join(REPO, "build", "frontend-gpu"))
pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(not os.path.isdir(os.path.join(FRONTEND, "cache")),
                       reason=f"no prepared libraries in {FRONTEND}"),
]


@pytest.fixture(scope="module")
def fc():
    os.environ["FUSION_TOOLS_DIR"] = os.path.join(FRONTEND, "bin")
    os.environ["FUSION_CACHE_DIR"] = os.path.join(FRONTEND, "cache")
    import fusion_compiler
    return fusion_compiler


def module(h):
    import bench_frontend
    return bench_frontend.make(lambda: bench_frontend.PreNorm(h), "cuda")


def within_bf16(m, x, got):
    """Within 2x PyTorch's own bf16 error against float64 (plus 2^-7, as
    bench_frontend's check)."""
    with torch.no_grad():
        exact = copy.deepcopy(m).double()(x.double())
        theirs = m(x)
    ours = (got.double() - exact).abs().max().item()
    bf16 = (theirs.double() - exact).abs().max().item()
    return ours <= 2 * bf16 + 2 ** -7, (ours, bf16)


def preparation(compiled):
    from fusion_compiler.calls import CompiledPartition
    preps = [p._preparation for p in compiled.graph_module.modules()
             if isinstance(p, CompiledPartition) and p._preparation is not None]
    assert len(preps) == 1, preps
    return preps[0]


@pytest.mark.parametrize("tokens", [1, 16, 4099])
def test_folds_kept_and_updated(fc, tokens):
    m = module(1024)
    x = torch.randn(1, tokens, 1024, device="cuda").bfloat16()
    compiled = fc.compile(m, (x,), target="sm_90a", strict=True, report=False,
                          gradients=False, cache_weight_folds=True)
    prep = preparation(compiled)
    with torch.no_grad():
        for _ in range(3):
            y = compiled(x)
        ok, errors = within_bf16(m, x, y)
        assert ok, errors
        assert prep.calls == 1
        m.input_layernorm.weight.mul_(1.5)   # an in-place update: prepared again
        y = compiled(x)
        ok, errors = within_bf16(m, x, y)
        assert ok, errors
        assert prep.calls == 2
        m.q_proj.weight.copy_(torch.randn_like(m.q_proj.weight) * 0.03)
        y = compiled(x)
        ok, errors = within_bf16(m, x, y)
        assert ok, errors
        assert prep.calls == 3


def test_cuda_graph_replays_the_preparation(fc):
    m = module(1024)
    x = torch.randn(1, 64, 1024, device="cuda").bfloat16()
    compiled = fc.compile(m, (x,), target="sm_90a", strict=True, report=False,
                          gradients=False, cache_weight_folds=True)
    with torch.no_grad():
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            compiled(x)  # warm-up outside the capture
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = compiled(x)
        graph.replay()
        torch.cuda.synchronize()
        ok, errors = within_bf16(m, x, y)
        assert ok, errors
        m.input_layernorm.weight.mul_(0.5)  # the replay folds the new weight
        graph.replay()
        torch.cuda.synchronize()
        ok, errors = within_bf16(m, x, y)
        assert ok, errors
        # After the capture, an eager call prepares again (the capture did not run it).
        prep = preparation(compiled)
        before = prep.calls
        compiled(x)
        assert prep.calls == before + 1


def test_frozen_weights_graph_reads_the_kept_folds(fc):
    """frozen_weights=True: a capture after the warm-up reads the kept folds
    (no preparation in the graph); the replays are correct; an eager call
    after an in-place update prepares again, in place, so the replays then
    read the new folds."""
    m = module(1024)
    x = torch.randn(1, 16, 1024, device="cuda").bfloat16()
    compiled = fc.compile(m, (x,), target="sm_90a", strict=True, report=False,
                          gradients=False, cache_weight_folds=True, frozen_weights=True)
    prep = preparation(compiled)
    with torch.no_grad():
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            compiled(x)  # warm-up outside the capture: prepares
        torch.cuda.current_stream().wait_stream(stream)
        assert prep.calls == 1
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = compiled(x)
        assert prep.calls == 1  # nothing recorded
        y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ok, errors = within_bf16(m, x, y)
        assert ok, errors
        m.input_layernorm.weight.mul_(0.5)
        compiled(x)  # prepares again, into the same tensors
        assert prep.calls == 2
        y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ok, errors = within_bf16(m, x, y)
        assert ok, errors


def test_other_streams_wait_for_the_preparation(fc):
    """A call on another stream than the preparation's waits for it; a new
    preparation waits for the streams that read the old one."""
    m = module(2048)
    x = torch.randn(1, 16, 2048, device="cuda").bfloat16()
    compiled = fc.compile(m, (x,), target="sm_90a", strict=True, report=False,
                          gradients=False, cache_weight_folds=True)
    first, second = torch.cuda.Stream(), torch.cuda.Stream()
    with torch.no_grad():
        for _ in range(3):
            m.input_layernorm.weight.mul_(1.01)
            for stream in (first, second):
                stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(first):
                a = compiled(x)   # prepares on `first`
            with torch.cuda.stream(second):
                b = compiled(x)   # reads it on `second`
            torch.cuda.synchronize()
            assert torch.equal(a, b)
            ok, errors = within_bf16(m, x, b)
            assert ok, errors
