#!/usr/bin/env python3
"""CPU cross-check, no GPU needed: each layer program of gen_layers.py, made
static at a small shape, runs in fusion-runner (the dialect's reference
semantics, convert-fusion-to-linalg), and its printed inputs and results go
through layers_ref's nn.Module in float64 (the training steps: autograd of
it) and the error check the GPU tests use. Catches a reference that does not
compute what the program says (argument order, W's layout, epsilon,
broadcasting, the order of the gradients). The norm gradients (with and
without a residual gradient) are called from a wrapper that computes the
statistics their forward would have saved. Needs torch (CPU). Exits 1 when
a check fails.

    python3 bench/layers/check_ref_cpu.py [--runner build/bin/fusion-runner] [--m 9] [--h 64]
"""
import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_layers  # noqa: E402

KINDS = {
    "llama_prenorm": lambda h: gen_layers.llama_prenorm(h),
    "llama_prenorm_mulweight": lambda h: gen_layers.llama_prenorm(h, mul_weight=True),
    "qwen3_q_norm": lambda h: gen_layers.qwen3_q_norm(h, d=h // 4),
    "bert_postnorm": lambda h: gen_layers.bert_postnorm(h),
    "bert_postnorm_addbias": lambda h: gen_layers.bert_postnorm(h, add_bias=True),
    "ln_prenorm": gen_layers.ln_prenorm,
    "llama_o_proj": gen_layers.linear_residual,
    "gpt2_c_proj": lambda h: gen_layers.linear_residual(h, bias=True),
    "neox_parallel": gen_layers.neox_parallel,
    "olmo2_post": gen_layers.olmo2_post,
    "llama_mlp": lambda h: gen_layers.llama_mlp(h, inter=h * 3 // 2),
    "gpt2_mlp": gen_layers.gpt2_mlp,
    "gate_up": lambda h: gen_layers.gate_up(h, inter=2 * h),
    "rms_norm": gen_layers.rms_norm,
    "layer_norm": gen_layers.layer_norm,
    "add_rowbias": lambda h: gen_layers.elementwise("add_rowbias", h),
    "add": lambda h: gen_layers.elementwise("add", h),
    "mul_col": lambda h: gen_layers.elementwise("mul_col", h),
    # (heads of 128 and 256: 256 columns whatever --h is)
    "rope": lambda h: gen_layers.rope("rope", 256),
    "rope_neox": lambda h: gen_layers.rope("rope_neox", 256),
    "rope_gptj": lambda h: gen_layers.rope("rope_gptj", 256),
    "llama_q_rope": lambda h: gen_layers.q_rope("llama_q_rope", 256),
    "neox_q_rope": lambda h: gen_layers.q_rope("neox_q_rope", 256),
    "gptj_q_rope": lambda h: gen_layers.q_rope("gptj_q_rope", 256),
    "llama_q_rope_pos": lambda h: gen_layers.q_rope("llama_q_rope", 256, positions=3),
    "linear_wgrad": gen_layers.linear_wgrad,
    "train_step_rms": lambda h: gen_layers.train_step(h, "rms"),
    "train_step_ln": lambda h: gen_layers.train_step(h, "ln"),
    "train_step_res_rms": lambda h: gen_layers.train_step(h, "rms", skip=True),
    "train_step_res_ln": lambda h: gen_layers.train_step(h, "ln", skip=True),
    "rms_norm_grad": gen_layers.rms_norm_grad,
    "layer_norm_grad": gen_layers.layer_norm_grad,
    "rms_norm_grad_res": gen_layers.rms_norm_grad_res,
    "layer_norm_grad_res": gen_layers.layer_norm_grad_res,
    "layer_norm_grad_res32": lambda h: gen_layers.layer_norm_grad_res(h, "f32"),
}
# The training steps also as fusion-fuse rewrites them with backward
# regrouping (fusion-compile --regroup-backward, and with
# --no-regroup-row-dot): the RMSNorm gradient's row sum from the next layer's
# output (row_dot) or exchanged, the fused ops in their reference semantics,
# against the same float64 autograd, so the rewrite's bf16 error is the GPU
# tests' bar too.
FUSED = {
    "regrouped": "--fusion-fuse=regroup-backward=true",
    "regrouped-exchange": "--fusion-fuse=regroup-backward=true regroup-row-dot=false",
}


def norm_grad_wrapper(prog, m):
    """A norm-gradient program takes the statistics its forward saved; the
    runner's random inputs would not be those. This wraps it: a function of
    dy, x, the weight (and dr) that computes the statistics with the
    forward norm (same epsilon) and calls the program. Returns (the module's
    text, the wrapper's name, its argument names in order)."""
    h, name = prog["h"], prog["name"]
    layer = prog["kind"].startswith("layer_norm_grad")
    spec = {s["name"]: s for s in prog["inputs"]}
    ty = lambda n: gen_layers.ty([m if d == "M" else d for d in spec[n]["shape"]],  # noqa: E731
                                 spec[n]["dtype"])
    args = ["dy", "x", "gamma" if layer else "g"] + (["dr"] if "dr" in spec else [])
    x, stat = ty("x"), gen_layers.ty((m,), "f32")
    results = ", ".join(gen_layers.ty([m if d == "M" else d for d in o["shape"]], o["dtype"])
                        for o in prog["outputs"])
    if layer:
        forward = (f"%y, %mean, %rstd = fusion.layer_norm %x {{epsilon = {prog['eps']:e} : f32}}"
                   f" : {x} -> {x}, {stat}, {stat}")
        call_args = ["dy", "x", "mean", "rstd"] + args[2:]
        call_types = [x, x, stat, stat] + [ty(a) for a in args[2:]]
    else:
        forward = (f"%y, %rstd = fusion.rms_norm %x {{epsilon = {prog['eps']:e} : f32}}"
                   f" : {x} -> {x}, {stat}")
        call_args = ["dy", "x", "rstd"] + args[2:]
        call_types = [x, x, stat] + [ty(a) for a in args[2:]]
    sig = ", ".join(f"%{a}: {ty(a)}" for a in args)
    wrapper = (f"func.func @{name}_wrapped({sig}) -> ({results}) {{\n"
               f"  {forward}\n"
               f"  %r:{len(prog['outputs'])} = func.call @{name}("
               + ", ".join(f"%{a}" for a in call_args) + f") : ({', '.join(call_types)}) -> ({results})\n"
               f"  return " + ", ".join(f"%r#{i}" for i in range(len(prog["outputs"])))
               + f" : {results}\n}}\n")
    text = prog["mlir"].replace("tensor<?x", f"tensor<{m}x").replace("tensor<?xf32>", f"tensor<{m}xf32>")
    body = text.rstrip()
    assert body.endswith("}")
    return body[:-1] + wrapper + "}\n", f"{name}_wrapped", args


def check_norm_grad(prog, x, y, lr, torch):
    """Each output (dx, then the parameter gradients) against autograd in
    float64 within 2x PyTorch's bf16 error + the floor. Returns (ok,
    report)."""
    want = lr.norm_grad_reference(prog, x, torch.float64)
    theirs = lr.norm_grad_reference(prog, x, torch.bfloat16)
    ok, report = True, []
    for (name, got), ref, t in zip(y.items(), want, theirs):
        ours, bf16 = lr.rel_error(got, ref), lr.rel_error(t, ref)
        good = ours <= 2 * bf16 + lr.FLOOR
        ok &= good
        report.append(f"{name} {ours:.1e} ({bf16:.1e}){'' if good else ' FAIL'}")
    return ok, ", ".join(report)


def check_outputs(prog, x, y, lr, torch):
    """Programs with several outputs (the weight gradient, the training
    steps): each output against float64 within 2x PyTorch's bf16 error + the
    floor. Returns (ok, report)."""
    if prog["kind"] == "linear_wgrad":
        want = [x["dy"].double().T @ x["x"].double()]
        theirs = [(x["dy"].T @ x["x"]).double()]
    else:
        norm, h, eps = lr.train_norm(prog), prog["h"], prog["eps"]
        skip = lr.train_skip(prog)
        want = lr.train_reference(x, h, eps, torch.float64, norm, skip)
        theirs = lr.train_reference(x, h, eps, torch.bfloat16, norm, skip)
    ok, report = True, []
    for (name, got), ref, t in zip(y.items(), want, theirs):
        ours, bf16 = lr.rel_error(got, ref), lr.rel_error(t, ref)
        good = ours <= 2 * bf16 + lr.FLOOR
        ok &= good
        report.append(f"{name} {ours:.1e} ({bf16:.1e}){'' if good else ' FAIL'}")
    return ok, ", ".join(report)


def parse_values(text, what):
    """{index: nested list} of the runner's 'input i: tensor<...> = [...]'
    blocks (one line, or several for larger tensors, then '  min=...')."""
    out = {}
    for match in re.finditer(rf"^{what} (\d+): tensor<[^>]*> =(.*?)\n\s+min=", text,
                             re.DOTALL | re.MULTILINE):
        values = re.sub(r"-?\b(nan|inf)\b", "None", " ".join(match[2].split()))
        out[int(match[1])] = ast.literal_eval(values)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runner", default=os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                     "build", "bin", "fusion-runner"))
    p.add_argument("--m", type=int, default=9)
    p.add_argument("--h", type=int, default=64)
    p.add_argument("--opt", default=None, help="fusion-opt (default: beside the runner)")
    a = p.parse_args()
    opt = a.opt or os.path.join(os.path.dirname(a.runner), "fusion-opt")
    try:
        import torch
    except ImportError as error:
        # CTest (python/CMakeLists.txt) counts 77 as skipped; CI requires torch.
        print(f"check_ref_cpu: torch is not importable ({error})")
        return 1 if os.environ.get("FUSION_TEST_REQUIRE_TORCH") == "1" else 77
    import layers_ref as lr
    failed = 0
    checks = [(kind, make, None) for kind, make in KINDS.items()]
    checks += [(f"{kind} {variant}", KINDS[kind], flags) for kind in KINDS
               if kind.startswith("train_step") for variant, flags in FUSED.items()]
    # The MLPs as fusion-fuse rewrites them (the activation in the first
    # GEMM's epilogue; Llama's gate, up and product one GEMM).
    checks += [(f"{kind} fused", KINDS[kind], "--fusion-fuse") for kind in ("llama_mlp", "gpt2_mlp")]
    # The projections' rotary embedding in the GEMM's epilogue.
    checks += [(f"{kind} fused", KINDS[kind], "--fusion-fuse")
               for kind in ("llama_q_rope", "neox_q_rope", "gptj_q_rope", "llama_q_rope_pos")]
    for kind, make, fuse in checks:
        prog = make(a.h)
        # (The heads view's dynamic token count, made static with the rest.)
        text = prog["mlir"].replace("tensor<?x", f"tensor<{a.m}x").replace(
            "output_shape [%m,", f"output_shape [{a.m},")
        if fuse:
            rewrite = subprocess.run([opt, "-", fuse], input=text, capture_output=True,
                                     text=True)
            if rewrite.returncode:
                print(f"{kind}: fusion-opt {fuse} failed:\n{rewrite.stderr[-2000:]}")
                failed += 1
                continue
            text = rewrite.stdout
            # The plain steps are the row dot's cases (LayerNorm's with its
            # shift and sum vectors): make sure it is the form checked.
            want = {"train_step_rms regrouped": "row_dot(",
                    "train_step_ln regrouped": "row_dot_sum(",
                    "llama_mlp fused": " up(",
                    "gpt2_mlp fused": "activation = #fusion.activation<gelu_tanh>",
                    "llama_q_rope fused": " rope(", "neox_q_rope fused": " rope(",
                    "gptj_q_rope fused": " rope(", "llama_q_rope_pos fused": " rope("}.get(kind)
            if want and want not in text:
                print(f"{kind}: fusion-fuse formed no {want.strip()}")
                failed += 1
                continue
        entry, arg_specs = prog["name"], prog["inputs"]
        if "norm_grad" in kind:
            text, entry, names = norm_grad_wrapper(prog, a.m)
            arg_specs = [next(s for s in prog["inputs"] if s["name"] == n) for n in names]
        with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
            f.write(text)
            f.flush()
            run = subprocess.run([a.runner, f.name, "-e", entry, "--print",
                                  "--print-inputs"], capture_output=True, text=True)
        if run.returncode:
            print(f"{kind}: fusion-runner failed:\n{run.stderr[-2000:]}")
            failed += 1
            continue
        inputs, results = parse_values(run.stdout, "input"), parse_values(run.stdout, "result")
        x = {spec["name"]: torch.tensor(inputs[i], dtype=lr.DTYPES[spec["dtype"]])
             for i, spec in enumerate(arg_specs)}
        y = {spec["name"]: torch.tensor(results[i], dtype=lr.DTYPES[spec["dtype"]])
             for i, spec in enumerate(prog["outputs"])}
        if "norm_grad" in kind:
            ok, report = check_norm_grad(prog, x, y, lr, torch)
            print(f"{kind:24} {report}: {'ok' if ok else 'FAIL'}")
            failed += not ok
            continue
        if len(prog["outputs"]) > 1 and prog["kind"] not in ("rms_norm", "layer_norm") \
                or prog["kind"] == "linear_wgrad":
            ok, report = check_outputs(prog, x, y, lr, torch)
            print(f"{kind:24} {report}: {'ok' if ok else 'FAIL'}")
            failed += not ok
            continue
        res = lr.check(prog, x, y)
        ref64 = lr.reference(prog, x, torch.float64)["y"]
        max_abs = (y["y"].double() - ref64).abs().max().item()
        print(f"{kind:24} rel err {res['rel_err']:.2e} (torch bf16 {res['torch_bf16_rel_err']:.2e}), "
              f"max abs {max_abs:.2e}: {'ok' if res['ok'] else 'FAIL ' + res['why']}")
        failed += not res["ok"]
    print(f"check_ref_cpu: {len(checks) - failed} ok, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
