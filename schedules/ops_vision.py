"""TE computes for the vision operators outside the fused chains (NCHW / plain layout): pooling,
Resize, ConvTranspose, Pad, Softmax/LogSoftmax, reductions, element-wise math and batched MatMul.
Arithmetic runs in fp32 (ACC) and is cast to the activation dtype on store, like schedules/ops.py.

`vision_kernel(node, ctx)` returns a KernelSpec, or None for operators handled elsewhere.
"""

from __future__ import annotations

import math

import numpy as np
from tvm import te, tirx

from fusion.core.errors import UnsupportedModelError
from fusion.core.ir import NC1HWC0, Node
from schedules import ops_index, ops_shape
from schedules.blocked_ops import BLOCKED_VISION_OPS
from schedules.dwsep_te import ACC
from schedules.op_spec import KernelSpec, OpContext, _ph, _reduce_over
from schedules.ops_shape import _out_shape, _spec, bcast_index, operand
from schedules.workload import ceil_div


def _f(v: float):
    return tirx.const(v, ACC)


def _q(text: str) -> str:
    """A model-supplied name, quoted, with control characters escaped (errors are one line)."""
    return "'" + "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text)) + "'"


def _clamp(i, hi: int):
    return tirx.min(tirx.max(i, 0), hi - 1)


# --- element-wise -----------------------------------------------------------------------------
def _gelu(n: Node):
    if n.attr("approximate", "none") == "tanh":
        k = math.sqrt(2 / math.pi)
        return lambda x: _f(0.5) * x * (_f(1) + tirx.tanh(_f(k) * (x + _f(0.044715) * x * x * x)))
    return lambda x: _f(0.5) * x * (_f(1) + tirx.erf(x * _f(1 / math.sqrt(2))))


def _unary_fn(n: Node):
    alpha = n.attr("alpha", 0.0)
    table = {
        "Exp": tirx.exp, "Log": tirx.log, "Sqrt": tirx.sqrt, "Tanh": tirx.tanh, "Erf": tirx.erf,
        "Abs": tirx.abs, "Neg": lambda x: -x, "Reciprocal": lambda x: _f(1) / x,
        "Floor": tirx.floor, "Ceil": tirx.ceil,
        # log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
        "Softplus": lambda x: tirx.max(x, _f(0)) + tirx.log1p(tirx.exp(-tirx.abs(x))),
        "LeakyRelu": lambda x: tirx.Select(x < _f(0), x * _f(alpha), x),
        "Elu": lambda x: tirx.Select(x < _f(0), _f(alpha) * (tirx.exp(x) - _f(1)), x),
    }
    if n.op_type == "Gelu":
        return _gelu(n)
    return table[n.op_type]


