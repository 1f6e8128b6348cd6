"""TE computes for the operators of fusion/frontend/onnx_ops_index.py: ArgMax/ArgMin (int64 out),
comparisons and logic (bool out), Where with a run-time condition, Gather with run-time indices,
InstanceNormalization and LpPool. Float tensors are stored in the activation dtype and computed
in fp32; integer and bool tensors keep their graph dtype."""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from fusion.core.ir import Node
from schedules import ops_shape
from schedules.dwsep_te import ACC
from schedules.op_spec import KernelSpec, OpContext, _ph
from schedules.ops_shape import _out_shape, _spec, bcast_index, operand
from schedules.op_spec import _reduce_over

FLOATS = ("float32", "float16")


def _f(v: float):
    return tirx.const(v, ACC)


def _typed(ctx: OpContext, t: str, label: str):
    """(parameter, placeholder) of an input of any dtype: floats as `operand` binds them, integer
    and bool tensors (run-time or constant) in their own dtype."""
    dt = ctx.ttype(t).dtype
    if dt in FLOATS:
        return operand(ctx, t, label)
    if ctx.graph.is_constant(t):
        arr = np.asarray(ctx.graph.constants[t])
        return arr, _ph(arr.shape, arr.dtype.name, label)
    return t, _ph(ctx.ttype(t).shape, dt, label)


# --- ArgMax / ArgMin ----------------------------------------------------------------------------
def arg_reduce(n: Node, ctx: OpContext) -> KernelSpec:
    """Two passes: the extreme value, then the first (or last) index that holds it - ONNX
    Runtime's tie rule (select_last_index)."""
    shape = ctx.ttype(n.inputs[0]).shape
    axis, keep, last = n.attr("axis"), n.attr("keepdims"), n.attr("last", 0)
    X = _ph(shape, ctx.dtype, "x")
    kshape = tuple(1 if a == axis else int(d) for a, d in enumerate(shape))
    dim = int(shape[axis])

    def at(i, r):
        return X(*(r if a == axis else i[a] for a in range(len(shape)))).astype(ACC)
    r1 = te.reduce_axis((0, dim), name="r1")
    combine = te.max if n.op_type == "ArgMax" else te.min
    ext = te.compute(kshape, lambda *i: combine(at(i, r1), axis=r1), name="ext")
    r2 = te.reduce_axis((0, dim), name="r2")
    pick, none = (te.max, tirx.const(-1, "int32")) if last else (te.min, tirx.const(dim, "int32"))
    sel = te.compute(kshape, lambda *i: pick(tirx.if_then_else(at(i, r2) == ext(*i), r2, none), axis=r2),
                     name="sel")

    def f(*i):
        if keep:
            return sel(*i).astype("int64")
        it = iter(i)
        return sel(*(0 if a == axis else next(it) for a in range(len(shape)))).astype("int64")
    y = te.compute(_out_shape(n, ctx), f, name="y")
    spec = _spec(n, ctx, [n.inputs[0]], [X], y)
    return KernelSpec(spec.name, spec.prim_func, spec.params, spec.out_shape, "int64")


# --- comparisons and logic ----------------------------------------------------------------------
_COMPARE = {
    "Equal": lambda a, b: a == b, "Less": lambda a, b: a < b, "Greater": lambda a, b: a > b,
    "LessOrEqual": lambda a, b: a <= b, "GreaterOrEqual": lambda a, b: a >= b,
    "And": tirx.all, "Or": tirx.any, "Not": lambda a: tirx.Not(a),
}


def compare(n: Node, ctx: OpContext) -> KernelSpec:
    params, phs = zip(*(_typed(ctx, t, f"x{k}") for k, t in enumerate(n.inputs)))
    fn = _COMPARE[n.op_type]
    # floats compare in fp32 (the storage dtype widens exactly); integers in int64
    wide = "bool" if n.op_type in ("And", "Or", "Not") else (
        ACC if any(str(p.dtype) in FLOATS for p in phs) else "int64")

    def f(*i):
        return fn(*(p(*bcast_index(p.shape, i)).astype(wide) for p in phs)).astype("bool")
    y = te.compute(_out_shape(n, ctx), f, name="y")
    spec = _spec(n, ctx, params, phs, y)
    return KernelSpec(spec.name, spec.prim_func, spec.params, spec.out_shape, "bool")


# --- Where / Gather with run-time operands ------------------------------------------------------
def where(n: Node, ctx: OpContext) -> KernelSpec:
    if not n.attr("runtime"):
        return ops_shape.where(n, ctx)
    (pc, C), (pa, A), (pb, B) = (_typed(ctx, t, f"x{k}") for k, t in enumerate(n.inputs))

    def f(*i):
        return tirx.if_then_else(C(*bcast_index(C.shape, i)), A(*bcast_index(A.shape, i)).astype(ctx.dtype),
                                 B(*bcast_index(B.shape, i)).astype(ctx.dtype))
    y = te.compute(_out_shape(n, ctx), f, name="y")
    return _spec(n, ctx, [pc, pa, pb], [C, A, B], y)


