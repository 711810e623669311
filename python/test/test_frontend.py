"""The front end end to end on the CPU: Hugging Face modules as their users
write them, captured, partitioned, written in the dialect, compiled by
fusion-compile --cpu (the reference lowering) and run against PyTorch in
float64, with the fusion decisions, the fallbacks and the cache checked.

Runs with torch and transformers (scripts/install-deps.sh installs both into
.venv); where either is missing these tests skip, or fail where
FUSION_TEST_REQUIRE_TORCH=1 (CI). The tools come from $FUSION_TOOLS_DIR (CTest
sets it to the build's bin/).
"""

import copy
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

REQUIRE = os.environ.get("FUSION_TEST_REQUIRE_TORCH") == "1"
try:
    import torch
    import transformers  # noqa: F401
    from transformers import BertConfig, GemmaConfig, GPT2Config, LlamaConfig, T5Config
    from transformers.models.bert.modeling_bert import BertIntermediate, BertSelfOutput
    from transformers.models.gpt2.modeling_gpt2 import GPT2MLP, GPT2Block
    from transformers.models.t5.modeling_t5 import T5LayerFF
    from transformers.models.gemma.modeling_gemma import GemmaMLP, GemmaRMSNorm
    from transformers.models.cohere.modeling_cohere import CohereLayerNorm
    from transformers.models.llama.modeling_llama import (LlamaDecoderLayer, LlamaMLP,
                                                          LlamaRMSNorm, LlamaRotaryEmbedding)
    MISSING = None
except ImportError as error:  # pragma: no cover - depends on the machine
    MISSING = str(error)

try:  # Qwen3 came in transformers 4.51: older ones skip its test only
    from transformers import Qwen3Config
    from transformers.models.qwen3.modeling_qwen3 import (Qwen3DecoderLayer,
                                                          Qwen3RotaryEmbedding)
    QWEN3_MISSING = None
except ImportError as error:  # pragma: no cover - depends on the machine
    QWEN3_MISSING = str(error)

try:  # Phi-3 came in transformers 4.40: older ones skip its tests only
    from transformers import Phi3Config
    from transformers.models.phi3.modeling_phi3 import (Phi3DecoderLayer, Phi3MLP,
                                                        Phi3RMSNorm, Phi3RotaryEmbedding)
    PHI3_MISSING = None
except ImportError as error:  # pragma: no cover - depends on the machine
    PHI3_MISSING = str(error)

if MISSING is None:
    import fusion_compiler as fc
    from fusion_compiler.calls import CompiledPartition


def needs_torch(cls):
    if MISSING is None:
        return cls
    if REQUIRE:
        raise ImportError(f"FUSION_TEST_REQUIRE_TORCH=1 but {MISSING}")
    return unittest.skip(f"needs torch and transformers: {MISSING}")(cls)


def live_partitions():
    """Every live CompiledPartition (those torch.compile's graphs hold)."""
    import gc
    return [o for o in gc.get_objects() if type(o) is CompiledPartition]


def reference_error(module, inputs, out):
    """(error of `out`, error of PyTorch's own bf16 run), each the largest
    absolute difference from the module run in float64."""
    exact = copy.deepcopy(module).double()
    with torch.no_grad():
        want = exact(*(t.double() for t in inputs))
        theirs = module(*inputs)
    want = want[0] if isinstance(want, tuple) else want
    theirs = theirs[0] if isinstance(theirs, tuple) else theirs
    return ((out.double() - want).abs().max().item(),
            (theirs.double() - want).abs().max().item())


def llama_config():
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5)
    cfg._attn_implementation = "sdpa"
    return cfg


def planned_for_sm90a(mlir, plan="-fusion-plan-kernels"):
    """A partition's program after fusion-fuse and fusion-plan-kernels for
    sm_90a (the folds a GPU build makes; `plan`: the pass with options)."""
    return subprocess.run([fc.find_tools().fusion_opt, "-", "-fusion-fuse",
                           "-fusion-set-target=chip=sm_90a", plan],
                          input=mlir, stdout=subprocess.PIPE, text=True, check=True).stdout


def fused(mlir):
    """A partition's program after fusion-fuse (the default pipeline)."""
    return subprocess.run([fc.find_tools().fusion_opt, "-", "-fusion-fuse"], input=mlir,
                          stdout=subprocess.PIPE, text=True, check=True).stdout


def randomize_norms(module):
    """Norm weights away from 1, so that a dropped weight shows."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)
    return module


if MISSING is None:
    class PreNorm(torch.nn.Module):
        """A pre-norm as decoder layers write it: a norm with its weight
        (Llama's LlamaRMSNorm unless `norm` builds another from the hidden
        size), then q_proj."""

        def __init__(self, hidden=64, out=96, norm=None):
            super().__init__()
            self.input_layernorm = (norm or (lambda h: LlamaRMSNorm(h, eps=1e-5)))(hidden)
            self.q_proj = torch.nn.Linear(hidden, out, bias=False)

        def forward(self, x):
            return self.q_proj(self.input_layernorm(x))

    class DecoderBlock(torch.nn.Module):
        """A decoder layer with its rotary embedding, as a model calls it:
        LlamaDecoderLayer by default, or another family's layer, rotary
        embedding and config (Qwen3's: Llama's layer with q_norm and k_norm
        over each head); `extra`: the layer's other keyword arguments
        (Falcon's alibi)."""

        def __init__(self, layer=None, rope=None, cfg=None, **extra):
            super().__init__()
            cfg = cfg or llama_config()
            self.layer = (layer or LlamaDecoderLayer)(cfg, 0)
            self.rope = (rope or LlamaRotaryEmbedding)(cfg)
            self.extra = extra

        def forward(self, x):
            pos = torch.arange(x.shape[1]).unsqueeze(0)
            out = self.layer(x, position_embeddings=self.rope(x, pos), attention_mask=None,
                             position_ids=pos, **self.extra)
            return out[0] if isinstance(out, tuple) else out

    def qwen3_block():
        cfg = Qwen3Config(hidden_size=128, intermediate_size=256, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-6)
        cfg._attn_implementation = "sdpa"
        return DecoderBlock(Qwen3DecoderLayer, Qwen3RotaryEmbedding, cfg)

    class Float32LayerNorm(torch.nn.LayerNorm):
        """A LayerNorm computed in float32 and cast back: diffusers'
        FP32LayerNorm (float32 copies of the weight and bias), OLMo's
        (without them)."""

        def forward(self, x):
            w, b = self.weight, self.bias
            y = torch.nn.functional.layer_norm(
                x.float(), self.normalized_shape, w.float() if w is not None else None,
                b.float() if b is not None else None, self.eps)
            return y.to(x.dtype)

    def gemma_prenorm():
        return PreNorm(norm=lambda h: GemmaRMSNorm(h, eps=1e-6))

    def float32_layer_norm_prenorm(affine=True):
        return PreNorm(norm=lambda h: Float32LayerNorm(h, elementwise_affine=affine))

    def cohere_prenorm():
        return PreNorm(norm=lambda h: CohereLayerNorm(h, eps=1e-5))

    class QkNorm(torch.nn.Module):
        """Qwen3's query path before RoPE: q_proj, the heads unfolded, the
        per-head RMSNorm over D (Qwen3RMSNorm is LlamaRMSNorm's arithmetic;
        `norm` builds another from D), heads first. With `kv` heads also
        Gemma 3's order: k_proj, its heads unfolded and moved first, then
        k_norm over D; q and k concatenated along the heads."""

        def __init__(self, hidden=256, heads=4, norm=None, kv=0):
            super().__init__()
            self.heads, self.dim, self.kv = heads, hidden // heads, kv
            build = norm or (lambda d: LlamaRMSNorm(d, eps=1e-6))
            self.q_proj = torch.nn.Linear(hidden, hidden, bias=False)
            self.q_norm = build(self.dim)
            if kv:
                self.k_proj = torch.nn.Linear(hidden, kv * self.dim, bias=False)
                self.k_norm = build(self.dim)

        def forward(self, x):
            shape = (*x.shape[:-1], -1, self.dim)
            q = self.q_norm(self.q_proj(x).view(shape)).transpose(1, 2)
            if not self.kv:
                return q
            k = self.k_norm(self.k_proj(x).view(shape).transpose(1, 2))
            return torch.cat((q, k), dim=1)

    class NormAttentionBlock(torch.nn.Module):
        """The seed's Kunlun PFFN block as its users write it: LayerNorm of q
        over all heads of a token, HSTU's attention (gelu_tanh, no softmax),
        the residual, RMSNorm over all heads, the residual of q."""

        def __init__(self, heads, dim, eps=1e-5):
            super().__init__()
            self.heads, self.dim = heads, dim
            self.ln = torch.nn.LayerNorm(heads * dim, eps=eps)
            self.rms = torch.nn.RMSNorm(heads * dim, eps=eps)

        def forward(self, q, k, v):
            b, l = q.shape[0], q.shape[1]
            ln = self.ln(q.reshape(b, l, self.heads * self.dim)).reshape(q.shape)
            s = torch.einsum("bihd,bjhd->bhij", ln, k) * self.dim ** -0.5
            a = torch.einsum("bhij,bjhe->bihe", torch.nn.functional.gelu(s, approximate="tanh"), v)
            y = self.rms((a + ln).reshape(b, l, self.heads * self.dim))
            return y.reshape(q.shape) + q

    class NormAttentionVariants(torch.nn.Module):
        """The same block written three other ways users write it."""

        def __init__(self, form, heads=2, dim=64):
            super().__init__()
            self.form, self.heads, self.dim = form, heads, dim
            self.ln = torch.nn.LayerNorm(heads * dim)
            self.rms = torch.nn.RMSNorm(heads * dim)  # eps None: float32's

        def forward(self, q, k, v):
            b, l, h, d = q.shape
            F = torch.nn.functional
            if self.form == "view":  # views, other letters, residuals written the other way
                ln = self.ln(q.view(b, l, -1)).view(b, l, h, d)
                s = torch.einsum("blhd,bmhd->bhlm", ln, k) * 0.125
                a = torch.einsum("bhlm,bmhd->blhd", F.silu(s), v)
                return q + self.rms((ln + a).view(b, l, -1)).view(b, l, h, d)
            if self.form == "matmul":  # heads-first matmuls (HSTU's reference form)
                ln = self.ln(q.reshape(b, l, h * d)).reshape(b, l, h, d)
                s = ln.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)
                a = (F.gelu(s / 8, approximate="tanh") @ v.transpose(1, 2)).transpose(1, 2)
                return self.rms((a + ln).reshape(b, l, h * d)).reshape(b, l, h, d) + q
            ln = self.ln(q.flatten(2)).unflatten(2, (h, d))  # flatten / unflatten
            a = torch.einsum("bihd,bjhd->bhij", ln, k) * 0.125
            a = torch.einsum("bhij,bjhd->bihd", F.gelu(a), v)
            return self.rms((a + ln).flatten(2)).unflatten(2, (h, d)) + q


@needs_torch
@contextlib.contextmanager
def environment(**variables):
    """Sets (None: unsets) environment variables, restored afterwards."""
    def assign(values):
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    saved = {k: os.environ.get(k) for k in variables}
    try:
        assign(variables)
        yield
    finally:
        assign(saved)


class FrontEndTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cache = tempfile.mkdtemp(prefix="fusion-frontend-cache-")
        os.environ["FUSION_CACHE_DIR"] = cls.cache

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)

    def setUp(self):
        torch.manual_seed(1234)

    def compile_one_partition(self, m, x):
        """Compiles `m` on `x` for the CPU; asserts one partition, compiled.
        Returns (the compiled module, its explanation, the partition)."""
        compiled = fc.compile(m, (x,), target="cpu")
        report = compiled.explain()
        self.assertEqual(len(report.partitions), 1, str(report))
        part = report.partitions[0]
        self.assertTrue(part.compiled, part.why_not)
        return compiled, report, part

    def check_gated_gemm(self, m, x, compiled, part):
        """The partition after fusion-fuse: one fused_matmul, the gated one
        (` up(`), no activation or product left; the call one library call,
        close to PyTorch. Returns the fused IR."""
        out = fused(part.mlir)
        self.assertEqual(out.count(" up("), 1, out)
        self.assertEqual(out.count("fusion.fused_matmul"), 1, out)
        self.assertNotIn("fusion.activation %", out)
        self.assertNotIn("fusion.mul", out)
        before = CompiledPartition.calls
        with torch.no_grad():
            y = compiled(x)
        self.assertEqual(CompiledPartition.calls, before + 1)
        self.check_close(m, (x,), y)
        return out

    def check_close(self, module, inputs, out):
        ours, theirs = reference_error(module, inputs, out)
        # Within 2x PyTorch's own bf16 error (plus one bf16 step at the
        # outputs' scale for cases where PyTorch happens to round exactly).
        self.assertLessEqual(ours, 2 * theirs + 2 ** -7 * 4, f"ours {ours}, PyTorch {theirs}")

    def check_ropes_in_epilogues(self, mlir):
        """After fusion-fuse, a partition's two ropes (q's and k's) ride in
        their GEMMs' epilogues: no fusion.rope is left."""
        folded = fused(mlir)
        self.assertNotIn("fusion.rope", folded)
        self.assertEqual(folded.count(" rope("), 2, folded)

    def compile_rope_layer(self, layer, rope, cfg, tokens):
        """A decoder layer of Hugging Face's `layer` with its `rope` module
        (bf16, norms randomized), compiled for the CPU: its first
        partition compiled with both ropes, which fusion-fuse puts in their
        GEMMs' epilogues, none of their pieces (the negated halves or pairs)
        left to PyTorch. Returns (module, input, compiled, report)."""
        cfg._attn_implementation = "sdpa"
        torch.manual_seed(0)
        m = randomize_norms(DecoderBlock(layer, rope, cfg).bfloat16().eval())
        x = torch.randn(2, tokens, cfg.hidden_size).bfloat16()
        compiled = fc.compile(m, (x,), target="cpu")
        report = compiled.explain()
        first = report.partitions[0]
        self.assertTrue(first.compiled, first.why_not)
        self.assertEqual([op for op, _ in first.ops].count("rope"), 2)
        self.check_ropes_in_epilogues(first.mlir)
        left = " ".join(why for _, why, _ in report.left_in_pytorch)
        self.assertNotIn("neg", left)
        return m, x, compiled, report

    def check_parallel_residual(self, m, x, parallel):
        """A parallel residual's layer (GPT-NeoX, Falcon): its two output
        projections and both adds in one partition (`parallel`: its ops),
        compiled, planned for sm_90a as two GEMMs each taking a residual and
        no add; the MLP's gelu in its first GEMM's epilogue, wherever that
        GEMM is (beside its norm: fusion_compiler._regroup); the output within 2x
        PyTorch's bf16 error of float64."""
        compiled = fc.compile(m, (x,), target="cpu")
        parts = compiled.explain().partitions
        ops = [[op for op, _ in p.ops] for p in parts]
        self.assertIn(parallel, ops)
        part = parts[ops.index(parallel)]
        self.assertTrue(part.compiled, part.why_not)
        planned = planned_for_sm90a(part.mlir)
        self.assertNotIn("fusion.add", planned)
        self.assertEqual(planned.count("residual("), 2, planned)
        planned = "".join(planned_for_sm90a(p.mlir) for p in parts)
        self.assertEqual(planned.count("activation = #fusion.activation<gelu>, "), 1, planned)
        self.assertNotIn("fusion.activation %", planned)
        left = [why for _, why, _ in compiled.explain().left_in_pytorch]
        self.assertFalse(any(w.startswith("gelu") for w in left), left)
        with torch.no_grad():
            y = compiled(x)
        self.check_close(m, (x,), y[0] if isinstance(y, tuple) else y)

    def test_llama_prenorm(self):
        m = randomize_norms(PreNorm().bfloat16().eval())
        x = torch.randn(3, 7, 64).bfloat16()  # 21 tokens: not a tile multiple
        compiled = fc.compile(m, (x,), target="cpu")
        report = compiled.explain()
        self.assertEqual(len(report.partitions), 1)
        part = report.partitions[0]
        self.assertTrue(part.compiled, part.why_not)
        self.assertEqual([op for op, _ in part.ops], ["rms_norm", "linear"])
        self.assertIn("fusion.rms_norm %arg0 weight(%arg1 : tensor<64xbf16>)", part.mlir)
        self.assertIn("{transpose_rhs} : tensor<?x64xbf16>, tensor<96x64xbf16>", part.mlir)
        self.assertTrue(any("Lazy Pre-Norm" in r for r in part.remarks), part.remarks)
        # The remark points at LlamaRMSNorm's source line.
        self.assertTrue(any("modeling_llama.py" in r for r in part.remarks), part.remarks)
        with torch.no_grad():
            y = compiled(x)
        self.assertEqual(y.shape, (3, 7, 96))
        self.check_close(m, (x,), y)

    def test_t5_layer_ff(self):
        """T5's feed-forward block: T5LayerNorm (float32 statistics, but rstd
        multiplies x itself, promoted), then wi, ReLU, wo and the residual:
        one partition, the norm in wi's prologue (Lazy Pre-Norm), the ReLU
        in its epilogue."""
        cfg = T5Config(d_model=64, d_ff=128, dropout_rate=0.0)
        m = randomize_norms(T5LayerFF(cfg).bfloat16().eval())
        x = torch.randn(2, 9, 64).bfloat16()
        compiled, report, part = self.compile_one_partition(m, x)
        self.assertEqual([op for op, _ in part.ops],
                         ["rms_norm", "linear", "relu", "linear", "add"])
        self.assertIn("fusion.rms_norm %arg0 weight(%arg1 : tensor<64xbf16>)", part.mlir)
        self.assertIn("fusion.activation %v1 {activation = #fusion.activation<relu>}", part.mlir)
        self.assertTrue(any("Lazy Pre-Norm" in r and "modeling_t5.py" in r
                            for r in part.remarks), part.remarks)
        self.assertTrue(any("fusion.activation folded into the GEMM's epilogue" in r and
                            "modeling_t5.py" in r for r in part.remarks), part.remarks)
        self.assertIn("activation = #fusion.activation<relu>, "
                      "prologue = #fusion.prologue<rms_norm>", fused(part.mlir))
        # Nothing of the norm, nor the ReLU, is left to PyTorch.
        left = [why for _, why, _ in report.left_in_pytorch]
        self.assertFalse(any(w.startswith(("pow", "rsqrt", "mean", "relu")) for w in left), left)
        with torch.no_grad():
            y = compiled(x)
        self.check_close(m, (x,), y)

    def check_prenorm(self, m, op, *mlir):
        """Compiles the pre-norm `m` for the CPU: one partition, [op, linear],
        its MLIR holding each of `mlir`; runs it against float64. Returns the
        report."""
        x = torch.randn(3, 7, 64).bfloat16()
        compiled, report, part = self.compile_one_partition(m, x)
        self.assertEqual([o for o, _ in part.ops], [op, "linear"])
        for text in mlir:
            self.assertIn(text, part.mlir)
        with torch.no_grad():
            y = compiled(x)
        self.check_close(m, (x,), y)
        return report

    def test_gemma_prenorm(self):
        """GemmaRMSNorm (the norm in float32, times 1 + weight in float32,
        rounded once), then a linear: the norm's weight is a float32 vector
        beside a bf16 input (1 + w computed in PyTorch, said so)."""
        report = self.check_prenorm(randomize_norms(gemma_prenorm().bfloat16().eval()),
                                    "rms_norm", "weight(%arg1 : tensor<64xf32>)")
        part = report.partitions[0]
        self.assertTrue(any("Lazy Pre-Norm" in r for r in part.remarks), part.remarks)
        left = [why for _, why, _ in report.left_in_pytorch]
        self.assertTrue(all(w.startswith(("to", "add")) for w in left), left)

    def test_float32_layer_norm(self):
        """A LayerNorm of x cast to float32, cast back: one fusion.layer_norm of
        the bf16 x (float32 parameters, or none), in the linear's partition."""
        for affine in (True, False):
            with self.subTest(affine=affine):
                m = randomize_norms(float32_layer_norm_prenorm(affine).bfloat16().eval())
                weight = " weight(%arg1 : tensor<64xf32>)" if affine else " {epsilon"
                self.check_prenorm(m, "layer_norm", "fusion.layer_norm %arg0" + weight,
                                   ": tensor<?x64xbf16> -> tensor<?x64xbf16>")

    def test_cohere_prenorm(self):
        """CohereLayerNorm, written out ((x - m) rsqrt(mean((x - m)^2) + eps)
        in float32, times the weight in float32, cast back): one
        fusion.layer_norm of the bf16 x in the linear's partition."""
        report = self.check_prenorm(randomize_norms(cohere_prenorm().bfloat16().eval()),
                                    "layer_norm",
                                    "fusion.layer_norm %arg0 weight(%arg1 : tensor<64xf32>)")
        part = report.partitions[0]
        self.assertTrue(any("modeling_cohere.py" in r for r in part.remarks), part.remarks)
        left = [why for _, why, _ in report.left_in_pytorch]
        self.assertFalse(any(w.startswith(("sub", "pow", "mean", "rsqrt")) for w in left), left)

    def test_bert_self_output(self):
        cfg = BertConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4)
        m = randomize_norms(BertSelfOutput(cfg).bfloat16().eval())
        x, r = torch.randn(2, 9, 64).bfloat16(), torch.randn(2, 9, 64).bfloat16()
        compiled = fc.compile(m, (x, r), target="cpu")
        part = compiled.explain().partitions[0]
        self.assertEqual([op for op, _ in part.ops], ["linear", "add", "layer_norm"])
        self.assertIn("bias(", part.mlir)
        self.assertTrue(any("epilogue" in r and "col_bias" in r for r in part.remarks),
                        part.remarks)
        with torch.no_grad():
            y = compiled(x, r)
        self.check_close(m, (x, r), y)

    def test_gated_mlp(self):
        """The gated MLP, down_proj(act(gate_proj(x)) * up_proj(x)): Llama's
        (Mistral's and Qwen2's are the same module) with SiLU, Gemma's with
        gelu_pytorch_tanh (aten.gelu, approximate="tanh"). One partition,
        the activation and the product in it as fusion.activation and
        fusion.mul, which fusion-fuse makes one GEMM over both weights
        (fused_matmul's `up`), explain says so at the product's line;
        nothing is left to PyTorch; the output within 2x PyTorch's bf16
        error of float64."""
        gemma = GemmaConfig(hidden_size=64, intermediate_size=128,
                            hidden_activation="gelu_pytorch_tanh")
        for mlp, cfg, kind in ((LlamaMLP, llama_config(), "silu"),
                               (GemmaMLP, gemma, "gelu_tanh")):
            with self.subTest(mlp=mlp.__name__):
                torch.manual_seed(0)
                m = mlp(cfg).bfloat16().eval()
                x = torch.randn(2, 5, 64).bfloat16()
                compiled, report, part = self.compile_one_partition(m, x)
                self.assertEqual(report.left_in_pytorch, [])
                self.assertEqual([op for op, _ in part.ops],
                                 ["linear", kind, "linear", "mul", "linear"])
                self.assertIn(f"fusion.activation %v0 {{activation = #fusion.activation<{kind}>}}"
                              f" : tensor<?x128xbf16>", part.mlir)
                self.assertIn("fusion.mul %v1, %v2 : tensor<?x128xbf16>", part.mlir)
                self.assertTrue(any("gated product folded into one GEMM over both weights "
                                    f"(activation {kind}, up)" in r and "modeling_" in r
                                    for r in part.remarks), part.remarks)
                out = self.check_gated_gemm(m, x, compiled, part)
                self.assertIn("fusion.matmul %output, %arg3", out)  # down_proj

    @unittest.skipIf(PHI3_MISSING, f"needs transformers with Phi-3: {PHI3_MISSING}")
    def test_fused_gate_up_projection(self):
        """Phi-3's MLP: one gate_up_proj [2I, H] without bias, its output cut
        by chunk(2, -1), up * silu(gate), down_proj; and the same form written
        with slices, the gate second and exact gelu (GEGLU). The GEMM becomes
        two over the weight's rows (aten.slice of the parameter: views, the
        partition's inputs, all that stays in PyTorch), so the partition is
        the gated MLP's, one GEMM with `up` after fusion-fuse; the output
        within 2x PyTorch's bf16 error of float64, through compile and
        through the torch.compile backend. With a bias the form stays as it
        is: the GEMM alone in the partition."""

        class SlicedGeglu(torch.nn.Module):
            def __init__(self, bias=False):
                super().__init__()
                self.proj = torch.nn.Linear(64, 256, bias=bias)
                self.out = torch.nn.Linear(128, 64, bias=False)

            def forward(self, x):
                h = self.proj(x)
                return self.out(h[..., :128] * torch.nn.functional.gelu(h[..., 128:]))

        phi3 = Phi3Config(hidden_size=64, intermediate_size=128)
        for m, kind, gate in ((Phi3MLP(phi3), "silu", "[0, 128)"),
                              (SlicedGeglu(), "gelu", "[128, 256)")):
            with self.subTest(module=type(m).__name__):
                torch.manual_seed(0)
                m = m.bfloat16().eval()
                x = torch.randn(2, 5, 64).bfloat16()
                compiled, report, part = self.compile_one_partition(m, x)
                self.assertEqual([op for op, _ in part.ops],
                                 ["linear", "linear", kind, "mul", "linear"])
                # Only the weight's halves stay in PyTorch: views.
                left = [why for _, why, _ in report.left_in_pytorch]
                self.assertEqual(left, [f"slice.Tensor: rows {rows} of a fused gate_up weight, "
                                        f"a view (free) that the partition takes as its input"
                                        for rows in ("[0, 128)", "[128, 256)")])
                self.assertIn("%arg1: tensor<128x64xbf16>, %arg2: tensor<128x64xbf16>",
                              part.mlir)
                self.assertIn(f"fusion.activation %v{0 if gate == '[0, 128)' else 1} "
                              f"{{activation = #fusion.activation<{kind}>}}", part.mlir)
                self.assertTrue(any("gated product folded into one GEMM over both weights "
                                    f"(activation {kind}, up)" in r for r in part.remarks),
                                part.remarks)
                self.check_gated_gemm(m, x, compiled, part)
        # Through torch.compile (AOTAutograd's mm, its view back to [b, s, 2I]
        # and split): one library call too.
        m = Phi3MLP(phi3).bfloat16().eval()
        torch._dynamo.reset()
        backend = torch.compile(m, backend=lambda gm, inputs: fc.backend(gm, inputs,
                                                                         inductor=False))
        before = CompiledPartition.calls
        with torch.no_grad():
            y = backend(x)
        self.assertEqual(CompiledPartition.calls, before + 1)
        self.check_close(m, (x,), y)
        # With a bias: unchanged, the chunk, gelu and product PyTorch's.
        m = SlicedGeglu(bias=True).bfloat16().eval()
        report = fc.compile(m, (x,), target="cpu").explain()
        self.assertEqual([[op for op, _ in p.ops] for p in report.partitions],
                         [["linear"], ["linear"]])
        self.assertFalse(any(why.startswith("slice.Tensor: rows")
                             for _, why, _ in report.left_in_pytorch), report.left_in_pytorch)

    @unittest.skipIf(PHI3_MISSING, f"needs transformers with Phi-3: {PHI3_MISSING}")
    def test_fused_gate_up_weight_folds(self):
        """A norm before Phi-3's MLP: Lazy Pre-Norm folds its weight into both
        halves of gate_up_proj's weight; with cache_weight_folds=True the
        halves, views sliced anew by every call, are the same weights (the
        preparation runs once), and an in-place update of the parameter is
        seen."""

        class NormMLP(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = Phi3RMSNorm(64, eps=1e-5)
                self.mlp = Phi3MLP(Phi3Config(hidden_size=64, intermediate_size=128))

            def forward(self, x):
                return self.mlp(self.norm(x))

        m = randomize_norms(NormMLP().bfloat16().eval())
        x = torch.randn(2, 5, 64).bfloat16()
        plain = fc.compile(m, (x,), target="cpu", report=False)
        cached = fc.compile(m, (x,), target="cpu", report=False, cache_weight_folds=True)
        preps = [mod._preparation for mod in cached.graph_module.modules()
                 if isinstance(mod, CompiledPartition) and mod._preparation is not None]
        self.assertEqual([len(p.outputs) for p in preps], [2])
        with torch.no_grad():
            self.assertTrue(torch.equal(cached(x), plain(x)))
            self.assertTrue(torch.equal(cached(x.flip(0)), plain(x.flip(0))))
            self.assertEqual([p.calls for p in preps], [1])
            m.mlp.gate_up_proj.weight.mul_(1.5)
            got = cached(x)
            self.assertEqual([p.calls for p in preps], [2])
            self.assertTrue(torch.equal(got, plain(x)))
        self.check_close(m, (x,), got)

    @unittest.skipIf(PHI3_MISSING, f"needs transformers with Phi-3: {PHI3_MISSING}")
    def test_phi3_decoder_layer(self):
        """Hugging Face's Phi3DecoderLayer: the input norm with qkv_proj cut
        into q, k and v projections over its weight's rows (views), q's and
        k's rope (full rotary: export's alias of q[..., :D] and the empty
        q[..., D:] concatenated) as fusion.rope in their partition, each in
        its GEMM's epilogue after fusion-fuse; o_proj, the residual, the
        second norm, the MLP's gate_up_proj as two GEMMs over its weight's
        rows, silu, the product, down_proj and the residual in one
        partition, the gated product one GEMM after fusion-fuse. With
        partial rotary (Phi-4-mini's 0.75 of each head; here half of
        heads of 32, the sm_90a epilogue's multiple of 16) likewise."""
        for hidden, factor in ((64, 1.0), (128, 0.5)):
            with self.subTest(partial_rotary_factor=factor):
                cfg = Phi3Config(hidden_size=hidden, intermediate_size=128, num_attention_heads=4,
                                 num_key_value_heads=2, rms_norm_eps=1e-5,
                                 partial_rotary_factor=factor)
                m, x, compiled, report = self.compile_rope_layer(
                    Phi3DecoderLayer, Phi3RotaryEmbedding, cfg, 5)
                ops = [[op for op, _ in p.ops] for p in report.partitions]
                self.assertEqual(ops, [["rms_norm", "linear", "linear", "linear", "rope", "rope"],
                                       ["linear", "add", "rms_norm", "linear", "linear", "silu",
                                        "mul", "linear", "add"]])
                first, mlp = report.partitions
                rotary = int(hidden // 4 * factor)
                self.assertEqual(len(re.findall(rf"fusion.rope .*, tensor<\?x{rotary}xbf16> ->",
                                                first.mlir)), 2, first.mlir)
                self.assertTrue(mlp.compiled, mlp.why_not)
                out = fused(mlp.mlir)
                self.assertEqual(out.count(" up("), 1, out)
                self.assertNotIn("fusion.activation %", out)
                self.assertNotIn("fusion.mul", out)
                left = " ".join(why for _, why, _ in report.left_in_pytorch)
                self.assertNotIn("silu", left)
                self.assertNotIn("chunk", left)
                self.assertEqual(left.count("of a fused gate_up weight"), 2, left)
                self.assertEqual(left.count("of a fused qkv weight, a view"), 3, left)
                with torch.no_grad():
                    y = compiled(x)
                self.check_close(m, (x,), y)

    def test_gpt_neox_rotary_embedding(self):
        """GPT-NeoX's attention (Pythia): query_key_value's output viewed
        [B, L, H, 3D], transposed and chunked into each head's q, k and v,
        q and k rotated on their first R = rotary_pct x D columns and
        concatenated with the rest. The projection becomes three linears
        over the rows of each head's part (gathered in PyTorch, with the
        bias's, and kept between inference calls while the weight is
        unchanged), q's and k's ropes fusion.rope with [?, R] tables in the
        input LayerNorm's partition, in their GEMMs' epilogues after
        fusion-fuse (heads of 64: R = 16 and 64, multiples of 16 as the
        sm_90a epilogue takes them); the layer's output matches float64."""
        from transformers import GPTNeoXConfig
        from transformers.models.gpt_neox.modeling_gpt_neox import (GPTNeoXLayer,
                                                                    GPTNeoXRotaryEmbedding)
        for pct in (0.25, 1.0):
            with self.subTest(rotary_pct=pct):
                cfg = GPTNeoXConfig(hidden_size=128, num_attention_heads=2,
                                    intermediate_size=256, use_parallel_residual=True,
                                    hidden_dropout=0.0, attention_dropout=0.0, rotary_pct=pct)
                m, x, compiled, report = self.compile_rope_layer(
                    GPTNeoXLayer, GPTNeoXRotaryEmbedding, cfg, 7)
                first = report.partitions[0]
                self.assertEqual([op for op, _ in first.ops],
                                 ["layer_norm", "linear", "linear", "linear", "rope", "rope"])
                rotary = int(64 * pct)
                self.assertRegex(first.mlir, r"fusion.rope %\w+, %\w+, %\w+ \{head_dim = 64 : "
                                 r"i64\} : tensor<\?x128xbf16>, " +
                                 re.escape(f"tensor<?x{rotary}xbf16>"))
                left = " ".join(why for _, why, _ in report.left_in_pytorch)
                self.assertIn("of each of the 2 heads of a fused qkv weight, gathered", left)
                # The gathered rows are kept between inference calls while
                # the weight is unchanged, gathered again after an in-place
                # update (its three parts; the bias's stay).
                with torch.no_grad():
                    y = compiled(x)
                    gathers = fc.ops.head_rows.gathers
                    self.assertTrue(torch.equal(compiled(x), y))
                    self.assertEqual(fc.ops.head_rows.gathers, gathers)
                    m.layer.attention.query_key_value.weight.mul_(1.25)
                    y = compiled(x)
                    self.assertEqual(fc.ops.head_rows.gathers, gathers + 3)
                self.check_close(m, (x,), y)

    def test_gptj_rotary_embedding(self):
        """GPT-J's attention: q_proj's output viewed [B, L, H, D] (heads
        last), its first rotary_dim columns rotated in pairs
        (`q * cos + rotate_every_two(q) * sin`, cos and sin [1, L, R / 2]
        each repeated for both columns of a pair) and concatenated with the
        rest, then transposed. q's and k's ropes become fusion.rope
        {interleaved} in the input LayerNorm's partition, reading one pair of
        [?, R] tables (the angles repeated once, in PyTorch), each in its
        GEMM's epilogue after fusion-fuse; partial (16 of 64) and full
        (export's alias of q[..., :D]); the layer's output matches float64."""
        from transformers import GPTJConfig
        from transformers.models.gptj.modeling_gptj import GPTJBlock, GPTJRotaryEmbedding
        for rotary in (16, 64):
            with self.subTest(rotary_dim=rotary):
                cfg = GPTJConfig(n_embd=128, n_head=2, rotary_dim=rotary, n_inner=256,
                                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
                m, x, compiled, report = self.compile_rope_layer(
                    GPTJBlock, GPTJRotaryEmbedding, cfg, 7)
                first = report.partitions[0]
                ropes = re.findall(r"fusion.rope %\w+, (%\w+), (%\w+) \{head_dim = 64 : i64, "
                                   r"interleaved\} : tensor<\?x128xbf16>, " +
                                   re.escape(f"tensor<?x{rotary}xbf16>"), first.mlir)
                self.assertEqual(len(ropes), 2, first.mlir)
                self.assertEqual(ropes[0], ropes[1])  # one pair of tables
                left = " ".join(why for _, why, _ in report.left_in_pytorch)
                self.assertNotIn("stack", left)
                with torch.no_grad():
                    y = compiled(x)
                self.check_close(m, (x,), y)

    def test_mlp_activation_epilogue(self):
        """An MLP's first layer and its activation: BERT's intermediate
        (dense, then exact gelu: aten.gelu), GPT-2's MLP (Conv1D's addmm of a
        view, gelu_new written out in ATen ops: 0.5 x (1 + tanh(...)),
        recognized as gelu_tanh, then c_proj) and a ReLU MLP (OPT's, ViT's
        with nn.ReLU): the activation in the partition, in its GEMM's
        epilogue after fusion-fuse (the bias kept as col_bias), nothing of
        it left to PyTorch; the output within 2x PyTorch's bf16 error."""

        class ReluMLP(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 64)
                self.act = torch.nn.ReLU()

            def forward(self, x):
                return self.fc2(self.act(self.fc1(x)))

        bert = BertIntermediate(BertConfig(hidden_size=64, intermediate_size=128))
        gpt2 = GPT2MLP(256, GPT2Config(n_embd=64, resid_pdrop=0.0))
        cases = [(bert, ["linear", "gelu"], "gelu"),
                 (gpt2, ["matmul", "gelu_tanh", "matmul"], "gelu_tanh"),
                 (ReluMLP(), ["linear", "relu", "linear"], "relu")]
        for m, ops, kind in cases:
            with self.subTest(module=type(m).__name__):
                torch.manual_seed(0)
                m = m.bfloat16().eval()
                x = torch.randn(2, 7, 64).bfloat16()
                compiled, report, part = self.compile_one_partition(m, x)
                self.assertEqual([op for op, _ in part.ops], ops)
                self.assertTrue(any("fusion.activation folded into the GEMM's epilogue" in r
                                    for r in part.remarks), part.remarks)
                out = fused(part.mlir)
                self.assertIn(f"col_bias(%arg2 : tensor<{128 if m is not gpt2 else 256}xbf16>) "
                              f"{{activation = #fusion.activation<{kind}>", out)
                self.assertNotIn("fusion.activation %", out)
                left = [why for _, why, _ in report.left_in_pytorch]
                self.assertFalse(any(w.startswith(("gelu", "relu", "tanh", "pow", "mul", "add"))
                                     for w in left), left)
                with torch.no_grad():
                    y = compiled(x)
                self.check_close(m, (x,), y)

    def test_activation_stays_in_pytorch_without_a_gemm(self):
        """An activation whose input no GEMM computes (a model's input), or
        whose GEMM's output is also read elsewhere, stays in PyTorch, and
        explain says why; a GELU written out there keeps its steps."""

        from transformers.activations import NewGELUActivation

        class Shared(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(64, 64)
                self.gelu = NewGELUActivation()

            def forward(self, x):
                h = self.fc(x)
                silu = torch.nn.functional.silu
                return silu(h) * h + silu(x) + self.gelu(x)

        m = Shared().bfloat16().eval()
        x = torch.randn(2, 5, 64).bfloat16()
        compiled = fc.compile(m, (x,), target="cpu")
        report = compiled.explain()
        self.assertEqual([[op for op, _ in p.ops] for p in report.partitions], [["linear"]])
        left = [why for _, why, _ in report.left_in_pytorch]
        self.assertEqual(sum(w.startswith("silu.default: nothing to fuse it into") for w in left),
                         2, left)
        self.assertTrue(any(w.startswith("tanh") for w in left), left)
        with torch.no_grad():
            y = compiled(x)
        self.check_close(m, (x,), y)

    def test_llama_decoder_layer(self):
        m = randomize_norms(DecoderBlock().bfloat16().eval())
        x = torch.randn(2, 5, 64).bfloat16()
        compiled = fc.compile(m, (x,), target="cpu")
        report = compiled.explain()
        ops = [[op for op, _ in p.ops] for p in report.partitions]
        # The input norm with q, k and v and the rotary embeddings of q and
        # k; o_proj, the residual, the second norm, the MLP (gate, silu, up,
        # the product, down_proj) and the residual.
        self.assertEqual(ops, [["rms_norm", "linear", "linear", "linear", "rope", "rope"],
                               ["linear", "add", "rms_norm", "linear", "silu", "linear", "mul",
                                "linear", "add"]])
        self.assertTrue(any("3 fusion.fused_matmul" in r for r in report.partitions[0].remarks))
        # The MLP's gate and up projections, its silu and product: one GEMM.
        mlp = report.partitions[1]
        self.assertTrue(any("gated product folded into one GEMM" in r for r in mlp.remarks),
                        mlp.remarks)
        # It returns the layer's output alone: the residual sum before the
        # second norm (HF's RMSNorm checks its dtype: export's
        # _assert_tensor_metadata) is not stored for the check.
        self.assertRegex(mlp.mlir, r"return %\w+ : tensor<\?x64xbf16>\n", mlp.mlir)
        out = fused(mlp.mlir)
        self.assertEqual(out.count(" up("), 1, out)
        self.assertEqual(out.count("activation = #fusion.activation<silu>"), 1, out)
        self.assertNotIn("fusion.activation %", out)
        self.assertNotIn("fusion.mul", out)
        left = " ".join(why for _, why, _ in report.left_in_pytorch)
        self.assertIn("scaled_dot_product_attention", left)
        self.assertNotIn("silu", left)
        # No product of [2, 5, 128] is left, and none of RoPE's (by cos and
        # sin): apply_rotary_pos_emb is fusion.rope.
        self.assertNotIn("[2, 5, 128]", left)
        self.assertNotIn("rotate_half", " ".join(where for _, _, where in report.left_in_pytorch))
        self.assertEqual(report.partitions[0].mlir.count("fusion.rope"), 2)
        with torch.no_grad():
            y = compiled(x)
        self.check_close(m, (x,), y)

    def test_rotary_embedding(self):
        """Hugging Face's apply_rotary_pos_emb of q and k (`q * cos +
        rotate_half(q) * sin` on the [B, H, L, D] view) becomes fusion.rope
        of the projections' [B, L, H x D] outputs, in their partition:
        tables per position ([1, L, D], one for every sequence) as [?, D]
        read at row m mod L (one library for every sequence length), or per
        token ([B, L, D], explicit position ids) as activations; fusion-fuse
        puts each rope in its projection's GEMM (the input norm's Lazy
        Pre-Norm before it)."""
        torch.manual_seed(0)
        m = randomize_norms(DecoderBlock().bfloat16().eval())
        x = torch.randn(2, 5, 64).bfloat16()
        class PerSequence(torch.nn.Module):
            """The rotary embedding of explicit position ids per sequence."""

            def __init__(self, rope):
                super().__init__()
                self.inner = rope

            def forward(self, x, pos):
                return self.inner(x, pos.expand(x.shape[0], -1))

        shared = m.rope
        for positions in ("shared", "per sequence"):
            with self.subTest(positions=positions):
                m.rope = shared if positions == "shared" else PerSequence(shared)
                compiled = fc.compile(m, (x,), target="cpu")
                first = compiled.explain().partitions[0]
                self.assertEqual([op for op, _ in first.ops].count("rope"), 2)
                programs = [mod.program for mod in compiled.graph_module.modules()
                            if isinstance(mod, CompiledPartition)]
                tables = sum(a.table for p in programs for a in p.inputs)
                self.assertEqual(tables, 2 if positions == "shared" else 0)
                table = "tensor<?x16xbf16>"
                self.assertRegex(first.mlir, r"fusion.rope %\w+, %\w+, %\w+ \{head_dim = 16 : i64\}"
                                 r" : tensor<\?x64xbf16>, " + re.escape(table))
                self.check_ropes_in_epilogues(first.mlir)
                with torch.no_grad():
                    y = compiled(x)
                self.check_close(m, (x,), y)
        m.rope = shared

    def test_llama_residual_stream_builds_as_one_gemm(self):
        """For the H200: the decoder layer's down_proj and its residual add
        (in the MLP's partition) build as one GEMM that adds the residual
        (fusion-plan-kernels' foldGemmResiduals), as o_proj's residual sum
        does inside the post-attention norm's GEMM: no add kernel is left;
        the gated MLP is one GEMM between them."""
        m = randomize_norms(DecoderBlock().bfloat16().eval())
        report = fc.build(m, (torch.randn(2, 5, 64).bfloat16(),), target="sm_90a")
        ops = [[op for op, _ in p.ops] for p in report.partitions]
        mlp = next(i for i, o in enumerate(ops) if "mul" in o)
        self.assertEqual(ops[mlp][-2:], ["linear", "add"])
        # explain() says so (its report plans the partitions for sm_90a).
        explained = fc.compile(m, (torch.randn(2, 5, 64).bfloat16(),), target="cpu").explain()
        down = explained.partitions[mlp]
        self.assertTrue(any("residual add folded into the GEMM's epilogue" in r
                            for r in down.remarks), down.remarks)
        for part in report.partitions:
            self.assertTrue(part.compiled, part.why_not)
            planned = subprocess.run([fc.find_tools().fusion_opt, "-", "-fusion-fuse",
                                      "-fusion-plan-kernels"], input=part.mlir,
                                     stdout=subprocess.PIPE, text=True, check=True).stdout
            self.assertNotIn("fusion.add", planned)
            self.assertEqual(planned.count("residual("), [o for o, _ in part.ops].count("add"),
                             planned)
        self.assertEqual(planned.count(" up("), 1, planned)

    def test_gpt2_block(self):
        """GPT-2's block (Conv1D: addmm of a [tokens, in] view by a stored
        [in, out] weight, then a view back): ln_1 with c_attn; attention's
        c_proj, the residual, ln_2, c_fc, gelu_new (written out in ATen
        ops, taken as gelu_tanh: in c_fc's epilogue), the MLP's c_proj and
        the residual, whose add sees the GEMM through Conv1D's view."""
        cfg = GPT2Config(n_embd=64, n_head=4, n_inner=256, resid_pdrop=0.0,
                         embd_pdrop=0.0, attn_pdrop=0.0)
        cfg._attn_implementation = "sdpa"
        m = randomize_norms(GPT2Block(cfg, 0).bfloat16().eval())
        x = torch.randn(2, 7, 64).bfloat16()
        compiled = fc.compile(m, (x,), target="cpu")
        ops = [[op for op, _ in p.ops] for p in compiled.explain().partitions]
        self.assertEqual(ops, [["layer_norm", "matmul"],
                               ["matmul", "add", "layer_norm", "matmul", "gelu_tanh", "matmul",
                                "add"]])
        part = compiled.explain().partitions[1]
        self.assertTrue(part.compiled, part.why_not)
        out = fused(part.mlir)
        self.assertEqual(out.count("activation = #fusion.activation<gelu_tanh>"), 1, out)
        self.assertNotIn("fusion.activation %", out)
        left = [why for _, why, _ in compiled.explain().left_in_pytorch]
        self.assertFalse(any(w.startswith(("tanh", "pow")) for w in left), left)
        with torch.no_grad():
            y = compiled(x)
        self.check_close(m, (x,), y[0] if isinstance(y, tuple) else y)

    def test_falcon_parallel_residual(self):
        """Falcon's decoder layer (parallel attention): its FalconLinear
        projections (`x @ self.weight.T`), `mlp_output += attention_output`
        (an in-place aten.add_ on the MLP's output, taken as an add) and
        `dropout_add(mlp_output, residual)`: the two output projections and
        both adds in one partition, planned without an add; the layer's
        output within 2x PyTorch's bf16 error of float64."""
        try:
            from transformers import FalconConfig
            from transformers.models.falcon.modeling_falcon import (FalconDecoderLayer,
                                                                    FalconRotaryEmbedding)
        except ImportError as error:  # pragma: no cover - depends on transformers
            self.skipTest(f"no Falcon in this transformers: {error}")
        cfg = FalconConfig(hidden_size=64, num_attention_heads=4, new_decoder_architecture=False,
                           parallel_attn=True, multi_query=True, bias=False, hidden_dropout=0.0,
                           attention_dropout=0.0, alibi=False)
        cfg._attn_implementation = "sdpa"
        torch.manual_seed(0)
        m = randomize_norms(DecoderBlock(FalconDecoderLayer, FalconRotaryEmbedding, cfg,
                                         alibi=None).bfloat16().eval())
        x = torch.randn(2, 7, 64).bfloat16()
        # (dense_h_to_4h and its gelu are in the input norm's partition.)
        self.check_parallel_residual(m, x, ["linear", "linear", "add", "add"])

    def test_matmul_as_written(self):
        """`x @ self.weight.T + self.bias` (Falcon's FalconLinear; torch.export
        keeps it as aten.matmul of aten.numpy_T) and `x @ self.weight` with an
        [in, out] weight are GEMMs: one fused_matmul each, the bias as its
        col_bias, no add left; outputs within 2x PyTorch's bf16 error."""

        class AsWritten(torch.nn.Module):
            def __init__(self, transposed):
                super().__init__()
                self.transposed = transposed
                shape = (48, 64) if transposed else (64, 48)
                self.weight = torch.nn.Parameter(torch.randn(*shape) / 8)
                self.bias = torch.nn.Parameter(torch.randn(48))

            def forward(self, x):
                w = self.weight.T if self.transposed else self.weight
                return x @ w + self.bias

        for transposed, op in ((True, "linear"), (False, "matmul")):
            with self.subTest(transposed=transposed):
                torch.manual_seed(0)
                m = AsWritten(transposed).bfloat16().eval()
                x = torch.randn(3, 7, 64).bfloat16()
                compiled = fc.compile(m, (x,), target="cpu")
                parts = compiled.explain().partitions
                self.assertEqual([[o for o, _ in p.ops] for p in parts], [[op, "add"]])
                self.assertTrue(parts[0].compiled, parts[0].why_not)
                planned = planned_for_sm90a(parts[0].mlir)
                self.assertNotIn("fusion.add", planned)
                self.assertEqual(planned.count("col_bias("), 1, planned)
                with torch.no_grad():
                    y = compiled(x)
                self.check_close(m, (x,), y)

    def test_gpt_neox_parallel_residual(self):
        """GPT-NeoX's layer (Pythia; GPT-J's likewise) adds its two branches'
        projections and the residual as `mlp_output + attn_output +
        hidden_states`, the projections first: both adds come into the
        projections' partition (support._gemm_sum) and fusion-plan-kernels
        reassociates them, so that each GEMM takes a residual: no add
        kernel is left; the layer's output matches float64."""
        from transformers import GPTNeoXConfig
        from transformers.models.gpt_neox.modeling_gpt_neox import (GPTNeoXLayer,
                                                                    GPTNeoXRotaryEmbedding)
        cfg = GPTNeoXConfig(hidden_size=64, num_attention_heads=4, intermediate_size=256,
                            use_parallel_residual=True, hidden_dropout=0.0,
                            attention_dropout=0.0, rotary_pct=0.25)
        cfg._attn_implementation = "sdpa"
        torch.manual_seed(0)
        m = randomize_norms(DecoderBlock(GPTNeoXLayer, GPTNeoXRotaryEmbedding, cfg)
                            .bfloat16().eval())
        x = torch.randn(2, 7, 64).bfloat16()
        # dense, then the MLP's post_attention_layernorm, dense_h_to_4h, gelu
        # and dense_4h_to_h, and the adds.
        self.check_parallel_residual(m, x, ["linear", "layer_norm", "linear", "gelu", "linear",
                                            "add", "add"])

    def test_sandwich_post_norms(self):
        """OLMo 2's and Gemma 2's decoder layers, as HF writes them, norm
        each branch's projection before the residual stream adds it
        (`residual + post_attention_layernorm(o_proj(...))`, likewise after
        down_proj; the gated MLP between them one GEMM): each add comes
        into its projection's partition
        (support._gemm_norm); with fusion-plan-kernels post-residuals
        (fusion-compile --post-residual; opt-in) it folds into the GEMM's
        norm epilogue as its post_residual, so no add kernel is left, and
        by default it stays the partition's add kernel; no store of the
        norm's input either way; the layer's output matches float64."""
        from transformers import Gemma2Config, Olmo2Config
        from transformers.models.gemma2.modeling_gemma2 import (Gemma2DecoderLayer,
                                                                Gemma2RotaryEmbedding)
        from transformers.models.olmo2.modeling_olmo2 import (Olmo2DecoderLayer,
                                                              Olmo2RotaryEmbedding)
        for config, layer, rotary in ((Olmo2Config, Olmo2DecoderLayer, Olmo2RotaryEmbedding),
                                      (Gemma2Config, Gemma2DecoderLayer, Gemma2RotaryEmbedding)):
            with self.subTest(layer=layer.__name__):
                cfg = config(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                             num_key_value_heads=4, head_dim=16)
                cfg._attn_implementation = "eager"  # Gemma 2's softcap: not in SDPA
                torch.manual_seed(0)
                m = randomize_norms(DecoderBlock(layer, rotary, cfg).bfloat16().eval())
                x = torch.randn(2, 7, 64).bfloat16()
                compiled = fc.compile(m, (x,), target="cpu")
                parts = [p for p in compiled.explain().partitions
                         if "add" in [op for op, _ in p.ops]]
                # Both adds, with the gated MLP between them (one GEMM).
                adds = [[op for op, _ in p.ops].count("add") for p in parts]
                self.assertEqual(sum(adds), 2, compiled.explain())
                gated = 0
                for part, count in zip(parts, adds):
                    self.assertTrue(part.compiled, part.why_not)
                    planned = planned_for_sm90a(
                        part.mlir, "-fusion-plan-kernels=post-residuals=true")
                    self.assertEqual(planned.count("post_residual("), count, planned)
                    self.assertNotIn("fusion.add", planned)
                    default = planned_for_sm90a(part.mlir)
                    self.assertNotIn("post_residual(", default)
                    self.assertEqual(default.count("fusion.add"), count, default)
                    gated += default.count(" up(")
                    self.assertNotIn("save_norm_input", default)
                    # The norm's input is not stored for export's metadata
                    # check of it (patterns._drop_checks_of_recognized).
                    self.assertNotIn("save_norm_input", planned)
                self.assertEqual(gated, 1)
                with torch.no_grad():
                    y = compiled(x)
                self.check_close(m, (x,), y)

    def test_program_independent_of_partitioner_order(self):
        """A partition's program (its library's name and cache key) follows
        the model's order, not the order torch's partitioner leaves (which
        changed between torch 2.11 and 2.15, so that libraries built with
        one were not found by the other): with the partitioner's inputs
        reversed and its independent ops in another valid order, the same
        programs come out."""
        from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
        torch.manual_seed(0)
        m = randomize_norms(DecoderBlock().bfloat16().eval())
        x = torch.randn(2, 5, 64).bfloat16()
        want = [p.mlir for p in fc.explain(m, (x,), target="cpu").partitions]
        fuse = CapabilityBasedPartitioner.fuse_partitions

        def shuffled(self, partitions, *args, **kwargs):
            gm = fuse(self, partitions, *args, **kwargs)
            for call in gm.graph.nodes:
                if call.op != "call_module" or not str(call.target).startswith("fused_"):
                    continue
                graph = gm.get_submodule(call.target).graph
                inputs = [n for n in graph.nodes if n.op == "placeholder"]
                body = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
                output = next(n for n in graph.nodes if n.op == "output")
                for n in reversed(inputs):  # reversed inputs
                    (body[0] if body else output).prepend(n)
                call.args = tuple(reversed(call.args))
                # A topological order taking the latest ready op first.
                done, left = set(), list(body)
                while left:
                    ready = [n for n in left if all(a in done or a.op == "placeholder"
                                                    for a in n.all_input_nodes)]
                    output.prepend(ready[-1])
                    done.add(ready[-1])
                    left.remove(ready[-1])
                gm.get_submodule(call.target).recompile()
            gm.recompile()
            return gm
        CapabilityBasedPartitioner.fuse_partitions = shuffled
        try:
            got = [p.mlir for p in fc.explain(m, (x,), target="cpu").partitions]
        finally:
            CapabilityBasedPartitioner.fuse_partitions = fuse
        self.maxDiff = None
        self.assertEqual(got, want)
        self.assertIn("%arg0: tensor<?x64xbf16>", want[0])  # the activation first

    @unittest.skipIf(QWEN3_MISSING, f"needs transformers with Qwen3: {QWEN3_MISSING}")
    def test_qwen3_decoder_layer(self):
        """Hugging Face's Qwen3DecoderLayer: the input norm rides into q, k and
        v (Lazy Pre-Norm), q_norm and k_norm into the q and k GEMMs'
        epilogues over their heads (norm_group_size), and the rotary
        embeddings after them, in one partition."""
        torch.manual_seed(0)
        m = randomize_norms(qwen3_block().bfloat16().eval())
        x = torch.randn(2, 5, 128).bfloat16()
        compiled = fc.compile(m, (x,), target="cpu")
        report = compiled.explain()
        first = report.partitions[0]
        self.assertEqual(sorted(op for op, _ in first.ops),
                         ["linear"] * 3 + ["rms_norm"] * 3 + ["rope"] * 2)
        # The rotary embeddings after q_norm and k_norm (folded back to
        # [tokens, H x D]): fusion.rope of the norms' outputs.
        self.assertRegex(first.mlir, r"(?s)fusion.rms_norm %v2 .*tensor.collapse_shape %v3 .*"
                                     r"fusion.rope %v4,")
        self.assertEqual(sum("norm_group_size" in r for r in first.remarks), 2, first.remarks)
        self.assertTrue(any("3 fusion.fused_matmul" in r and "2 of them with the norm epilogue" in r
                            for r in first.remarks), first.remarks)
        with torch.no_grad():
            y = compiled(x)
        self.check_close(m, (x,), y)

    def test_per_head_norm(self):
        """Qwen3's q_norm (and Gemma 3's k_norm order, the heads moved first
        before the norm): each per-head norm joins its linear's partition,
        written as expand_shape, the norm over [?, H, D] and collapse_shape
        (the library's output stays [tokens, H * D]), which fusion-fuse
        fuses into the GEMM's epilogue (norm_group_size); the CPU library
        matches PyTorch at odd token counts, one library for all."""
        cases = [("llama", None, 0, ["rms_norm"]),
                 ("gemma", lambda d: GemmaRMSNorm(d, eps=1e-6), 2, ["rms_norm"] * 2),
                 ("nn.RMSNorm", lambda d: torch.nn.RMSNorm(d, eps=1e-6), 0, ["rms_norm"]),
                 ("nn.LayerNorm", torch.nn.LayerNorm, 2, ["layer_norm"] * 2)]
        for name, norm, kv, norms in cases:
            with self.subTest(norm=name):
                torch.manual_seed(0)
                m = randomize_norms(QkNorm(norm=norm, kv=kv).bfloat16().eval())
                libraries = set()
                for tokens in (7, 129):
                    x = torch.randn(1, tokens, 256).bfloat16()
                    compiled = fc.compile(m, (x,), target="cpu", gradients=False)
                    report = compiled.explain()
                    self.assertEqual(len(report.partitions), 1, str(report))
                    part = report.partitions[0]
                    self.assertTrue(part.compiled, part.why_not)
                    self.assertEqual(sorted(o for o, _ in part.ops), sorted(["linear"] * (
                        1 + bool(kv)) + norms))
                    self.assertIn("tensor.expand_shape %v0 [[0], [1, 2]] output_shape "
                                  "[%tokens, 4, 64] : tensor<?x256xbf16> into "
                                  "tensor<?x4x64xbf16>", part.mlir)
                    self.assertIn("tensor.collapse_shape", part.mlir)
                    fused = [r for r in part.remarks if "norm_group_size" in r]
                    self.assertEqual(len(fused), len(norms), part.remarks)
                    # Nothing of the projection's heads view is left to PyTorch
                    # but the view of the output and the transpose.
                    left = [w for _, w, _ in report.left_in_pytorch]
                    self.assertFalse(any("does not keep the features" in w for w in left), left)
                    libraries.add(part.library)
                    with torch.no_grad():
                        y = compiled(x)
                    self.assertEqual(y.shape, (1, 4 + kv, tokens, 64))
                    self.check_close(m, (x,), y)
                self.assertEqual(len(libraries), 1)  # the token count is dynamic
                # fusion-opt -fusion-fuse on the emitted program: the norms
                # ride in the GEMMs' epilogues, no fusion.*_norm op is left.
                out = subprocess.run([fc.find_tools().fusion_opt, "-", "-fusion-fuse"],
                                     input=part.mlir, stdout=subprocess.PIPE, text=True,
                                     check=True).stdout
                self.assertEqual(out.count("norm_group_size = 64"), len(norms), out)
                self.assertNotIn("_norm %", out)

    def test_per_head_norm_builds_for_sm90a(self):
        """For the H200: Qwen3's q_norm and k_norm partition (each norm in its
        GEMM's epilogue), with its training programs, builds for sm_90a."""
        m = randomize_norms(QkNorm(kv=2).bfloat16())
        report = fc.build(m, (torch.randn(2, 9, 256).bfloat16(),), target="sm_90a",
                          gradients=True)
        part = report.partitions[0]
        self.assertTrue(part.compiled, part.why_not)
        self.assertEqual(part.gradients, "kernels", part.gradients_why)
        for library in [part.library] + part.gradient_libraries:
            self.assertTrue(os.path.exists(library))

    def test_gdpa_forms(self):
        # HSTU-style attention without softmax, as its users write it.
        class Einsum(torch.nn.Module):
            def forward(self, q, k, v):
                s = torch.einsum("bihd,bjhd->bhij", q, k) * 0.125
                return torch.einsum("bhij,bjhd->bihd", torch.nn.functional.silu(s), v)

        class Matmul(torch.nn.Module):
            def forward(self, q, k, v):
                s = q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)
                a = torch.nn.functional.gelu(s / 8, approximate="tanh")
                return (a @ v.transpose(1, 2)).transpose(1, 2)

        q = torch.randn(2, 5, 2, 16).bfloat16()
        k, v = torch.randn(2, 7, 2, 16).bfloat16(), torch.randn(2, 7, 2, 24).bfloat16()
        for model, activation, scale in ((Einsum(), "silu", "1.25"), (Matmul(), "gelu_tanh", "1.25")):
            compiled = fc.compile(model, (q, k, v), target="cpu")
            report = compiled.explain()
            self.assertEqual(report.left_in_pytorch, [])
            part = report.partitions[0]
            self.assertTrue(part.compiled, part.why_not)
            self.assertIn(f"fusion.gdpa %arg0, %arg1, %arg2 {{activation = "
                          f"#fusion.activation<{activation}>, scale = {scale}", part.mlir)
            self.assertIn("tensor<2x5x2x16xbf16>, tensor<2x7x2x16xbf16>, tensor<2x7x2x24xbf16> "
                          "-> tensor<2x5x2x24xbf16>", part.mlir)
            with torch.no_grad():
                y = compiled(q, k, v)
            self.check_close(model, (q, k, v), y)

    def test_gdpa_builds_for_the_gpu(self):
        # The same attention, built ahead of time for the H200: its partition
        # becomes the sm_90a attention kernel (no GPU needed to build);
        # head dimensions the kernel does not take stay in PyTorch, saying why.
        class Einsum(torch.nn.Module):
            def forward(self, q, k, v):
                s = torch.einsum("bihd,bjhd->bhij", q, k) * 0.125
                return torch.einsum("bhij,bjhd->bihd", torch.nn.functional.silu(s), v)

        q = torch.randn(2, 130, 2, 64).bfloat16()
        k, v = torch.randn(2, 100, 2, 64).bfloat16(), torch.randn(2, 100, 2, 128).bfloat16()
        report = fc.build(Einsum(), (q, k, v), target="sm_90a")
        part = report.partitions[0]
        self.assertTrue(part.compiled, part.why_not)
        self.assertIn("fusion.gdpa", part.mlir)
        self.assertTrue(os.path.exists(part.library), part.library)
        small = (torch.randn(2, 5, 2, 16).bfloat16(), torch.randn(2, 7, 2, 16).bfloat16(),
                 torch.randn(2, 7, 2, 16).bfloat16())
        report = fc.build(Einsum(), small, target="sm_90a", strict=False)
        self.assertFalse(report.partitions[0].compiled)
        self.assertIn("a multiple of 64", report.partitions[0].why_not)

    def test_norm_attention_block(self):
        # The block becomes one partition, written with the heads views as
        # reshapes, which fusion-fuse forms into fusion.norm_attention (the
        # FlashNormAttention kernel on the GPU).
        m = randomize_norms(NormAttentionBlock(2, 64).bfloat16())
        q = torch.randn(2, 70, 2, 64).bfloat16()
        k, v = (0.125 * torch.randn(2, 64, 2, 64)).bfloat16(), torch.randn(2, 64, 2, 64).bfloat16()
        compiled = fc.compile(m, (q, k, v), target="cpu")
        report = compiled.explain()
        self.assertEqual(report.left_in_pytorch, [])
        self.assertEqual(len(report.partitions), 1)
        part = report.partitions[0]
        self.assertTrue(part.compiled, part.why_not)
        self.assertEqual([op for op, _ in part.ops],
                         ["layer_norm", "gdpa", "add", "rms_norm", "add"])
        self.assertIn("tensor.collapse_shape %arg0 [[0], [1], [2, 3]] : tensor<2x70x2x64xbf16> "
                      "into tensor<2x70x128xbf16>", part.mlir)
        self.assertTrue(any("formed into fusion.norm_attention" in r for r in part.remarks),
                        part.remarks)
        before = CompiledPartition.calls
        with torch.no_grad():
            y = compiled(q, k, v)
        self.assertEqual(CompiledPartition.calls, before + 1)
        self.check_close(m, (q, k, v), y)
        # For the H200: the same block builds into the sm_90a kernel.
        q, k, v = (torch.randn(2, 130, 2, 64).bfloat16(), torch.randn(2, 128, 2, 64).bfloat16(),
                   torch.randn(2, 128, 2, 64).bfloat16())
        report = fc.build(m, (q, k, v), target="sm_90a")
        self.assertTrue(report.partitions[0].compiled, report.partitions[0].why_not)
        self.assertTrue(os.path.exists(report.partitions[0].library))

    def test_norm_attention_block_marks_no_weights(self):
        """An attention partition's q, k and v are static like its weights:
        cache_weight_folds marks nothing there (a q taken for a weight would
        move the whole block into the preparation)."""
        m = randomize_norms(NormAttentionBlock(2, 64).bfloat16())
        q = torch.randn(2, 70, 2, 64).bfloat16()
        k, v = torch.randn(2, 64, 2, 64).bfloat16(), torch.randn(2, 64, 2, 64).bfloat16()
        part = fc.explain(m, (q, k, v), target="cpu").partitions[0]
        self.assertIn("fusion.gdpa", part.mlir)
        gm = fc._capture(m, (q, k, v))
        marked = fc._partition(gm, "cpu", False, False, False, cache_weight_folds=True)[1]
        self.assertNotIn("fusion.weight", marked.partitions[0].mlir)
        self.assertEqual(marked.partitions[0].mlir, part.mlir)

    def test_norm_attention_block_variants(self):
        q = torch.randn(2, 70, 2, 64).bfloat16()
        k, v = (0.125 * torch.randn(2, 64, 2, 64)).bfloat16(), torch.randn(2, 64, 2, 64).bfloat16()
        for form in ("view", "matmul", "flatten"):
            with self.subTest(form=form):
                m = randomize_norms(NormAttentionVariants(form).bfloat16())
                compiled = fc.compile(m, (q, k, v), target="cpu")
                report = compiled.explain()
                self.assertEqual(report.left_in_pytorch, [])
                part = report.partitions[0]
                self.assertEqual([op for op, _ in part.ops],
                                 ["layer_norm", "gdpa", "add", "rms_norm", "add"])
                self.assertTrue(any("formed into fusion.norm_attention" in r
                                    for r in part.remarks), part.remarks)
                # nn.RMSNorm's default eps is float32's epsilon.
                self.assertIn("epsilon = 1.192092896e-07", part.mlir)
                with torch.no_grad():
                    y = compiled(q, k, v)
                self.check_close(m, (q, k, v), y)

    def test_torch_compile_backend_norm_attention_block(self):
        # Under the backend the block's einsums are kept whole through
        # AOTAutograd (dynamo_forms) and nn.RMSNorm arrives as float32
        # arithmetic with the weight before its one rounding: the block is
        # again one partition, one library call.
        m = randomize_norms(NormAttentionBlock(2, 32).bfloat16())
        q = torch.randn(2, 9, 2, 32).bfloat16()
        k, v = torch.randn(2, 5, 2, 32).bfloat16(), torch.randn(2, 5, 2, 32).bfloat16()
        torch._dynamo.reset()
        compiled = torch.compile(m, backend=fc.backend)
        before = CompiledPartition.calls
        with torch.no_grad():
            y = compiled(q, k, v)
        self.assertEqual(CompiledPartition.calls, before + 1)
        self.check_close(m, (q, k, v), y)
        # With gradients the einsums stay PyTorch's (the operator has no
        # autograd formula): the step matches eager autograd.
        leaves = [t.float().requires_grad_(True) for t in (q, k, v)]
        model = copy.deepcopy(m).float()
        torch._dynamo.reset()
        torch.compile(model, backend=fc.backend)(*leaves).square().sum().backward()
        grads = [t.grad.clone() for t in leaves]
        for t in leaves:
            t.grad = None
        model(*leaves).square().sum().backward()
        for ours, theirs in zip(grads, (t.grad for t in leaves)):
            self.assertTrue(torch.allclose(ours, theirs, atol=1e-4, rtol=1e-4))

    def test_torch_compile_backend_leaves_unsupported_forms_to_inductor(self):
        # With symbolic sizes the recognized forms are not taken (the
        # partitions need static feature sizes): they go back to ATen ops
        # for Inductor instead of reaching it as front-end functions.
        m = randomize_norms(PreNorm().bfloat16())
        torch._dynamo.reset()
        compiled = torch.compile(m, backend=fc.backend, dynamic=True)
        for tokens in (5, 7):
            x = torch.randn(2, tokens, 64).bfloat16()
            with torch.no_grad():
                y = compiled(x)
            self.check_close(m, (x,), y)

    def test_unsupported_model_runs_in_pytorch(self):
        def f(x):
            return torch.sin(x) * 2
        x = torch.randn(4, 8)
        compiled = fc.compile(f, (x,), target="cpu")
        self.assertEqual(compiled.explain().partitions, [])
        self.assertTrue(torch.equal(compiled(x), f(x)))

    def test_uncapturable_model_runs_in_pytorch(self):
        def f(x):
            if x.sum() > 0:  # data-dependent control flow: torch.export refuses it
                return x * 2
            return x - 1
        x = torch.ones(4, 8)
        compiled = fc.compile(f, (x,), target="cpu")
        left = compiled.explain().left_in_pytorch
        self.assertIn("torch.export could not capture the model", left[0][1])
        self.assertTrue(torch.equal(compiled(x), f(x)))
        self.assertTrue(torch.equal(compiled(-x), f(-x)))
        with self.assertRaises(Exception):
            fc.compile(f, (x,), target="cpu", strict=True)

    def test_gradients_fall_back_to_pytorch(self):
        # A partition whose backward the dialect cannot write (the gradient
        # of a bf16 residual added to an f32 GEMM needs a cast) keeps
        # PyTorch's ops for calls that need gradients; explain says why.
        # (Gradients on the kernels: test_frontend_training.py.)
        class Residual(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(64, 64)

            def forward(self, x, r):
                return self.lin(x) + r
        m = Residual()
        x = torch.randn(2, 3, 64, requires_grad=True)
        r = torch.randn(2, 3, 64).bfloat16().requires_grad_(True)
        compiled = fc.compile(m, (x.detach(), r.detach()), target="cpu")
        part = compiled.explain().partitions[0]
        self.assertTrue(part.compiled, part.why_not)
        self.assertEqual(part.gradients, "pytorch")
        self.assertIn("needs a cast", part.gradients_why)
        self.assertIn("backward in PyTorch (the partition's ops)", str(compiled.explain()))
        before = CompiledPartition.calls
        y = compiled(x, r)
        self.assertEqual(CompiledPartition.calls, before)
        self.assertIsNotNone(y.grad_fn)
        y.sum().backward()
        self.assertIsNotNone(x.grad)
        self.assertEqual(r.grad.dtype, torch.bfloat16)
        self.assertTrue(torch.allclose(y, m(x, r)))

    def test_kernels_are_called(self):
        m = PreNorm().bfloat16().eval()
        x = torch.randn(2, 3, 64).bfloat16()
        compiled = fc.compile(m, (x,), target="cpu")
        calls = [mod for mod in compiled.graph_module.modules()
                 if isinstance(mod, CompiledPartition)]
        self.assertEqual(len(calls), 1)
        # Poisoned fallback: a call that reached PyTorch's ops would fail.
        calls[0].fallback = None
        before = CompiledPartition.calls
        with torch.no_grad():
            compiled(x)
        self.assertEqual(CompiledPartition.calls, before + 1)

    def test_cache_weight_folds(self):
        """cache_weight_folds=True: Lazy Pre-Norm's weight folds (the input
        norm's weight into q, k and v) move into the library's
        <function>_prepare, run on the first call and again only when a
        weight changed in place; the outputs are the per-call fold's."""
        torch.manual_seed(0)
        m = randomize_norms(DecoderBlock().bfloat16().eval())
        x = torch.randn(2, 5, 64).bfloat16()
        plain = fc.compile(m, (x,), target="cpu", report=False)
        cached = fc.compile(m, (x,), target="cpu", report=False, cache_weight_folds=True)
        part = cached.explain().partitions[0]
        self.assertIn("{fusion.weight}", part.mlir)
        # explain() says so (report=True), at the partition, not a temporary file.
        reported = fc.compile(m, (x,), target="cpu", cache_weight_folds=True).explain()
        self.assertIn("weight preparation outlined into @", str(reported))
        self.assertIn("[<partition>", str(reported))
        self.assertNotIn("/tmp", str(reported).split("weight preparation")[1].splitlines()[0])
        self.assertNotIn("{fusion.weight}", plain.explain().partitions[0].mlir)
        preps = [mod._preparation for mod in cached.graph_module.modules()
                 if isinstance(mod, CompiledPartition) and mod._preparation is not None]
        # The input norm's folds into q / k / v (the post-attention norm
        # rides in o_proj's epilogue instead: no fold).
        self.assertEqual([len(p.outputs) for p in preps], [3])
        self.assertTrue(all(mod._preparation is None for mod in plain.graph_module.modules()
                            if isinstance(mod, CompiledPartition)))
        with torch.no_grad():
            want = plain(x)
            got = cached(x)
            self.assertEqual([p.calls for p in preps], [1])
            self.assertTrue(torch.equal(got, want))
            got = cached(x.flip(0))  # other activations: the same preparation
            self.assertEqual([p.calls for p in preps], [1])
            self.assertTrue(torch.equal(got, plain(x.flip(0))))
            # An in-place update (an optimizer step, load_state_dict) is seen.
            m.layer.input_layernorm.weight.mul_(1.5)
            got = cached(x)
            self.assertEqual([p.calls for p in preps], [2])
            self.assertTrue(torch.equal(got, plain(x)))
        self.check_close(m, (x,), got)

    def test_frozen_weights_in_graph_captures(self):
        """A CUDA graph capture records the weights' preparation (so that its
        replays see in-place updates), except with frozen_weights=True once
        the kept preparation is current: then the capture reads the kept
        folds. A capture records nothing that runs now, so the next call
        outside it prepares again. (The capture is simulated: calls'
        _capturing says yes; the tensors stay on the CPU.)"""
        from unittest import mock

        from fusion_compiler import calls as calls_module
        torch.manual_seed(0)
        m = randomize_norms(PreNorm().bfloat16().eval())
        x = torch.randn(2, 5, 64).bfloat16()
        with self.assertRaisesRegex(ValueError, "needs cache_weight_folds=True"):
            fc.compile(m, (x,), target="cpu", report=False, frozen_weights=True)
        with self.assertRaisesRegex(ValueError, "needs cache_weight_folds=True"):
            fc.backend(None, [x], target="cpu", frozen_weights=True)
        plain = fc.compile(m, (x,), target="cpu", report=False)
        for frozen in (False, True):
            cached = fc.compile(m, (x,), target="cpu", report=False,
                                cache_weight_folds=True, frozen_weights=frozen)
            preps = [mod._preparation for mod in cached.graph_module.modules()
                     if isinstance(mod, CompiledPartition) and mod._preparation is not None]
            self.assertEqual(len(preps), 1)
            self.assertEqual(preps[0].frozen, frozen)
            with torch.no_grad():
                self.assertTrue(torch.equal(cached(x), plain(x)))  # warm-up: prepares
                self.assertEqual(preps[0].calls, 1)
                with mock.patch.object(calls_module, "_capturing", return_value=True):
                    got = cached(x)
                # Frozen: the capture read the kept folds; else it recorded a preparation.
                self.assertEqual(preps[0].calls, 1 if frozen else 2)
                self.assertTrue(torch.equal(got, plain(x)))
                cached(x)  # outside a capture: prepared again after a recording only
                self.assertEqual(preps[0].calls, 1 if frozen else 3)
                # An in-place update is still seen outside a graph, and a capture
                # after it (the kept preparation no longer current) records one.
                m.input_layernorm.weight.mul_(1.5)
                self.assertTrue(torch.equal(cached(x), plain(x)))
                self.assertEqual(preps[0].calls, 2 if frozen else 4)
                m.input_layernorm.weight.mul_(0.5)
                with mock.patch.object(calls_module, "_capturing", return_value=True):
                    self.assertTrue(torch.equal(cached(x), plain(x)))
                self.assertEqual(preps[0].calls, 3 if frozen else 5)
                m.input_layernorm.weight.mul_(4 / 3)  # back, for the next round

    def test_cache_weight_folds_of_computed_weights(self):
        """GemmaRMSNorm's weight 1 + w is computed in PyTorch at every call:
        a new tensor, maybe at the old one's address, with a fresh version
        counter. The folds are then prepared at every call (a held reference
        tells the tensors apart), so that an update of w is seen."""
        torch.manual_seed(0)
        m = randomize_norms(gemma_prenorm().bfloat16().eval())
        x = torch.randn(2, 5, 64).bfloat16()
        plain = fc.compile(m, (x,), target="cpu", report=False)
        cached = fc.compile(m, (x,), target="cpu", report=False, cache_weight_folds=True)
        preps = [mod._preparation for mod in cached.graph_module.modules()
                 if isinstance(mod, CompiledPartition) and mod._preparation is not None]
        self.assertEqual(len(preps), 1)
        with torch.no_grad():
            self.assertTrue(torch.equal(cached(x), plain(x)))
            m.input_layernorm.weight.add_(0.5)
            self.assertTrue(torch.equal(cached(x), plain(x)))
        self.assertEqual(preps[0].calls, 2)

    def test_cache_reused_and_invalidated(self):
        m = PreNorm().bfloat16().eval()
        x = torch.randn(2, 3, 64).bfloat16()
        first = fc.compile(m, (x,), target="cpu", report=False).explain().partitions[0].library
        again = fc.compile(m, (x,), target="cpu", report=False).explain().partitions[0].library
        self.assertEqual(first, again)  # same program, target, compiler: reused
        # Another token count: the library's token count is dynamic, reused.
        x2 = torch.randn(5, 64).bfloat16()
        other = fc.compile(m, (x2,), target="cpu", report=False).explain().partitions[0].library
        self.assertEqual(first, other)
        # Another epsilon: another program.
        m.input_layernorm.variance_epsilon = 1e-3
        eps = fc.compile(m, (x,), target="cpu", report=False).explain().partitions[0].library
        self.assertNotEqual(first, eps)
        # Another compiler (its tools' contents differ): not reused.
        tools = fc.find_tools()
        with tempfile.TemporaryDirectory() as copy_dir:
            bindir = os.path.join(copy_dir, "bin")
            os.makedirs(bindir)
            shutil.copy(tools.fusion_opt, bindir)
            with open(tools.fusion_compile) as src, \
                    open(os.path.join(bindir, "fusion-compile"), "w") as dst:
                dst.write(src.read().replace(
                    'bindir=$(cd "$(dirname "$0")" && pwd)',
                    f'bindir="{tools.bindir}"  # changed'))
            os.chmod(os.path.join(bindir, "fusion-compile"), 0o755)
            old = os.environ.get("FUSION_TOOLS_DIR")
            os.environ["FUSION_TOOLS_DIR"] = bindir
            try:
                changed = fc.compile(m, (x,), target="cpu", report=False)
            finally:
                if old is None:
                    del os.environ["FUSION_TOOLS_DIR"]
                else:
                    os.environ["FUSION_TOOLS_DIR"] = old
        self.assertNotEqual(changed.explain().partitions[0].library, eps)

    def test_cache_miss_without_a_compiler(self):
        """A machine that cannot run the compiler (tools carried without
        MLIR) and misses the cache gets an error that says so and what to
        do, not the loader's message alone."""
        m = PreNorm().bfloat16().eval()
        x = torch.randn(2, 3, 64).bfloat16()
        tools = fc.find_tools()
        with tempfile.TemporaryDirectory() as work:
            bindir = os.path.join(work, "bin")
            os.makedirs(bindir)
            shutil.copy(tools.fusion_opt, bindir)
            with open(os.path.join(bindir, "fusion-compile"), "w") as f:
                f.write("#!/bin/sh\necho 'fusion-opt: error while loading shared libraries: "
                        "libMLIR.so.22.1: cannot open shared object file' >&2\nexit 127\n")
            os.chmod(os.path.join(bindir, "fusion-compile"), 0o755)
            with environment(FUSION_TOOLS_DIR=bindir,
                             FUSION_CACHE_DIR=os.path.join(work, "cache")):
                with self.assertRaisesRegex(fc.FusionCompileError,
                                            r"not in the cache .* compiler cannot run"):
                    fc.compile(m, (x,), target="cpu", report=False, strict=True)

    def test_compile_flags_from_the_environment(self):
        """FUSION_COMPILE_FLAGS reaches fusion-compile for GPU libraries
        (e.g. --small-m), and a library built with them is another library
        (another cache key); CPU libraries do not take them."""
        from fusion_compiler import toolchain
        tools = fc.find_tools()
        with tempfile.TemporaryDirectory() as work:
            bindir = os.path.join(work, "bin")
            os.makedirs(bindir)
            shutil.copy(tools.fusion_opt, bindir)
            log = os.path.join(work, "calls.txt")
            with open(os.path.join(bindir, "fusion-compile"), "w") as f:
                f.write(f'#!/bin/sh\necho "$@" >> {log}\n'
                        'while [ "$1" != "-o" ]; do shift; done; touch "$2"\n')
            os.chmod(os.path.join(bindir, "fusion-compile"), 0o755)
            tools = toolchain.Tools(bindir)
            cache = os.path.join(work, "cache")
            with environment(FUSION_CACHE_DIR=cache, FUSION_COMPILE_FLAGS=None):
                plain = toolchain.compile_library("module {}", "sm_90a", tools=tools)
            with environment(FUSION_CACHE_DIR=cache, FUSION_COMPILE_FLAGS="--small-m"):
                small = toolchain.compile_library("module {}", "sm_90a", tools=tools)
                cpu = toolchain.compile_library("module {}", "cpu", tools=tools)
            self.assertNotEqual(plain.path, small.path)
            self.assertFalse(plain.cached or small.cached or cpu.cached)
            with open(log) as f:
                calls = f.read().splitlines()
            self.assertEqual(len(calls), 3)
            self.assertNotIn("--small-m", calls[0])
            self.assertTrue(calls[1].endswith("--small-m"), calls[1])
            self.assertTrue(calls[2].endswith("--cpu"), calls[2])

    def test_equal_layers_share_a_library(self):
        class Two(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = PreNorm(64, 64), PreNorm(64, 64)

            def forward(self, x):
                # (tanh: no dialect op, so the layers are two partitions.)
                return self.b(torch.tanh(self.a(x)))
        m = Two().bfloat16().eval()
        x = torch.randn(2, 3, 64).bfloat16()
        report = fc.build(m, (x,), target="cpu")
        self.assertEqual(len(report.partitions), 2)
        self.assertEqual(report.partitions[0].library, report.partitions[1].library)
        # The report keeps the model's source lines...
        self.assertIn("loc(", report.partitions[0].mlir)
        # ...the compiled program has none.
        with open(os.path.join(os.path.dirname(report.partitions[0].library),
                               "program.mlir")) as fh:
            self.assertNotIn("loc(", fh.read())

    def test_torch_compile_backend(self):
        cfg = BertConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4)
        m = randomize_norms(BertSelfOutput(cfg).bfloat16().eval())
        x, r = torch.randn(2, 9, 64).bfloat16(), torch.randn(2, 9, 64).bfloat16()
        for inductor in (True, False):
            # Inductor compiles the rest of the graph (here: nothing but the
            # views around the partition) or it runs eagerly.
            torch._dynamo.reset()
            compiled = torch.compile(
                m, backend=lambda gm, inputs: fc.backend(gm, inputs, inductor=inductor))
            before = CompiledPartition.calls
            with torch.no_grad():
                y = compiled(x, r)
            self.assertEqual(CompiledPartition.calls, before + 1)
            self.check_close(m, (x, r), y)

    def test_torch_compile_backend_gated_mlp(self):
        """Through torch.compile the gated MLP is one partition too: the
        backend keeps aten.silu from Inductor's decompositions (which write
        it as x / (1 + exp(-x)) in float32) for the partitions to find, and
        with gradients (silu's input saved for the backward: not taken)
        decomposes it again; the step matches eager autograd."""
        m = LlamaMLP(llama_config()).bfloat16().eval()
        x = torch.randn(2, 5, 64).bfloat16()
        for inductor in (True, False):
            torch._dynamo.reset()
            compiled = torch.compile(
                m, backend=lambda gm, inputs: fc.backend(gm, inputs, inductor=inductor))
            before = CompiledPartition.calls
            with torch.no_grad():
                y = compiled(x)
            self.assertEqual(CompiledPartition.calls, before + 1, inductor)
            self.check_close(m, (x,), y)
        m = copy.deepcopy(m).float()
        x = torch.randn(2, 3, 64, requires_grad=True)
        torch._dynamo.reset()
        torch.compile(m, backend=fc.backend)(x).square().sum().backward()
        grad = x.grad.clone()
        x.grad = None
        m(x).square().sum().backward()
        self.assertTrue(torch.allclose(grad, x.grad, atol=1e-5, rtol=1e-4))

    def test_backward_graph_decomposes_kept_activations(self):
        """A backward graph that recomputes a kept silu or gelu (Inductor's
        min-cut partitioner may) gets them decomposed before Inductor sees
        them, as the forward's leftovers are; the values stay."""
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.proxy_tensor import make_fx
        from fusion_compiler import _decompose_kept

        def f(g, u):
            return torch.ops.aten.silu(g) * u + torch.ops.aten.gelu(g, approximate="tanh")

        g, u = torch.randn(4, 8), torch.randn(4, 8)
        with FakeTensorMode() as mode:
            gm = make_fx(f)(mode.from_tensor(g), mode.from_tensor(u))
        kept = (torch.ops.aten.silu.default, torch.ops.aten.gelu.default)
        self.assertTrue(any(n.target in kept for n in gm.graph.nodes))
        _decompose_kept(gm)
        self.assertFalse(any(n.target in kept for n in gm.graph.nodes), gm.graph)
        self.assertTrue(torch.allclose(gm(g, u), f(g, u), atol=1e-6))

    def test_torch_compile_backend_weight_folds(self):
        """cache_weight_folds through torch.compile: the parameters reach the
        partition as graph inputs; the fold is prepared once, and again after
        an in-place update, with and without Inductor."""
        from fusion_compiler import calls
        m = randomize_norms(PreNorm().bfloat16().eval())
        x = torch.randn(2, 9, 64).bfloat16()
        for inductor in (False, True):
            torch._dynamo.reset()
            compiled = torch.compile(m, backend=lambda gm, inputs: fc.backend(
                gm, inputs, inductor=inductor, cache_weight_folds=True))
            with torch.no_grad():
                want = m(x)
                compiled(x)
                y = compiled(x)
                preps = {id(p._preparation): p._preparation
                         for p in list(calls._REGISTRY.values()) + live_partitions()
                         if p._preparation is not None and p._preparation.calls}
                self.assertEqual(len(preps), 1, inductor)
                prep = next(iter(preps.values()))
                self.assertEqual(prep.calls, 1, inductor)
                self.check_close(m, (x,), y)
                m.input_layernorm.weight.mul_(1.25)
                y = compiled(x)
                self.assertEqual(prep.calls, 2, inductor)
                self.check_close(m, (x,), y)
                self.assertFalse(torch.equal(y, want))
                prep.calls = 0  # the next round finds its own

    def test_torch_compile_backend_training_step(self):
        # With gradients: the forward's forms are saved for the backward and
        # stay whole in Inductor's graphs; the step matches eager autograd.
        m = PreNorm().float()
        x = torch.randn(2, 3, 64, requires_grad=True)
        torch._dynamo.reset()
        compiled = torch.compile(m, backend=fc.backend)
        y = compiled(x)
        y.square().sum().backward()
        grad = x.grad.clone()
        x.grad = None
        m(x).square().sum().backward()
        self.assertTrue(torch.allclose(grad, x.grad, atol=1e-5, rtol=1e-4))

    def test_pip_installs_the_package(self):
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "src")
            # A copy (symlinks resolved), so the build leaves the checkout clean.
            shutil.copytree(os.path.dirname(HERE), source, symlinks=False,
                            ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
            target = os.path.join(tmp, "site")
            # The build backend from this environment where it has one,
            # else pip fetches it (PyPI).
            try:
                import setuptools  # noqa: F401
                isolation = ["--no-build-isolation"]
            except ImportError:
                isolation = []
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                            *isolation, "--disable-pip-version-check",
                            "--target", target, source], check=True)
            probe = ("import fusion_compiler, fusion_runtime, sys; "
                     "assert fusion_compiler.__file__.startswith(sys.argv[1]); "
                     "assert fusion_runtime.parse_signature('a: bf16[M,8]')[0].shape == ('M', 8); "
                     "print(fusion_compiler.find_tools().bindir)")
            env = dict(os.environ, PYTHONPATH=target, FUSION_TOOLS_DIR=fc.find_tools().bindir)
            out = subprocess.run([sys.executable, "-c", probe, target], check=True, env=env,
                                 stdout=subprocess.PIPE, text=True, cwd=tmp).stdout
        self.assertEqual(out.strip(), fc.find_tools().bindir)

    def test_builds_for_sm100a(self):
        # Blackwell's kernels (tcgen05, tensor memory) build ahead of time
        # (never executed: no B200), the attention block's included.
        m = randomize_norms(PreNorm().bfloat16())
        report = fc.build(m, (torch.randn(2, 9, 64).bfloat16(),), target="sm_100a")
        self.assertTrue(report.partitions[0].compiled, report.partitions[0].why_not)
        self.assertIn('#fusion.target<"sm_100a">', report.partitions[0].mlir)
        self.assertTrue(os.path.exists(report.partitions[0].library))
        q = torch.randn(2, 130, 2, 64).bfloat16()
        k, v = torch.randn(2, 128, 2, 64).bfloat16(), torch.randn(2, 128, 2, 64).bfloat16()
        report = fc.build(randomize_norms(NormAttentionBlock(2, 64).bfloat16()), (q, k, v),
                          target="sm_100a")
        self.assertEqual(len(report.partitions), 1)
        self.assertTrue(report.partitions[0].compiled, report.partitions[0].why_not)

    def test_bad_target(self):
        m = PreNorm()
        x = torch.randn(2, 64)
        with self.assertRaisesRegex(ValueError, "expected one of cpu, sm_90a, sm_100a"):
            fc.compile(m, (x,), target="sm_80")

    def test_wrong_call_arguments(self):
        m = PreNorm().bfloat16().eval()
        x = torch.randn(2, 3, 64).bfloat16()
        compiled = fc.compile(m, (x,), target="cpu", report=False)
        part = next(mod for mod in compiled.graph_module.modules()
                    if isinstance(mod, CompiledPartition))
        w = m.q_proj.weight.detach()
        g = m.input_layernorm.weight.detach()
        with self.assertRaisesRegex(TypeError, "expected torch.bfloat16, got torch.float32"):
            part(x.float(), g, w)
        with self.assertRaisesRegex(ValueError, r"expected \[\.\.\., 64\], got \[2, 3, 32\]"):
            part(x[..., :32], g, w)


if __name__ == "__main__":
    unittest.main()
