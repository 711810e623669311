"""Prints one sm_90a module with the training steps of
bench/layers/gen_layers.py (train_step_{rms,ln}_h{H}: Linear -> RMSNorm with
its weight / LayerNorm with weight and bias -> Linear, forward and backward
given dy, M dynamic) at H = 256, 512, 768, 1024, and the residual blocks
train_step_res_{rms,ln}_h{256,1024} (y = fc2(norm(h)) + h: dy is the norm
gradient's residual), for the regrouped-step lit test
(grad-epilogue-train-step-sm90a.mlir). The same ops as gen_layers.py's
programs, written out here so that the test does not depend on bench/."""
import sys

HS = [int(h) for h in sys.argv[1:]] or [256, 512, 768, 1024]
RES_HS = [256, 1024]


def step(h, norm, skip=False):
    x, w, v, st = (f"tensor<?x{h}xbf16>", f"tensor<{h}x{h}xbf16>",
                   f"tensor<{h}xbf16>", "tensor<?xf32>")
    gf = f"tensor<{h}xf32>"
    if norm == "rms":
        params = f"%g: {v}"
        fwd = (f"%n, %rstd = fusion.rms_norm %h weight(%g : {v}) "
               f"{{epsilon = 1.0e-06 : f32}} : {x} -> {x}, {st}")
        res = f" residual(%dy : {x})" if skip else ""
        bwd = (f"%dh, %dg = fusion.rms_norm_grad %dn, %h, %rstd weight(%g : {v}){res}"
               f" : {x}, {x}, {st} -> {x}, {gf}")
        grads, gtypes = ["%dg"], [gf]
    else:
        params = f"%gamma: {v}, %beta: {v}"
        fwd = (f"%n, %mean, %rstd = fusion.layer_norm %h weight(%gamma : {v}) "
               f"bias(%beta : {v}) {{epsilon = 1.0e-12 : f32}} : {x} -> {x}, {st}, {st}")
        res = f" residual(%dy : {x})" if skip else ""
        bwd = (f"%dh, %dgamma, %dbeta = fusion.layer_norm_grad %dn, %h, %mean, %rstd"
               f" weight(%gamma : {v}){res} {{with_bias_grad}} : {x}, {x}, {st}, {st}"
               f" -> {x}, {gf}, {gf}")
        grads, gtypes = ["%dgamma", "%dbeta"], [gf, gf]
    results = ["%y", "%dx", "%dw1"] + grads + ["%dw2"]
    types = [x, x, w] + gtypes + [w]
    name = f"train_step_res_{norm}_h{h}" if skip else f"train_step_{norm}_h{h}"
    y = ([f"  %y0 = fusion.matmul %n, %w2 {{transpose_rhs}} : {x}, {w} -> {x}",
          f"  %y = fusion.add %y0, %h : {x}"] if skip else
         [f"  %y = fusion.matmul %n, %w2 {{transpose_rhs}} : {x}, {w} -> {x}"])
    return "\n".join([
        f"func.func @{name}(%x: {x}, %w1: {w}, {params}, %w2: {w}, %dy: {x})"
        f" -> ({', '.join(types)}) {{",
        f"  %h = fusion.matmul %x, %w1 {{transpose_rhs}} : {x}, {w} -> {x}",
        f"  {fwd}"] + y + [
        f"  %dn = fusion.matmul %dy, %w2 : {x}, {w} -> {x}",
        f"  %dw2 = fusion.matmul %dy, %n {{transpose_lhs}} : {x}, {x} -> {w}",
        f"  {bwd}",
        f"  %dx = fusion.matmul %dh, %w1 : {x}, {w} -> {x}",
        f"  %dw1 = fusion.matmul %dh, %x {{transpose_lhs}} : {x}, {x} -> {w}",
        f"  return {', '.join(results)} : {', '.join(types)}",
        "}"])


print('module attributes {fusion.target = #fusion.target<"sm_90a">} {')
for h in HS:
    for norm in ("rms", "ln"):
        print(step(h, norm))
for h in RES_HS:
    for norm in ("rms", "ln"):
        print(step(h, norm, skip=True))
print("}")