def gather(n: Node, ctx: OpContext) -> KernelSpec:
    """Negative indices count from the end; an index outside [-dim, dim) (ONNX Runtime raises)
    is clamped so the kernel never reads outside its input."""
    if not n.attr("runtime"):
        return ops_shape.gather(n, ctx)
    axis = n.attr("axis")
    X = _ph(ctx.ttype(n.inputs[0]).shape, ctx.dtype, "x")
    pi, Ind = _typed(ctx, n.inputs[1], "indices")
    k, dim = len(Ind.shape), int(X.shape[axis])

    def f(*i):
        v = Ind(*i[axis:axis + k]).astype("int32")
        v = tirx.if_then_else(v < 0, v + dim, v)
        return X(*i[:axis], tirx.min(tirx.max(v, 0), dim - 1), *i[axis + k:])
    y = te.compute(_out_shape(n, ctx), f, name="y")
    return _spec(n, ctx, [n.inputs[0], pi], [X, Ind], y)


# --- InstanceNormalization ----------------------------------------------------------------------
def instance_norm(n: Node, ctx: OpContext) -> KernelSpec:

    shape = ctx.ttype(n.inputs[0]).shape
    axes = tuple(range(2, len(shape)))
    inv = 1.0 / float(np.prod([int(shape[a]) for a in axes]))
    eps = n.attr("epsilon", 1e-5)
    X = _ph(shape, ctx.dtype, "x")
    (ps, Sc), (pb, Bi) = operand(ctx, n.inputs[1], "scale"), operand(ctx, n.inputs[2], "bias")
    Sc1 = te.compute((int(shape[1]),), lambda c: Sc(*([c] + [0] * (len(Sc.shape) - 1))), name="s1") \
        if len(Sc.shape) != 1 else Sc
    Bi1 = te.compute((int(shape[1]),), lambda c: Bi(*([c] + [0] * (len(Bi.shape) - 1))), name="b1") \
        if len(Bi.shape) != 1 else Bi

    def red_idx(i):
        return [0 if a in axes else i[a] for a in range(len(shape))]
    s1 = _reduce_over(lambda *i: X(*i).astype(ACC), shape, axes, te.sum, "rsum")
    mean = te.compute(s1.shape, lambda *i: s1(*i) * _f(inv), name="rmean")

    def dev(*i):
        return X(*i).astype(ACC) - mean(*red_idx(i))
    s2 = _reduce_over(lambda *i: dev(*i) * dev(*i), shape, axes, te.sum, "rvar")
    y = te.compute(shape, lambda *i: (dev(*i) / tirx.sqrt(s2(*red_idx(i)) * _f(inv) + _f(eps))
                                      * Sc1[i[1]] + Bi1[i[1]]).astype(ctx.dtype), name="y")
    return _spec(n, ctx, [n.inputs[0], ps, pb], [X, Sc, Bi], y)


# --- LpPool -------------------------------------------------------------------------------------
def lp_pool(n: Node, ctx: OpContext) -> KernelSpec:
    """y = (sum over the window of |x|^p)^(1/p); padding contributes zeros."""
    shape = ctx.ttype(n.inputs[0]).shape
    H, W = shape[2], shape[3]
    (kh, kw), (sh, sw), (dh, dw) = n.attr("kernel"), n.attr("strides"), n.attr("dilations")
    pt, pl = n.attr("pads")[:2]
    p = n.attr("p")
    X = _ph(shape, ctx.dtype, "x")
    rh, rw = te.reduce_axis((0, kh), name="rh"), te.reduce_axis((0, kw), name="rw")
    power = {1: tirx.abs, 2: lambda v: v * v}.get(p, lambda v: tirx.power(tirx.abs(v), _f(p)))
    root = {1: lambda s: s, 2: tirx.sqrt}.get(p, lambda s: tirx.power(s, _f(1.0 / p)))

    def window(b, c, i, j):
        r, q = i * sh + rh * dh - pt, j * sw + rw * dw - pl
        ok = tirx.all(r >= 0, r < H, q >= 0, q < W)
        v = X(b, c, tirx.min(tirx.max(r, 0), H - 1), tirx.min(tirx.max(q, 0), W - 1)).astype(ACC)
        return te.sum(tirx.if_then_else(ok, power(v), _f(0)), axis=[rh, rw])
    out = _out_shape(n, ctx)
    red = te.compute(out, window, name="pool")
    y = te.compute(out, lambda *i: root(red(*i)).astype(ctx.dtype), name="y")
    return _spec(n, ctx, [n.inputs[0]], [X], y)


KERNELS = {
    "ArgMax": arg_reduce, "ArgMin": arg_reduce,
    **{op: compare for op in _COMPARE},
    "Where": where, "Gather": gather,
    "InstanceNormalization": instance_norm, "LpPool": lp_pool,
}
