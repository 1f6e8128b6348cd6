"""TE computes for data-movement operators (plain row-major layout): Concat, Slice, Transpose,
Expand, Tile, DepthToSpace/SpaceToDepth, Gather, Where. Constant operands are bound once at
compile time (fp32) and cast to the activation dtype on read."""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from fusion.core.ir import Node
from schedules.dwsep_te import ACC
from schedules.op_spec import KernelSpec, OpContext, _ph


def operand(ctx: OpContext, t: str, label: str):
    """(parameter, placeholder) of a node input: a bound fp32 constant or a run-time tensor."""
    if ctx.graph.is_constant(t):
        arr = ctx.const(t, ACC)
        return arr, _ph(arr.shape, ACC, label)
    return t, _ph(ctx.ttype(t).shape, ctx.dtype, label)


def bcast_index(in_shape, idx):
    """The index into an input of `in_shape` broadcast (numpy rules) to an output index."""
    lead = len(idx) - len(in_shape)
    return [0 if d == 1 else idx[lead + k] for k, d in enumerate(in_shape)]


def _spec(n: Node, ctx: OpContext, params, phs, y, schedule="generic") -> KernelSpec:
    out = tuple(int(d) for d in ctx.ttype(n.outputs[0]).shape)
    return KernelSpec(n.name, te.create_prim_func(list(phs) + [y]), tuple(params), out, ctx.dtype,
                      schedule=schedule)


def _out_shape(n: Node, ctx: OpContext):
    return tuple(int(d) for d in ctx.ttype(n.outputs[0]).shape)


def concat(n: Node, ctx: OpContext) -> KernelSpec:
    axis = n.attr("axis")
    params, phs = zip(*(operand(ctx, t, f"x{i}") for i, t in enumerate(n.inputs)))
    offsets = np.cumsum([0] + [int(p.shape[axis]) for p in phs]).tolist()

    def f(*idx):
        a = idx[axis]
        val = None
        for k in reversed(range(len(phs))):
            src = list(idx)
            src[axis] = tirx.min(tirx.max(a - offsets[k], 0), int(phs[k].shape[axis]) - 1)
            v = phs[k](*src).astype(ctx.dtype)
            val = v if val is None else tirx.if_then_else(a < offsets[k + 1], v, val)
        return val
    y = te.compute(_out_shape(n, ctx), f, name="y")
    return _spec(n, ctx, params, phs, y)


def slice_(n: Node, ctx: OpContext) -> KernelSpec:
    starts, steps = n.attr("starts"), n.attr("steps")
    X = _ph(ctx.ttype(n.inputs[0]).shape, ctx.dtype, "x")
    y = te.compute(_out_shape(n, ctx), lambda *i: X(*(s + k * st for k, s, st in zip(i, starts, steps))),
                   name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


def transpose(n: Node, ctx: OpContext) -> KernelSpec:
    perm = n.attr("perm")
    X = _ph(ctx.ttype(n.inputs[0]).shape, ctx.dtype, "x")

    def f(*i):
        src = [None] * len(perm)
        for k, p in enumerate(perm):
            src[p] = i[k]
        return X(*src)
    y = te.compute(_out_shape(n, ctx), f, name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


def expand(n: Node, ctx: OpContext) -> KernelSpec:
    X = _ph(ctx.ttype(n.inputs[0]).shape, ctx.dtype, "x")
    y = te.compute(_out_shape(n, ctx), lambda *i: X(*bcast_index(X.shape, i)), name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


def tile(n: Node, ctx: OpContext) -> KernelSpec:
    X = _ph(ctx.ttype(n.inputs[0]).shape, ctx.dtype, "x")
    y = te.compute(_out_shape(n, ctx), lambda *i: X(*(tirx.floormod(k, d) for k, d in zip(i, X.shape))),
                   name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


def depth_space(n: Node, ctx: OpContext) -> KernelSpec:
    """DepthToSpace y[n, c, h*b+i, w*b+j] = x[n, src channel, h, w] (DCR: (i*b+j)*C'+c, CRD:
    c*b*b+i*b+j); SpaceToDepth is its DCR inverse."""
    b, mode = n.attr("blocksize"), n.attr("mode")
    X = _ph(ctx.ttype(n.inputs[0]).shape, ctx.dtype, "x")
    out = _out_shape(n, ctx)
    if n.op_type == "DepthToSpace":
        cp = out[1]

        def f(bn, c, h, w):
            i, j = tirx.floormod(h, b), tirx.floormod(w, b)
            ch = (i * b + j) * cp + c if mode == "DCR" else c * b * b + i * b + j
            return X[bn, ch, tirx.floordiv(h, b), tirx.floordiv(w, b)]
    else:
        cin = int(X.shape[1])

        def f(bn, c, h, w):
            blk, ch = tirx.floordiv(c, cin), tirx.floormod(c, cin)
            return X[bn, ch, h * b + tirx.floordiv(blk, b), w * b + tirx.floormod(blk, b)]
    y = te.compute(out, f, name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


def gather(n: Node, ctx: OpContext) -> KernelSpec:
    axis, ishape = n.attr("axis"), tuple(n.attr("indices_shape"))
    idx = np.asarray(n.attr("indices"), np.int32).reshape(ishape or (1,))
    X = _ph(ctx.ttype(n.inputs[0]).shape, ctx.dtype, "x")
    Ind = _ph(idx.shape, "int32", "indices")
    k = len(ishape)

    def f(*i):
        sel = Ind(*i[axis:axis + k]) if k else Ind(0)
        return X(*i[:axis], sel, *i[axis + k:])
    y = te.compute(_out_shape(n, ctx), f, name="y")
    return _spec(n, ctx, [n.inputs[0], idx], [X, Ind], y)


def where(n: Node, ctx: OpContext) -> KernelSpec:
    params, phs = zip(*(operand(ctx, t, f"x{i}") for i, t in enumerate(n.inputs)))
    m, a, b = phs

    def f(*i):
        return tirx.if_then_else(m(*bcast_index(m.shape, i)).astype(ACC) != tirx.const(0, ACC),
                                 a(*bcast_index(a.shape, i)).astype(ctx.dtype),
                                 b(*bcast_index(b.shape, i)).astype(ctx.dtype))
    y = te.compute(_out_shape(n, ctx), f, name="y")
    return _spec(n, ctx, params, phs, y)


KERNELS = {
    "Concat": concat,
    "Slice": slice_,
    "Transpose": transpose,
    "Expand": expand,
    "Gather": gather,
    "Tile": tile,
    "DepthToSpace": depth_space,
    "SpaceToDepth": depth_space,
    "Where": where,
}