def unary(n: Node, ctx: OpContext) -> KernelSpec:
    X = _ph(ctx.ttype(n.inputs[0]).shape, ctx.dtype, "x")
    fn = _unary_fn(n)
    y = te.compute(X.shape, lambda *i: fn(X(*i).astype(ACC)).astype(ctx.dtype), name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


_BINARY = {
    "Div": lambda a, b: a / b,
    "Pow": tirx.power,
    "Min": tirx.min,
    "Max": tirx.max,
    "PRelu": lambda a, b: tirx.Select(a < _f(0), a * b, a),
}


def binary(n: Node, ctx: OpContext) -> KernelSpec:
    params, phs = zip(*(operand(ctx, t, f"x{i}") for i, t in enumerate(n.inputs)))
    a, b = phs
    fn = _BINARY[n.op_type]
    y = te.compute(_out_shape(n, ctx), lambda *i: fn(a(*bcast_index(a.shape, i)).astype(ACC),
                                                     b(*bcast_index(b.shape, i)).astype(ACC)
                                                     ).astype(ctx.dtype), name="y")
    return _spec(n, ctx, params, phs, y)


# --- pooling ----------------------------------------------------------------------------------
def pool(n: Node, ctx: OpContext) -> KernelSpec:
    """NCHW or NC1HWC0 (the channel block is a trailing parallel axis)."""
    shape = ctx.ttype(n.inputs[0]).shape
    H, W = shape[2], shape[3]
    (kh, kw), (sh, sw), (dh, dw) = n.attr("kernel"), n.attr("strides"), n.attr("dilations")
    pt, pl, pb, pr = n.attr("pads")
    out = _out_shape(n, ctx)
    X = _ph(shape, ctx.dtype, "x")
    rh, rw = te.reduce_axis((0, kh), name="rh"), te.reduce_axis((0, kw), name="rw")

    def window(b, c, i, j, k, pad_value):
        r, q = i * sh + rh * dh - pt, j * sw + rw * dw - pl
        ok = tirx.all(r >= 0, r < H, q >= 0, q < W)
        return tirx.if_then_else(ok, X(b, c, _clamp(r, H), _clamp(q, W), *k).astype(ACC), pad_value)

    if n.op_type == "MaxPool":
        red = te.compute(out, lambda b, c, i, j, *k: te.max(window(b, c, i, j, k, tirx.min_value(ACC)),
                                                           axis=[rh, rw]), name="pool")
        y = te.compute(out, lambda *i: red(*i).astype(ctx.dtype), name="y")
        return _spec(n, ctx, [n.inputs[0]], [X], y)

    red = te.compute(out, lambda b, c, i, j, *k: te.sum(window(b, c, i, j, k, _f(0)), axis=[rh, rw]),
                     name="pool")
    # the divisor counts the window's taps inside the input, or (count_include_pad) inside the
    # padded input: the same count ONNX Runtime uses, dilated windows and ceil_mode included
    lo_h, hi_h, lo_w, hi_w = (-pt, H + pb, -pl, W + pr) if n.attr("count_include_pad", 0) else (0, H, 0, W)
    ch, cw = te.reduce_axis((0, kh), name="ch"), te.reduce_axis((0, kw), name="cw")

    def taps(i, j):
        r, q = i * sh + ch * dh - pt, j * sw + cw * dw - pl
        inside = tirx.all(r >= lo_h, r < hi_h, q >= lo_w, q < hi_w)
        return te.sum(tirx.if_then_else(inside, _f(1), _f(0)), axis=[ch, cw])
    area = te.compute(out[2:4], taps, name="area")
    y = te.compute(out, lambda b, c, i, j, *k: (red(b, c, i, j, *k) / area[i, j]).astype(ctx.dtype), name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


def global_max_pool(n: Node, ctx: OpContext) -> KernelSpec:
    shape = ctx.ttype(n.inputs[0]).shape
    X = _ph(shape, ctx.dtype, "x")
    rh, rw = te.reduce_axis((0, shape[2]), name="rh"), te.reduce_axis((0, shape[3]), name="rw")
    red = te.compute(shape[:2] + shape[4:], lambda b, c, *k: te.max(X(b, c, rh, rw, *k).astype(ACC),
                                                                    axis=[rh, rw]), name="pool")
    y = te.compute(_out_shape(n, ctx), lambda b, c, i, j, *k: red(b, c, *k).astype(ctx.dtype), name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


# --- Resize -----------------------------------------------------------------------------------
def _source_coord(x, coord: str, scale: float, in_len: int, out_len: int):
    xf = x.astype(ACC)
    if coord == "half_pixel" or (coord == "pytorch_half_pixel" and out_len > 1):
        return (xf + _f(0.5)) / _f(scale) - _f(0.5)
    if coord == "pytorch_half_pixel":
        return _f(0)
    if coord == "asymmetric":
        return xf / _f(scale)
    if coord == "align_corners":
        return _f(0) if out_len == 1 else xf * _f((in_len - 1) / (out_len - 1))
    raise UnsupportedModelError(f"Resize coordinate_transformation_mode {_q(coord)}")


def _nearest(v, mode: str, scale: float):
    if mode == "round_prefer_floor":
        v = tirx.ceil(v - _f(0.5))
    elif mode == "round_prefer_ceil":
        v = tirx.floor(v + _f(0.5))
    elif mode == "floor":
        v = tirx.floor(v)
    elif mode == "ceil" or (mode == "simple" and scale < 1):
        v = tirx.ceil(v)
    else:  # simple, upsampling: truncation toward zero
        v = tirx.Select(v < _f(0), tirx.ceil(v), tirx.floor(v))
    return v.astype("int32")


def resize(n: Node, ctx: OpContext) -> KernelSpec:
    """NCHW or NC1HWC0 (the channel block is a trailing parallel axis)."""
    shape = ctx.ttype(n.inputs[0]).shape
    H, W = shape[2], shape[3]
    out = _out_shape(n, ctx)
    OH, OW = out[2], out[3]
    sh, sw = n.attr("scales")
    coord, mode = n.attr("coord"), n.attr("mode")
    X = _ph(shape, ctx.dtype, "x")
    if mode == "nearest":
        nm = n.attr("nearest_mode")

        def fnear(b, c, i, j, *k):
            r = _clamp(_nearest(_source_coord(i, coord, sh, H, OH), nm, sh), H)
            q = _clamp(_nearest(_source_coord(j, coord, sw, W, OW), nm, sw), W)
            return X(b, c, r, q, *k)
        y = te.compute(out, fnear, name="y")
        return _spec(n, ctx, [n.inputs[0]], [X], y)

    def axis(i, scale, size, out_len):
        v = tirx.min(tirx.max(_source_coord(i, coord, scale, size, out_len), _f(0)), _f(size - 1))
        lo = tirx.floor(v)
        i0 = lo.astype("int32")
        return i0, tirx.min(i0 + 1, size - 1), v - lo

    def flin(b, c, i, j, *k):
        r0, r1, wr = axis(i, sh, H, OH)
        q0, q1, wq = axis(j, sw, W, OW)

        def at(r, q):
            return X(b, c, r, q, *k).astype(ACC)
        top = at(r0, q0) * (_f(1) - wq) + at(r0, q1) * wq
        bot = at(r1, q0) * (_f(1) - wq) + at(r1, q1) * wq
        return (top * (_f(1) - wr) + bot * wr).astype(ctx.dtype)
    y = te.compute(out, flin, name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


# --- ConvTranspose ----------------------------------------------------------------------------
def conv_transpose(n: Node, ctx: OpContext) -> KernelSpec:
    """Gather form: output pixel (i, j) reads input (p, q) where i + pt = p*s + kh*d."""
    N, C, H, W = ctx.ttype(n.inputs[0]).shape
    w = ctx.const(n.inputs[1])
    _, opg, KH, KW = w.shape
    g = n.attr("group", 1)
    cg = C // g
    (sh, sw), (dh, dw) = n.attr("strides"), n.attr("dilations")
    pt, pl, _pb, _pr = n.attr("pads")
    out = _out_shape(n, ctx)
    M = out[1]
    bias = (ctx.const(n.inputs[2], ACC) if len(n.inputs) > 2 and n.inputs[2]
            else np.zeros(M, np.float32))
    X = _ph((N, C, H, W), ctx.dtype, "x")
    Wt = _ph(w.shape, ctx.dtype, "w")
    B = _ph(bias.shape, ACC, "b")
    rc = te.reduce_axis((0, cg), name="rc")
    if (dh, dw) == (1, 1):
        # phase form: output row i only meets the taps kh = (i + pt) mod s + t*s, so the reduction
        # runs over ceil(K/s) taps per axis instead of K with s-1 of every s masked out
        rt, ct = te.reduce_axis((0, ceil_div(KH, sh)), name="rt"), te.reduce_axis((0, ceil_div(KW, sw)), name="ct")

        def fconv(b, o, i, j):
            ci = (o // opg) * cg + rc
            kh, kw = tirx.floormod(i + pt, sh) + rt * sh, tirx.floormod(j + pl, sw) + ct * sw
            p, q = tirx.floordiv(i + pt, sh) - rt, tirx.floordiv(j + pl, sw) - ct
            ok = tirx.all(kh < KH, kw < KW, p >= 0, p < H, q >= 0, q < W)
            xv = X[b, ci, _clamp(p, H), _clamp(q, W)].astype(ACC)
            wv = Wt[ci, o % opg, _clamp(kh, KH), _clamp(kw, KW)].astype(ACC)
            return te.sum(tirx.if_then_else(ok, xv * wv, _f(0)), axis=[rc, rt, ct])
    else:
        rh, rw = te.reduce_axis((0, KH), name="rh"), te.reduce_axis((0, KW), name="rw")

        def fconv(b, o, i, j):
            ci = (o // opg) * cg + rc
            u, v = i + pt - rh * dh, j + pl - rw * dw
            ok = tirx.all(u >= 0, v >= 0, tirx.floormod(u, sh) == 0, tirx.floormod(v, sw) == 0,
                          tirx.floordiv(u, sh) < H, tirx.floordiv(v, sw) < W)
            xv = X[b, ci, _clamp(tirx.floordiv(u, sh), H), _clamp(tirx.floordiv(v, sw), W)]
            return te.sum(tirx.if_then_else(ok, xv.astype(ACC) * Wt[ci, o % opg, rh, rw].astype(ACC), _f(0)),
                          axis=[rc, rh, rw])
    conv = te.compute(out, fconv, name="conv")
    y = te.compute(out, lambda b, o, i, j: (conv[b, o, i, j] + B[o]).astype(ctx.dtype), name="y")
    return KernelSpec(n.name, te.create_prim_func([X, Wt, B, y]), (n.inputs[0], w, bias), out,
                      ctx.dtype)  # generic schedule: the "conv" ones assume a forward conv


# --- Pad --------------------------------------------------------------------------------------
def pad(n: Node, ctx: OpContext) -> KernelSpec:
    shape = ctx.ttype(n.inputs[0]).shape
    rank = len(shape)
    pads, mode, value = n.attr("pads"), n.attr("mode"), n.attr("value", 0.0)
    begin = pads[:rank]
    X = _ph(shape, ctx.dtype, "x")

    def src(k, d):
        if mode == "edge":
            return _clamp(k, d)
        if mode == "reflect":
            k = tirx.Select(k < 0, -k, k)
            return _clamp(tirx.Select(k > d - 1, 2 * (d - 1) - k, k), d)
        return _clamp(k, d)

    def f(*i):
        ks = [i[a] - begin[a] for a in range(rank)]
        v = X(*(src(k, d) for k, d in zip(ks, shape)))
        if mode != "constant":
            return v
        ok = tirx.all(*[tirx.all(k >= 0, k < d) for k, d in zip(ks, shape)]) if rank else True
        return tirx.if_then_else(ok, v, tirx.const(value, ctx.dtype))
    y = te.compute(_out_shape(n, ctx), f, name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


# --- Softmax / reductions ---------------------------------------------------------------------
def softmax(n: Node, ctx: OpContext) -> KernelSpec:
    shape = ctx.ttype(n.inputs[0]).shape
    axes = tuple(n.attr("axes"))
    X = _ph(shape, ctx.dtype, "x")

    def red_idx(i):
        return [0 if a in axes else i[a] for a in range(len(shape))]
    mx = _reduce_over(lambda *i: X(*i).astype(ACC), shape, axes, te.max, "rmax")
    e = te.compute(shape, lambda *i: tirx.exp(X(*i).astype(ACC) - mx(*red_idx(i))), name="e")  # once
    s = _reduce_over(e, shape, axes, te.sum, "rsum")
    if n.op_type == "Softmax":
        def f(*i):
            return (e(*i) / s(*red_idx(i))).astype(ctx.dtype)
    else:
        def f(*i):
            return (X(*i).astype(ACC) - mx(*red_idx(i)) - tirx.log(s(*red_idx(i)))).astype(ctx.dtype)
    y = te.compute(shape, f, name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


def reduce(n: Node, ctx: OpContext) -> KernelSpec:
    shape = ctx.ttype(n.inputs[0]).shape
    axes, keep = tuple(n.attr("axes")), n.attr("keepdims", 1)
    X = _ph(shape, ctx.dtype, "x")
    combine = {"ReduceMax": te.max, "ReduceMin": te.min, "ReduceSum": te.sum, "ReduceMean": te.sum}[n.op_type]
    red = _reduce_over(lambda *i: X(*i).astype(ACC), shape, axes, combine, "red")
    if n.op_type == "ReduceMean":
        inv = 1.0 / math.prod(int(shape[a]) for a in axes)
        total = red
        red = te.compute(total.shape, lambda *i: total(*i) * _f(inv), name="mean")

    def f(*i):
        if keep:
            return red(*i).astype(ctx.dtype)
        it = iter(i)
        return red(*(0 if a in axes else next(it) for a in range(len(shape)))).astype(ctx.dtype)
    y = te.compute(_out_shape(n, ctx), f, name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


def layer_norm(n: Node, ctx: OpContext) -> KernelSpec:
    shape = ctx.ttype(n.inputs[0]).shape
    axes, eps = tuple(n.attr("axes")), n.attr("epsilon", 1e-5)
    inv = 1.0 / math.prod(int(shape[a]) for a in axes)
    X = _ph(shape, ctx.dtype, "x")
    params, phs = [n.inputs[0]], [X]
    for k, t in enumerate(n.inputs[1:]):
        p, ph = operand(ctx, t, f"s{k}")
        params.append(p)
        phs.append(ph)

    def red_idx(i):
        return [0 if a in axes else i[a] for a in range(len(shape))]
    s1 = _reduce_over(lambda *i: X(*i).astype(ACC), shape, axes, te.sum, "rsum")
    mean = te.compute(s1.shape, lambda *i: s1(*i) * _f(inv), name="rmean")
    s2 = _reduce_over(lambda *i: (X(*i).astype(ACC) - mean(*red_idx(i))) * (X(*i).astype(ACC) - mean(*red_idx(i))),
                      shape, axes, te.sum, "rvar")

    def f(*i):
        v = (X(*i).astype(ACC) - mean(*red_idx(i))) / tirx.sqrt(s2(*red_idx(i)) * _f(inv) + _f(eps))
        for ph in phs[1:]:
            tail = i[len(i) - len(ph.shape):] if ph.shape else ()
            term = ph(*[0 if d == 1 else j for d, j in zip(ph.shape, tail)]).astype(ACC)
            v = v * term if ph is phs[1] else v + term
        return v.astype(ctx.dtype)
    y = te.compute(shape, f, name="y")
    return _spec(n, ctx, params, phs, y)


# --- batched MatMul ---------------------------------------------------------------------------
def batch_matmul(n: Node, ctx: OpContext) -> KernelSpec:
    (pa, A), (pb, Bm) = operand(ctx, n.inputs[0], "a"), operand(ctx, n.inputs[1], "b")
    if len(A.shape) < 2 or len(Bm.shape) < 2:
        raise UnsupportedModelError(f"MatMul {_q(n.name)}: 1-D operands with batch dims are not supported")
    out = _out_shape(n, ctx)
    K = int(A.shape[-1])
    rk = te.reduce_axis((0, K), name="rk")

    def f(*i):
        batch, r, c = i[:-2], i[-2], i[-1]
        ai = bcast_index(A.shape[:-2], batch) + [r, rk]
        bi = bcast_index(Bm.shape[:-2], batch) + [rk, c]
        return te.sum(A(*ai).astype(ACC) * Bm(*bi).astype(ACC), axis=rk)
    mm = te.compute(out, f, name="mm")
    y = te.compute(out, lambda *i: mm(*i).astype(ctx.dtype), name="y")
    return _spec(n, ctx, [pa, pb], [A, Bm], y)  # generic: "dense" schedules assume 2-D operands


_KERNELS = {
    "MaxPool": pool, "AveragePool": pool, "GlobalMaxPool": global_max_pool, "Resize": resize,
    "ConvTranspose": conv_transpose, "Pad": pad, "Softmax": softmax, "LogSoftmax": softmax,
    "ReduceMax": reduce, "ReduceMin": reduce, "ReduceSum": reduce, "LayerNormalization": layer_norm,
    **{op: unary for op in ("Exp", "Log", "Sqrt", "Tanh", "Erf", "Abs", "Neg", "Reciprocal", "Floor",
                            "Ceil", "Softplus", "LeakyRelu", "Elu", "Gelu")},
    **{op: binary for op in _BINARY},
    **ops_shape.KERNELS,
    **ops_index.KERNELS,  # run-time Where/Gather fall back to ops_shape's constant forms
}


def vision_kernel(n: Node, ctx: OpContext) -> KernelSpec | None:
    if n.op_type == "MatMul":
        shapes = [len(ctx.ttype(t).shape) for t in n.inputs]
        return batch_matmul(n, ctx) if shapes != [2, 2] else None
    if n.op_type == "Div" and ctx.graph.is_constant(n.inputs[1]):
        return None  # the importer's own form: schedules/ops.py
    if n.op_type == "ReduceMean":
        return reduce(n, ctx) if n.attr("general") else None
    fn = _KERNELS.get(n.op_type, binary if n.op_type == "Div" else None)
    if fn is None:
        return None
    if n.op_type not in BLOCKED_VISION_OPS and any(ctx.ttype(t).layout == NC1HWC0 for t in n.inputs if t):
        raise UnsupportedModelError(f"{_q(n.op_type)} node {_q(n.name)} has no NC1HWC0 kernel")
    return fn(n, ctx)
