"""Training through fusion_compiler.compile on the CPU: each partition's call
that needs gradients runs its training forward and its backward program
(the dialect's gradient ops, compiled by fusion-compile --cpu), and every
leaf's gradient (input, weights, biases) is compared with float64 PyTorch
autograd of the same module on random inputs, within 2x of PyTorch's own
error in the test's dtype.

Runs with torch and transformers, like test_frontend.py (skips without
them, fails where FUSION_TEST_REQUIRE_TORCH=1); the tools come from
$FUSION_TOOLS_DIR. The same checks on the H200: test/gpu/test_frontend_training_gpu.py.
"""

import copy
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from test_frontend import MISSING, PHI3_MISSING, needs_torch  # noqa: E402

if MISSING is None:
    import torch
    from transformers import BertConfig, T5Config
    from transformers.models.bert.modeling_bert import BertSelfOutput
    from transformers.models.t5.modeling_t5 import T5LayerFF

    import fusion_compiler as fc
    from fusion_compiler.calls import CompiledPartition
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
    from transformers.models.llama.modeling_llama import LlamaMLP
    from test_frontend import (DecoderBlock, NormAttentionBlock, PreNorm, QkNorm,
                               cohere_prenorm, float32_layer_norm_prenorm, gemma_prenorm,
                               llama_config, randomize_norms)


def leaves(module, inputs):
    """The inputs (as new leaves requiring gradients) and the parameters."""
    xs = [t.detach().clone().requires_grad_(True) for t in inputs]
    return xs, xs + [p for p in module.parameters() if p.requires_grad]


