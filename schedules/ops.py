"""TE computes for every node that is not fused: one kernel per node, reading and writing memory.

`op_kernel(node, ctx)` returns a KernelSpec: the PrimFunc plus, for each of its parameters, either
a runtime tensor name or a constant (numpy, bound once at compile time). Reductions accumulate
in fp32; fp16 kernels cast back on store.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from tvm import te, tirx, topi

from fusion.core.errors import UnsupportedModelError
from fusion.core.ir import C0, NC1HWC0, Graph, Node, TensorType
from schedules.cpu_epilogue import Epilogue
from schedules.dwsep_te import ACC, activation
from schedules.workload import ceil_div
from schedules.op_spec import KernelSpec, OpContext, _cast, _ph, blocked_bias, blocked_pw_weights  # noqa: F401  (re-exported)
from schedules.ops_vision import vision_kernel
from schedules.cpu_conv import conv_kernel, conv_to_blocked_kernel
from schedules.cpu_dense import dense_kernel


# --- elementwise ------------------------------------------------------------------------------
def _unary_fn(n: Node) -> Callable:
    op = n.op_type
    if op == "Relu":
        return lambda x: activation(x, "relu")
    if op == "Relu6":
        return lambda x: activation(x, "relu6")
    if op == "HardSwish":
        return lambda x: activation(x, "hardswish")
    if op == "Sigmoid":
        return lambda x: tirx.sigmoid(x)
    if op == "HardSigmoid":
        a, b = n.attr("alpha", 0.2), n.attr("beta", 0.5)
        return lambda x: tirx.min(tirx.max(x * tirx.const(a, ACC) + tirx.const(b, ACC),
                                           tirx.const(0, ACC)), tirx.const(1, ACC))
    if op == "Clip":
        lo, hi = n.attr("min", -math.inf), n.attr("max", math.inf)

        def clip(x):
            if lo != -math.inf:
                x = tirx.max(x, tirx.const(lo, ACC))
            if hi != math.inf:
                x = tirx.min(x, tirx.const(hi, ACC))
            return x
        return clip
    if op == "Identity":
        return lambda x: x
    raise KeyError(op)


def _unary(n: Node, ctx: OpContext) -> KernelSpec:
    t = ctx.ttype(n.inputs[0])
    x = _ph(t.shape, ctx.dtype, "x")
    fn = _unary_fn(n)
    y = te.compute(x.shape, lambda *i: _cast(fn(x(*i).astype(ACC)), ctx.dtype), name="y")
    return KernelSpec(n.name, te.create_prim_func([x, y]), (n.inputs[0],), t.shape, ctx.dtype)


def _binary(n: Node, ctx: OpContext) -> KernelSpec:
    params, phs = [], []
    for i, t in enumerate(n.inputs):
        if ctx.graph.is_constant(t):
            arr = ctx.const(t, ACC)
            params.append(arr)
            phs.append(_ph(arr.shape, ACC, f"c{i}"))
        else:
            params.append(t)
            phs.append(_ph(ctx.ttype(t).shape, ctx.dtype, f"x{i}"))
    if n.op_type == "Div" and not isinstance(params[1], np.ndarray):
        raise UnsupportedModelError(f"Div '{n.name}' needs a constant divisor")
    a32 = te.compute(phs[0].shape, lambda *i: phs[0](*i).astype(ACC), name="a32")
    b32 = te.compute(phs[1].shape, lambda *i: phs[1](*i).astype(ACC), name="b32")
    fn = {"Add": topi.add, "Mul": topi.multiply, "Sub": topi.subtract, "Div": topi.divide}[n.op_type]
    r = fn(a32, b32)
    y = te.compute(r.shape, lambda *i: r(*i).astype(ctx.dtype), name="y")
    out = ctx.ttype(n.outputs[0])
    return KernelSpec(n.name, te.create_prim_func(phs + [y]), tuple(params), out.shape, ctx.dtype)


# --- convolution ------------------------------------------------------------------------------
def _conv_nchw(n: Node, ctx: OpContext) -> KernelSpec:
    xt = ctx.ttype(n.inputs[0])
    N, C, H, W = xt.shape
    w = ctx.const(n.inputs[1])
    O, Cg, KH, KW = w.shape
    g = n.attr("group", 1)
    sh, sw = n.attr("strides", (1, 1))
    dh, dw_ = n.attr("dilations", (1, 1))
    pt, pl, pb, pr = n.attr("pads", (0, 0, 0, 0))
    OH = (H + pt + pb - dh * (KH - 1) - 1) // sh + 1
    OW = (W + pl + pr - dw_ * (KW - 1) - 1) // sw + 1
    bias = ctx.const(n.inputs[2], ACC) if len(n.inputs) > 2 and n.inputs[2] else np.zeros(O, np.float32)
    X = _ph(xt.shape, ctx.dtype, "x")
    Wt = _ph(w.shape, ctx.dtype, "w")
    B = _ph(bias.shape, ACC, "b")
    pad = te.compute((N, C, H + pt + pb, W + pl + pr), lambda b, c, i, j: tirx.if_then_else(
        tirx.all(i >= pt, i < H + pt, j >= pl, j < W + pl), X[b, c, i - pt, j - pl], tirx.const(0, ctx.dtype)),
        name="pad")
    rc = te.reduce_axis((0, Cg), name="rc")
    rh = te.reduce_axis((0, KH), name="rh")
    rw = te.reduce_axis((0, KW), name="rw")
    opg = O // g
    conv = te.compute((N, O, OH, OW), lambda b, o, i, j: te.sum(
        pad[b, (o // opg) * Cg + rc, i * sh + rh * dh, j * sw + rw * dw_].astype(ACC) * Wt[o, rc, rh, rw].astype(ACC),
        axis=[rc, rh, rw]), name="conv")
    epi = Epilogue.of(n)
    R = epi.placeholders((N, O, OH, OW), ctx.dtype)
    y = te.compute((N, O, OH, OW), lambda b, o, i, j: epi.value(conv[b, o, i, j] + B[o], (b, o, i, j), R)
                   .astype(ctx.dtype), name="y")
    return KernelSpec(n.name, te.create_prim_func([X, Wt, B, *R, y]), (n.inputs[0], w, bias, *epi.params()),
                      (N, O, OH, OW), ctx.dtype, schedule="conv")


def _conv1x1_blocked(n: Node, ctx: OpContext) -> KernelSpec:
    xt = ctx.ttype(n.inputs[0])
    N, C1, H, W, _ = xt.shape
    w = np.asarray(ctx.graph.constants[n.inputs[1]], np.float32)
    O = w.shape[0]
    wb = blocked_pw_weights(w, ctx.dtype)
    b = ctx.const(n.inputs[2], ACC) if len(n.inputs) > 2 and n.inputs[2] else np.zeros(O, np.float32)
    bb = blocked_bias(b, O)
    X = _ph(xt.shape, ctx.dtype, "x")
    Wt = _ph(wb.shape, ctx.dtype, "w")
    B = _ph(bb.shape, ACC, "b")
    rc1 = te.reduce_axis((0, C1), name="rc1")
    rc0 = te.reduce_axis((0, C0), name="rc0")
    CO1 = wb.shape[0]
    acc = te.compute((N, CO1, H, W, C0), lambda b_, o, i, j, k: te.sum(
        X[b_, rc1, i, j, rc0].astype(ACC) * Wt[o, rc1, rc0, k].astype(ACC), axis=[rc1, rc0]), name="conv")
    epi = Epilogue.of(n)
    R = epi.placeholders((N, CO1, H, W, C0), ctx.dtype)
    y = te.compute((N, CO1, H, W, C0), lambda b_, o, i, j, k: epi.value(
        acc[b_, o, i, j, k] + B[o, k], (b_, o, i, j, k), R).astype(ctx.dtype), name="y")
    return KernelSpec(n.name, te.create_prim_func([X, Wt, B, *R, y]), (n.inputs[0], wb, bb, *epi.params()),
                      (N, CO1, H, W, C0), ctx.dtype, schedule="conv_blocked")


def _batchnorm(n: Node, ctx: OpContext) -> KernelSpec:
    xt = ctx.ttype(n.inputs[0])
    scale, beta, mean, var = (np.asarray(ctx.graph.constants[t], np.float64) for t in n.inputs[1:5])
    k = scale / np.sqrt(var + n.attr("epsilon", 1e-5))
    s, t = k.astype(np.float32), (beta - mean * k).astype(np.float32)
    X = _ph(xt.shape, ctx.dtype, "x")
    S, T = _ph(s.shape, ACC, "s"), _ph(t.shape, ACC, "t")
    y = te.compute(xt.shape, lambda b, c, *r: (X(b, c, *r).astype(ACC) * S[c] + T[c]).astype(ctx.dtype), name="y")
    return KernelSpec(n.name, te.create_prim_func([X, S, T, y]), (n.inputs[0], s, t), xt.shape, ctx.dtype)


# --- pooling, reshape, dense ------------------------------------------------------------------
def _spatial_mean(n: Node, ctx: OpContext) -> KernelSpec:
    xt = ctx.ttype(n.inputs[0])
    N, C, H, W = xt.shape
    out = ctx.ttype(n.outputs[0]).shape
    X = _ph(xt.shape, ctx.dtype, "x")
    rh, rw = te.reduce_axis((0, H), name="rh"), te.reduce_axis((0, W), name="rw")
    s = te.compute((N, C), lambda b, c: te.sum(X[b, c, rh, rw].astype(ACC), axis=[rh, rw]), name="sum")
    inv = 1.0 / (H * W)
    y = te.compute(out, lambda b, c, *_: (s[b, c] * tirx.const(inv, ACC)).astype(ctx.dtype), name="y")
    return KernelSpec(n.name, te.create_prim_func([X, y]), (n.inputs[0],), tuple(out), ctx.dtype)


def _reshape(n: Node, ctx: OpContext) -> KernelSpec:
    xt = ctx.ttype(n.inputs[0])
    out = tuple(ctx.ttype(n.outputs[0]).shape)
    X = _ph(xt.shape, ctx.dtype, "x")
    y = topi.reshape(X, out)
    return KernelSpec(n.name, te.create_prim_func([X, y]), (n.inputs[0],), out, ctx.dtype)


def _dense(n: Node, ctx: OpContext) -> KernelSpec:
    at = ctx.ttype(n.inputs[0])
    b_const = ctx.graph.is_constant(n.inputs[1])
    bt = ctx.const(n.inputs[1]) if b_const else None
    A = _ph(at.shape, ctx.dtype, "a")
    Bp = _ph(bt.shape if b_const else ctx.ttype(n.inputs[1]).shape, ctx.dtype, "b")
    out = tuple(ctx.ttype(n.outputs[0]).shape)
    if n.op_type == "MatMul":
        if len(at.shape) != 2 or len(Bp.shape) != 2:
            raise UnsupportedModelError(f"MatMul '{n.name}': only 2-D operands are supported")
        ta, tb, alpha, beta = 0, 0, 1.0, 0.0
    else:
        ta, tb = n.attr("transA", 0), n.attr("transB", 0)
        alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    M, K = (at.shape[1], at.shape[0]) if ta else at.shape
    Nn = int(Bp.shape[0] if tb else Bp.shape[1])
    M, K = int(M), int(K)
    rk = te.reduce_axis((0, K), name="rk")
    aval = (lambda i, k: A[k, i]) if ta else (lambda i, k: A[i, k])
    bval = (lambda k, j: Bp[j, k]) if tb else (lambda k, j: Bp[k, j])
    mm = te.compute((M, Nn), lambda i, j: te.sum(aval(i, rk).astype(ACC) * bval(rk, j).astype(ACC), axis=rk),
                    name="mm")
    params, phs = [n.inputs[0], bt if b_const else n.inputs[1]], [A, Bp]
    has_c = n.op_type == "Gemm" and len(n.inputs) > 2 and n.inputs[2]
    if has_c:
        c = ctx.const(n.inputs[2], ACC) if ctx.graph.is_constant(n.inputs[2]) else None
        if c is None:
            raise UnsupportedModelError(f"Gemm '{n.name}': non-constant C is not supported")
        c = np.broadcast_to(c, (M, Nn)).copy()
        Cp = _ph(c.shape, ACC, "c")
        params.append(c)
        phs.append(Cp)
        y = te.compute((M, Nn), lambda i, j: (mm[i, j] * tirx.const(alpha, ACC)
                                              + Cp[i, j] * tirx.const(beta, ACC)).astype(ctx.dtype), name="y")
    else:
        y = te.compute((M, Nn), lambda i, j: (mm[i, j] * tirx.const(alpha, ACC)).astype(ctx.dtype), name="y")
    return KernelSpec(n.name, te.create_prim_func(phs + [y]), tuple(params), out, ctx.dtype, schedule="dense")


# --- layout conversion ------------------------------------------------------------------------
def _to_blocked(n: Node, ctx: OpContext) -> KernelSpec:
    xt = ctx.ttype(n.inputs[0])
    N, C, H, W = xt.shape
    out = ctx.ttype(n.outputs[0]).shape
    X = _ph(xt.shape, ctx.dtype, "x")
    y = te.compute(out, lambda b, c1, i, j, c0: tirx.if_then_else(
        c1 * C0 + c0 < C, X[b, tirx.min(c1 * C0 + c0, C - 1), i, j], tirx.const(0, ctx.dtype)), name="y")
    return KernelSpec(n.name, te.create_prim_func([X, y]), (n.inputs[0],), tuple(out), ctx.dtype, "layout")


def _to_plain(n: Node, ctx: OpContext) -> KernelSpec:
    xt = ctx.ttype(n.inputs[0])
    out = ctx.ttype(n.outputs[0]).shape
    X = _ph(xt.shape, ctx.dtype, "x")
    y = te.compute(out, lambda b, c, i, j: X[b, c // C0, i, j, c % C0], name="y")
    return KernelSpec(n.name, te.create_prim_func([X, y]), (n.inputs[0],), tuple(out), ctx.dtype, "layout")


def op_kernel(n: Node, ctx: OpContext) -> KernelSpec:

    if (spec := vision_kernel(n, ctx)) is not None:
        return spec
    op = n.op_type
    blocked = ctx.ttype(n.inputs[0]).layout == NC1HWC0 if n.inputs else False
    if op == "Conv":
        if blocked:
            return _conv1x1_blocked(n, ctx)
        if ctx.ttype(n.outputs[0]).layout == NC1HWC0:   # passes/stem_layout.py
            return conv_to_blocked_kernel(n, ctx)
        return conv_kernel(n, ctx) or _conv_nchw(n, ctx)
    if op in ("Relu", "Relu6", "HardSwish", "Sigmoid", "HardSigmoid", "Clip", "Identity"):
        return _unary(n, ctx)
    if op in ("Add", "Mul", "Sub", "Div"):
        return _binary(n, ctx)
    if op == "BatchNormalization":
        return _batchnorm(n, ctx)
    if op in ("GlobalAveragePool", "ReduceMean"):
        return _spatial_mean(n, ctx)
    if op in ("Flatten", "Reshape"):
        return _reshape(n, ctx)
    if op in ("Gemm", "MatMul"):
        return dense_kernel(n, ctx) or _dense(n, ctx)
    if op == "ToNC1HWC0":
        return _to_blocked(n, ctx)
    if op == "ToNCHW":
        return _to_plain(n, ctx)
    raise UnsupportedModelError(f"no kernel for operator '{op}' (node '{n.name}')")