def gradients(module, inputs, dys, call=None):
    """The gradients of every leaf of `module` on `inputs` for output
    gradients `dys` (call: how to call it, the module itself by default)."""
    module.zero_grad(set_to_none=True)
    xs, all_leaves = leaves(module, inputs)
    out = (call or module)(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    torch.autograd.backward(outs, [d.to(o.dtype) for o, d in zip(outs, dys)])
    return out, [t.grad for t in all_leaves]


def gradient_errors(module, inputs, compiled, seed=0):
    """For each leaf: (name, our error, PyTorch's error), each the largest
    absolute difference of its gradient from float64 autograd; dy random."""
    exact = copy.deepcopy(module).double()
    with torch.no_grad():
        out = module(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    g = torch.Generator().manual_seed(seed)
    dys = [torch.randn(o.shape, generator=g, dtype=torch.float64) for o in outs]
    _, want = gradients(exact, [t.double() for t in inputs], dys)
    _, theirs = gradients(module, inputs, dys)
    before = CompiledPartition.calls
    y, ours = gradients(module, inputs, dys, call=compiled)
    ran = CompiledPartition.calls - before
    names = [f"input {i}" for i in range(len(inputs))] + \
        [n for n, p in module.named_parameters() if p.requires_grad]
    errors = []
    for name, o, t, w in zip(names, ours, theirs, want):
        if o is None:
            errors.append((name, None, None, w.abs().max().item()))
            continue
        errors.append((name, (o.double() - w).abs().max().item(),
                       (t.double() - w).abs().max().item(), w.abs().max().item()))
    return y, errors, ran


@needs_torch
class FrontEndTrainingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cache = tempfile.mkdtemp(prefix="fusion-frontend-training-cache-")
        os.environ["FUSION_CACHE_DIR"] = cls.cache

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)

    def setUp(self):
        torch.manual_seed(1234)

    def check_gradients(self, module, inputs, partitions=1, last=True):
        """Compiles `module` for the CPU and checks every leaf's gradient
        against float64 autograd: within 2x PyTorch's own error in the
        module's dtype, plus a quarter of a rounding step of bf16 (or four
        of f32) at the gradient's scale, for a gradient PyTorch happens to
        compute exactly. last: the output is a partition's (not a PyTorch
        op's after it). A partition with activations trains in pieces
        (each piece's training forward and backward run). Returns the
        compiled module."""
        compiled = fc.compile(module, inputs, target="cpu")
        report = compiled.explain()
        self.assertEqual(len(report.partitions), partitions, str(report))
        for p in report.partitions:
            self.assertTrue(p.compiled, p.why_not)
            self.assertEqual(p.gradients, "kernels", f"{p.name}: {p.gradients_why}")
        y, errors, ran = gradient_errors(module, inputs, compiled)
        # Each partition's (or piece's) training forward and backward ran as
        # libraries.
        self.assertEqual(ran, 2 * sum(len(p.pieces) or 1 for p in report.partitions))
        if last:
            self.assertIsInstance(y.grad_fn, torch.autograd.function.BackwardCFunction)
        step = 2 ** -10 if inputs[0].dtype == torch.bfloat16 else 2 ** -22
        for name, ours, theirs, scale in errors:
            self.assertIsNotNone(ours, f"{name}: no gradient")
            self.assertLessEqual(ours, 2 * theirs + step * scale,
                                 f"{name}: ours {ours}, PyTorch {theirs} (scale {scale})")
        return compiled

    def test_linear_with_bias(self):
        # 37 tokens in [2, 37, H]: a multiple of nothing.
        for dtype in (torch.float32, torch.bfloat16):
            with self.subTest(dtype=dtype):
                m = torch.nn.Linear(64, 96).to(dtype)
                x = torch.randn(2, 37, 64).to(dtype)
                compiled = self.check_gradients(m, (x,))
                part = compiled.explain().partitions[0]
                self.assertEqual(part.backward_ops, ["fusion.matmul"])
                # dx = dy W and dW = dy^T x on the kernels; the bias's column
                # sum in PyTorch, said so.
                self.assertIn("{transpose_lhs}", part.backward_mlir)
                self.assertTrue(any("column sum" in p for p in part.backward_in_pytorch),
                                part.backward_in_pytorch)
                self.assertIn("column sum", str(compiled.explain()))

    def test_linear_without_bias(self):
        m = torch.nn.Linear(64, 48, bias=False).bfloat16()
        compiled = self.check_gradients(m, (torch.randn(37, 64).bfloat16(),))
        self.assertEqual(compiled.explain().partitions[0].backward_in_pytorch, [])

    def test_untransposed_weight(self):
        # addmm with an [in, out] weight (fusion.matmul without transpose_rhs):
        # dx = dy W^T {transpose_rhs}, dW = x^T dy {transpose_lhs}.
        class AddMM(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn(64, 48) / 8)
                self.b = torch.nn.Parameter(torch.randn(48))

            def forward(self, x):
                return torch.addmm(self.b, x, self.w)
        compiled = self.check_gradients(AddMM(), (torch.randn(37, 64),))
        self.assertIn("{transpose_rhs}", compiled.explain().partitions[0].backward_mlir)

    def test_llama_prenorm(self):
        # LlamaRMSNorm with its weight, then q_proj without bias: the forward
        # saves rstd and the norm's output (the weight gradient reads it);
        # the backward is dgrad, wgrad and fusion.rms_norm_grad with dweight.
        for dtype in (torch.float32, torch.bfloat16):
            with self.subTest(dtype=dtype):
                m = randomize_norms(PreNorm().to(dtype))
                x = torch.randn(2, 37, 64).to(dtype)
                compiled = self.check_gradients(m, (x,))
                part = compiled.explain().partitions[0]
                self.assertEqual(part.backward_ops, ["fusion.matmul", "fusion.rms_norm_grad"])
                self.assertEqual(part.backward_in_pytorch, [])
                self.assertTrue(any("rstd" in s for s in part.backward_saves),
                                part.backward_saves)

    def test_t5_layer_ff(self):
        # T5LayerNorm (rstd in float32 times x itself) with its weight, then
        # wi, ReLU, wo and the residual: one partition, which trains in two
        # pieces (the dialect has no op for ReLU's gradient: PyTorch's
        # autograd between them), the first's backward with
        # fusion.rms_norm_grad.
        m = randomize_norms(T5LayerFF(T5Config(d_model=64, d_ff=128, dropout_rate=0.0))
                            .bfloat16())
        compiled = self.check_gradients(m, (torch.randn(2, 37, 64).bfloat16(),))
        part = compiled.explain().partitions[0]
        self.assertEqual([op for op, _ in part.ops],
                         ["rms_norm", "linear", "relu", "linear", "add"])
        self.assertEqual([[op for op, _ in p.ops] for p in part.pieces],
                         [["rms_norm", "linear"], ["linear", "add"]])
        self.assertEqual(part.pieces[0].backward_ops, ["fusion.matmul", "fusion.rms_norm_grad"])
        self.assertIn("backward on the kernels in 2 pieces", str(compiled.explain()))
        self.assertTrue(any(p.startswith("relu: PyTorch's autograd") for p in
                            part.backward_in_pytorch), part.backward_in_pytorch)

    def check_gated_pieces(self, m):
        """A gated MLP's gradients (check_gradients) from its training
        pieces, gate and up's GEMMs and down_proj's, PyTorch's silu and
        product between them; without gradients the call is the one
        inference program."""
        x = torch.randn(2, 37, 64).bfloat16()
        compiled = self.check_gradients(m, (x,))
        part = compiled.explain().partitions[0]
        self.assertEqual([[op for op, _ in p.ops] for p in part.pieces],
                         [["linear", "linear"], ["linear"]])
        before = CompiledPartition.calls
        with torch.no_grad():
            compiled(x)
        self.assertEqual(CompiledPartition.calls, before + 1)

    def test_gated_mlp(self):
        # Llama's MLP: one partition for inference (the gated product one
        # GEMM); for training the pieces gate_proj + up_proj and down_proj,
        # silu and the product between them PyTorch's.
        self.check_gated_pieces(LlamaMLP(llama_config()).bfloat16())

    @unittest.skipIf(PHI3_MISSING, f"needs transformers with Phi-3: {PHI3_MISSING}")
    def test_fused_gate_up_projection(self):
        # Phi-3's MLP: gate_up_proj as two linears over its weight's rows
        # (views), pieces as Llama's; the weight's gradient is the halves'
        # through PyTorch's slices.
        from test_frontend import Phi3Config, Phi3MLP
        self.check_gated_pieces(Phi3MLP(Phi3Config(hidden_size=64, intermediate_size=128))
                                .bfloat16())

    def test_gemma_prenorm(self):
        # GemmaRMSNorm's float32 weight 1 + w: its gradient through the
        # partition's float32 dweight, then PyTorch's add and cast.
        m = randomize_norms(gemma_prenorm().bfloat16())
        compiled = self.check_gradients(m, (torch.randn(2, 37, 64).bfloat16(),))
        part = compiled.explain().partitions[0]
        self.assertEqual(part.backward_ops, ["fusion.matmul", "fusion.rms_norm_grad"])

    def test_float32_layer_norm(self):
        # The LayerNorm of x in float32 with float32 copies of its weight and
        # bias: fusion.layer_norm_grad, their gradients through PyTorch's casts.
        m = randomize_norms(float32_layer_norm_prenorm().bfloat16())
        compiled = self.check_gradients(m, (torch.randn(2, 37, 64).bfloat16(),))
        part = compiled.explain().partitions[0]
        self.assertIn("fusion.layer_norm_grad", part.backward_ops)

    def test_cohere_prenorm(self):
        # CohereLayerNorm written out: fusion.layer_norm_grad with dweight,
        # the weight's float32 copy's gradient through PyTorch's cast.
        m = randomize_norms(cohere_prenorm().bfloat16())
        compiled = self.check_gradients(m, (torch.randn(2, 37, 64).bfloat16(),))
        self.assertIn("fusion.layer_norm_grad", compiled.explain().partitions[0].backward_ops)

    def test_bert_postnorm(self):
        # BERT's post-norm: dense with its bias, the residual, LayerNorm with
        # weight and bias: fusion.layer_norm_grad {with_bias_grad}, the
        # residual's gradient passed on, the linear's dgrad and wgrad.
        cfg = BertConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4)
        m = randomize_norms(BertSelfOutput(cfg).bfloat16().eval())
        x, r = torch.randn(2, 37, 64).bfloat16(), torch.randn(2, 37, 64).bfloat16()
        compiled = self.check_gradients(m, (x, r))
        part = compiled.explain().partitions[0]
        self.assertEqual([op for op, _ in part.ops], ["linear", "add", "layer_norm"])
        self.assertEqual(part.backward_ops, ["fusion.layer_norm_grad", "fusion.matmul"])
        self.assertIn("{with_bias_grad}", part.backward_mlir)

    def test_sandwich_post_norm(self):
        # OLMo 2's attention output, residual + post_attention_layernorm(
        # o_proj(a)): the add after the norm in the partition (its forward a
        # post_residual), its gradient passed on to the residual as is, the
        # norm's gradient with dweight, the linear's dgrad and wgrad.
        from transformers.models.olmo2.modeling_olmo2 import Olmo2RMSNorm

        class PostNorm(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.o_proj = torch.nn.Linear(64, 64, bias=False)
                self.norm = Olmo2RMSNorm(64, eps=1e-6)

            def forward(self, a, x):
                return x + self.norm(self.o_proj(a))

        m = randomize_norms(PostNorm().bfloat16())
        a, x = torch.randn(2, 37, 64).bfloat16(), torch.randn(2, 37, 64).bfloat16()
        compiled = self.check_gradients(m, (a, x))
        part = compiled.explain().partitions[0]
        self.assertEqual([op for op, _ in part.ops], ["linear", "rms_norm", "add"])
        self.assertIn("fusion.rms_norm_grad", part.backward_ops)

    def test_linear_norm_linear_folds_the_norm_weight(self):
        # Issue 16's training step as a module: fc1 -> LlamaRMSNorm (weight) ->
        # fc2. The training forward moves the norm's weight g into fc2
        # (x_hat (W2 diag(g))^T) and saves x_hat alone, not the norm's input
        # and output; the backward scales dW2 by g and reads x_hat in the
        # norm's gradient ({normalized_input}).
        from transformers.models.llama.modeling_llama import LlamaRMSNorm

        class Step(torch.nn.Module):
            def __init__(self, out=96, residual=False, bias=False):
                super().__init__()
                self.fc1 = torch.nn.Linear(48, 64, bias=bias)
                self.norm = LlamaRMSNorm(64, eps=1e-5)
                self.fc2 = torch.nn.Linear(64, out, bias=bias)
                self.residual = residual

            def forward(self, x):
                h = self.fc1(x)
                y = self.fc2(self.norm(h))
                return y + h if self.residual else y

        for dtype in (torch.float32, torch.bfloat16):
            with self.subTest(dtype=dtype):
                m = randomize_norms(Step().to(dtype))
                compiled = self.check_gradients(m, (torch.randn(2, 37, 48).to(dtype),))
                part = compiled.explain().partitions[0]
                self.assertEqual(len(part.backward_saves), 6, part.backward_saves)
                self.assertTrue(any("x_hat" in s for s in part.backward_saves),
                                part.backward_saves)
                self.assertIn("{normalized_input}", part.backward_mlir)
                self.assertEqual(part.backward_ops,
                                 ["fusion.matmul", "fusion.mul", "fusion.rms_norm_grad"])
        # With the linears' biases (fc2's stays its bias: y = x_hat (W2 diag(g))^T
        # + b2; the biases' gradients are PyTorch's column sums).
        m = randomize_norms(Step(bias=True).bfloat16())
        compiled = self.check_gradients(m, (torch.randn(2, 37, 48).bfloat16(),))
        part = compiled.explain().partitions[0]
        self.assertIn("{normalized_input}", part.backward_mlir)
        self.assertTrue(any("x_hat" in s for s in part.backward_saves), part.backward_saves)
        # Not folded: fc2 wider than 2 N (W diag(g) on every call would cost
        # what the fold saves), the norm's input read again.
        for m in (Step(out=160), Step(out=64, residual=True)):
            with self.subTest(folded=False):
                m = randomize_norms(m.bfloat16())
                compiled = self.check_gradients(m, (torch.randn(2, 37, 48).bfloat16(),))
                part = compiled.explain().partitions[0]
                self.assertNotIn("{normalized_input}", part.backward_mlir)
                self.assertFalse(any("x_hat" in s for s in part.backward_saves))

    def test_llama_decoder_layer(self):
        # Several partitions, a norm's output read by three linears (their
        # gradients summed by fusion.add), residuals, and attention between
        # them in PyTorch: the whole layer's gradients.
        m = randomize_norms(DecoderBlock().float())
        x = torch.randn(2, 7, 64)
        compiled = self.check_gradients(m, (x,), partitions=2)
        self.assertIn("fusion.add", compiled.explain().partitions[0].backward_ops)

    def test_fused_qkv_with_rope(self):
        # Phi-3's qkv_proj (rows as views) and GPT-NeoX's query_key_value
        # (each head's rows gathered in PyTorch, with its bias), cut into
        # q, k and v linears whose ropes are fusion.rope in the input norm's
        # partition: the fused weight's gradient comes back through
        # PyTorch's slices and gathers; GPT-J's pairs (separate
        # projections, heads last); the whole layer's gradients.
        from transformers import GPTNeoXConfig
        from transformers.models.gpt_neox.modeling_gpt_neox import (GPTNeoXLayer,
                                                                    GPTNeoXRotaryEmbedding)
        from transformers import GPTJConfig
        from transformers.models.gptj.modeling_gptj import GPTJBlock, GPTJRotaryEmbedding
        from test_frontend import Phi3Config, Phi3DecoderLayer, Phi3RotaryEmbedding
        phi3 = Phi3Config(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                          num_key_value_heads=2, rms_norm_eps=1e-5)
        neox = GPTNeoXConfig(hidden_size=128, num_attention_heads=2, intermediate_size=256,
                             use_parallel_residual=True, hidden_dropout=0.0,
                             attention_dropout=0.0, rotary_pct=0.25)
        gptj = GPTJConfig(n_embd=128, n_head=2, rotary_dim=16, n_inner=256, resid_pdrop=0.0,
                          embd_pdrop=0.0, attn_pdrop=0.0)
        for name, layer, rope, cfg in (("phi3", Phi3DecoderLayer, Phi3RotaryEmbedding, phi3),
                                       ("neox", GPTNeoXLayer, GPTNeoXRotaryEmbedding, neox),
                                       ("gptj", GPTJBlock, GPTJRotaryEmbedding, gptj)):
            with self.subTest(name):
                cfg._attn_implementation = "sdpa"
                torch.manual_seed(0)
                m = randomize_norms(DecoderBlock(layer, rope, cfg).float())
                x = torch.randn(2, 7, cfg.hidden_size)
                compiled = self.check_gradients(m, (x,), partitions=2)
                ops = [op for op, _ in compiled.explain().partitions[0].ops]
                self.assertEqual(ops.count("rope"), 2, ops)
                self.assertEqual(ops.count("linear"), 4 if name == "gptj" else 3, ops)

    def test_needs_input_grad(self):
        # A frozen weight and an input without gradients: the backward
        # computes neither (a program without the dx GEMM), and their .grad
        # stays None; the norm weight still gets its gradient.
        m = randomize_norms(PreNorm().bfloat16())
        x = torch.randn(2, 37, 64).bfloat16()
        compiled = fc.compile(m, (x,), target="cpu")
        part = next(mod for mod in compiled.graph_module.modules()
                    if isinstance(mod, CompiledPartition))
        m.q_proj.weight.requires_grad_(False)
        compiled(x).float().square().sum().backward()
        self.assertIsNone(m.q_proj.weight.grad)
        self.assertIsNotNone(m.input_layernorm.weight.grad)
        needs = (False, True, False)  # x, the norm's weight, q_proj's weight
        backward, _ = part.gradients.backward_for(needs)
        self.assertEqual(backward.program.mlir.count("fusion.matmul"), 1)  # dn = dy W only
        self.assertEqual(backward.gradients[0], [])
        # The norm's weight gradient against float64.
        exact = copy.deepcopy(m).double()
        exact(x.double()).square().sum().backward()
        theirs = copy.deepcopy(m)
        theirs.input_layernorm.weight.grad = None
        theirs(x).float().square().sum().backward()
        want = exact.input_layernorm.weight.grad
        ours = (m.input_layernorm.weight.grad.double() - want).abs().max().item()
        pytorch = (theirs.input_layernorm.weight.grad.double() - want).abs().max().item()
        self.assertLessEqual(ours, 2 * pytorch + 2 ** -8 * want.abs().max().item())

    def test_no_grad_runs_the_inference_program(self):
        # Without gradients the call is the inference program as before (no
        # statistics, no extra outputs; the program gradients=False
        # compiles); with gradients the training forward returns rstd too.
        m = randomize_norms(PreNorm().bfloat16())
        x = torch.randn(2, 37, 64).bfloat16()
        compiled = fc.compile(m, (x,), target="cpu")
        plain = fc.compile(m, (x,), target="cpu", gradients=False)
        part = next(mod for mod in compiled.graph_module.modules()
                    if isinstance(mod, CompiledPartition))
        self.assertEqual(part.program.mlir, next(
            mod for mod in plain.graph_module.modules()
            if isinstance(mod, CompiledPartition)).program.mlir)
        self.assertNotIn("rstd", part.program.mlir)
        self.assertEqual(len(part.program.outputs), 1)
        self.assertIn("rstd", part.gradients.training.forward.mlir)
        self.assertEqual(len(part.gradients.training.forward.outputs), 3)  # y, rstd, n

        def refuse(*args):
            raise AssertionError("the training forward ran without gradients")
        part.gradients.forward.run = refuse
        part.fallback = None  # a call reaching PyTorch's ops would fail
        before = CompiledPartition.calls
        for context in (torch.no_grad, torch.inference_mode):
            with context():
                y = compiled(x)
            self.assertIsNone(y.grad_fn)
        with torch.no_grad():
            want = plain(x)
        self.assertTrue(torch.equal(y, want))
        self.assertEqual(CompiledPartition.calls, before + 3)  # no_grad, inference_mode, plain

    def test_gradients_false_falls_back_to_pytorch(self):
        m = PreNorm().float()
        x = torch.randn(2, 3, 64, requires_grad=True)
        compiled = fc.compile(m, (x.detach(),), target="cpu", gradients=False)
        self.assertEqual(compiled.explain().partitions[0].gradients, "")
        before = CompiledPartition.calls
        y = compiled(x)
        self.assertEqual(CompiledPartition.calls, before)
        y.sum().backward()
        self.assertTrue(torch.allclose(y, m(x)))

    def test_per_head_norm(self):
        # Qwen3's q_norm and Gemma 3's k_norm order (GemmaRMSNorm): the
        # training forward saves each projection's [tokens, H * D] output and
        # the per-head rstd [tokens, H]; the backward unfolds them into heads
        # for fusion.rms_norm_grad over [?, H, D] and folds dx back.
        for norm in (None, lambda d: GemmaRMSNorm(d, eps=1e-6)):
            with self.subTest(gemma=norm is not None):
                m = randomize_norms(QkNorm(norm=norm, kv=2).bfloat16())
                # (The output is the heads transposed and concatenated, in PyTorch.)
                compiled = self.check_gradients(m, (torch.randn(1, 37, 256).bfloat16(),),
                                                last=False)
                part = compiled.explain().partitions[0]
                # (fusion.add: x's gradients from q_proj and k_proj.)
                self.assertEqual(part.backward_ops,
                                 ["fusion.rms_norm_grad", "fusion.matmul", "fusion.add"])
                self.assertIn(": tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32> -> "
                              "tensor<?x4x64xbf16>, tensor<64xf32>", part.backward_mlir)
                self.assertIn("tensor.expand_shape", part.backward_mlir)

    def test_gdpa(self):
        # HSTU attention alone: fusion.gdpa_grad.
        class Einsum(torch.nn.Module):
            def forward(self, q, k, v):
                s = torch.einsum("bihd,bjhd->bhij", q, k) * 0.125
                return torch.einsum("bhij,bjhd->bihd", torch.nn.functional.silu(s), v)
        q = torch.randn(2, 5, 2, 16)
        k, v = torch.randn(2, 7, 2, 16), torch.randn(2, 7, 2, 24)
        compiled = self.check_gradients(Einsum(), (q, k, v))
        self.assertEqual(compiled.explain().partitions[0].backward_ops, ["fusion.gdpa_grad"])

    def test_norm_attention_block(self):
        # The FlashNormAttention block: the heads reshapes' inverses, the
        # norms' and the attention's gradients in one backward program.
        m = randomize_norms(NormAttentionBlock(2, 16).float())
        q = torch.randn(2, 9, 2, 16)
        k, v = 0.25 * torch.randn(2, 7, 2, 16), torch.randn(2, 7, 2, 16)
        compiled = self.check_gradients(m, (q, k, v))
        part = compiled.explain().partitions[0]
        for op in ("fusion.rms_norm_grad", "fusion.gdpa_grad", "fusion.layer_norm_grad"):
            self.assertIn(op, part.backward_ops)
        # q itself is saved: the backward makes the heads view of it, the
        # training forward does not return (copy) it.
        self.assertIn("q", part.backward_saves)
        self.assertEqual(len([s for s in part.backward_saves if s.startswith("reshape")]), 2,
                         part.backward_saves)  # ln_q and h only

    def test_backward_builds_for_sm90a(self):
        # For the H200: the training forward and the backward programs build
        # into sm_90a libraries here (no GPU needed to build).
        cfg = BertConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4)
        class HSTUAttention(torch.nn.Module):
            # gdpa with keys past 128: the backward kernel's two passes;
            # with heads of 256 (the forward holds 64 keys of them), the
            # backward's column passes.
            def forward(self, q, k, v):
                s = torch.einsum("bihd,bjhd->bhij", q, k) * 0.125
                return torch.einsum("bhij,bjhd->bihd", torch.nn.functional.silu(s), v)
        kv = [torch.randn(2, 200, 2, 64).bfloat16() for _ in range(2)]
        wide_kv = [torch.randn(2, 64, 2, 256).bfloat16() for _ in range(2)]
        cases = [(randomize_norms(PreNorm().bfloat16()), (torch.randn(2, 37, 64).bfloat16(),)),
                 (HSTUAttention(), (torch.randn(2, 37, 2, 64).bfloat16(), *kv)),
                 (HSTUAttention(), (torch.randn(2, 37, 2, 256).bfloat16(), *wide_kv)),
                 (randomize_norms(BertSelfOutput(cfg).bfloat16().eval()),
                  (torch.randn(2, 37, 64).bfloat16(), torch.randn(2, 37, 64).bfloat16())),
                 (torch.nn.Linear(64, 96).bfloat16(), (torch.randn(2, 37, 64).bfloat16(),))]
        for module, inputs in cases:
            with self.subTest(module=type(module).__name__):
                report = fc.build(module, inputs, target="sm_90a", gradients=True)
                part = report.partitions[0]
                self.assertEqual(part.gradients, "kernels", part.gradients_why)
                self.assertEqual(len(part.gradient_libraries), 2)
                for library in part.gradient_libraries:
                    self.assertTrue(os.path.exists(library), library)
                self.assertIn('#fusion.target<"sm_90a">', part.backward_mlir)


if __name__ == "__main__":
    unittest.main()
