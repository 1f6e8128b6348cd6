"""ONNX converters for data-movement operators on run-time tensors (their constant-input forms
are folded by fusion.frontend.const_eval before these run):

    Concat      inputs (x0, x1, ...) (constants allowed); axis=int >= 0
    Split       -> one Slice node per output, named NODE/i
    Slice       input (x); starts=(...) steps=(...) over every dim, clamped (output shape typed)
    Transpose   input (x); perm=(...)
    Squeeze / Unsqueeze   -> Reshape (shape=...)
    Expand      input (x); output shape = broadcast(x, shape)
    Tile        input (x); output shape = x.shape * repeats
    DepthToSpace / SpaceToDepth   input (x), 4-D; blocksize=int mode=DCR|CRD
    Gather      input (x); axis=int indices=(flat, non-negative) indices_shape=(...)
    Where       inputs (mask, x, y): mask a float constant (1 where the condition holds)
    Cast (float to float), Dropout (inference)   -> Identity
"""

from __future__ import annotations

import numpy as np

from fusion.frontend import onnx_shapes as S
from fusion.core.errors import ShapeError, UnsupportedModelError
from fusion.frontend.onnx_ops_vision import _norm_axes, add_const
from fusion.core.ir import ceil_div
from fusion.frontend.onnx_shapes import np_dtype_name as _np_dtype_name

FLOATS = ("float32", "float16")


def concat(imp, n, name, ins, a):
    if not ins or any(not t for t in ins):
        raise ShapeError(f"node '{name}': Concat needs at least one (non-empty) input")
    tys = [imp._data(t) for t in ins]
    dtype = imp._same_dtype(name, ins)
    rank = len(tys[0].shape)
    if "axis" not in a:
        raise ShapeError(f"node '{name}': Concat has no axis")
    axis = _norm_axes(name, "Concat", [int(a["axis"])], rank)[0]
    for t, ty in zip(ins, tys):
        if len(ty.shape) != rank or any(d != e for i, (d, e) in enumerate(zip(ty.shape, tys[0].shape))
                                        if i != axis):
            raise ShapeError(f"node '{name}': Concat input '{t}' {S.fmt_shape(ty.shape)} does not "
                             f"match {S.fmt_shape(tys[0].shape)} outside axis {axis}")
    shape = list(tys[0].shape)
    shape[axis] = sum(ty.shape[axis] for ty in tys)
    imp._emit(name, "Concat", ins, imp._single_output(n, name), tuple(shape), dtype, axis=axis)


def _slice_dim(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """(clamped start, output length) under ONNX Slice semantics."""
    if step == 0:
        raise ShapeError("Slice step 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        return start, max(0, ceil_div(end - start, step))
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, max(0, ceil_div(start - end, -step))


def _emit_slice(imp, name, x, out, xt, starts, ends, axes, steps):
    rank = len(xt.shape)
    full_start, full_step, shape = [0] * rank, [1] * rank, list(xt.shape)
    for s, e, ax, st in zip(starts, ends, axes, steps):
        ax = _norm_axes(name, "Slice", [ax], rank)[0]
        try:
            full_start[ax], shape[ax] = _slice_dim(xt.shape[ax], int(s), int(e), int(st))
        except ShapeError:
            raise ShapeError(f"node '{name}': Slice step 0 on axis {ax}") from None
        full_step[ax] = int(st)
    if any(d == 0 for d in shape):
        raise ShapeError(f"node '{name}': Slice produces an empty tensor {S.fmt_shape(shape)}")
    imp._emit(name, "Slice", [x], out, tuple(shape), xt.dtype, starts=tuple(full_start),
              steps=tuple(full_step))


def slice_(imp, n, name, ins, a):
    xt = imp._data(ins[0])
    if imp.opset < 10:
        imp._arity(n, name, ins, 1, 1)
        starts, ends = [int(v) for v in a["starts"]], [int(v) for v in a["ends"]]
        axes = [int(v) for v in a.get("axes", range(len(starts)))]
        steps = [1] * len(starts)
    else:
        imp._arity(n, name, ins, 3, 5)
        starts = [int(v) for v in imp._const(ins[1], name, "Slice starts").reshape(-1)]
        ends = [int(v) for v in imp._const(ins[2], name, "Slice ends").reshape(-1)]
        axes = ([int(v) for v in imp._const(ins[3], name, "Slice axes").reshape(-1)]
                if len(ins) > 3 and ins[3] else list(range(len(starts))))
        steps = ([int(v) for v in imp._const(ins[4], name, "Slice steps").reshape(-1)]
                 if len(ins) > 4 and ins[4] else [1] * len(starts))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ShapeError(f"node '{name}': Slice starts/ends/axes/steps differ in length")
    _emit_slice(imp, name, ins[0], imp._single_output(n, name), xt, starts, ends, axes, steps)


def split(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 2)
    xt = imp._data(ins[0])
    rank = len(xt.shape)
    axis = _norm_axes(name, "Split", [int(a.get("axis", 0))], rank)[0]
    outs = list(n.output)
    dim = xt.shape[axis]
    if len(ins) == 2 and ins[1]:
        sizes = [int(v) for v in imp._const(ins[1], name, "Split split").reshape(-1)]
    elif "split" in a:
        sizes = [int(v) for v in a["split"]]
    else:
        k = int(a.get("num_outputs", len(outs)))
        part = ceil_div(dim, k)
        sizes = [min(part, dim - i * part) for i in range(k)]
    if len(sizes) != len(outs) or sum(sizes) != dim or any(s <= 0 for s in sizes):
        raise ShapeError(f"node '{name}': Split sizes {sizes} do not split dim {dim} into "
                         f"{len(outs)} outputs")
    start = 0
    for i, (out, size) in enumerate(zip(outs, sizes)):
        if out:
            _emit_slice(imp, f"{name}/{i}", ins[0], out, xt, [start], [start + size], [axis], [1])
        start += size


def transpose(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 1)
    xt = imp._data(ins[0])
    rank = len(xt.shape)
    perm = tuple(int(p) for p in a.get("perm", range(rank - 1, -1, -1)))
    if sorted(perm) != list(range(rank)):
        raise ShapeError(f"node '{name}': Transpose perm {list(perm)} is not a permutation of "
                         f"rank {rank}")
    imp._emit(name, "Transpose", ins, imp._single_output(n, name),
              tuple(xt.shape[p] for p in perm), xt.dtype, perm=perm)


def _axes_arg(imp, name, op, ins, a):
    if len(ins) == 2 and ins[1]:
        return [int(v) for v in imp._const(ins[1], name, f"{op} axes").reshape(-1)]
    return [int(v) for v in a["axes"]] if "axes" in a else None


def squeeze(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 2)
    xt = imp._data(ins[0])
    axes = _axes_arg(imp, name, "Squeeze", ins, a)
    rank = len(xt.shape)
    drop = (set(_norm_axes(name, "Squeeze", axes, rank)) if axes is not None
            else {i for i, d in enumerate(xt.shape) if d == 1})
    if any(xt.shape[i] != 1 for i in drop):
        raise ShapeError(f"node '{name}': Squeeze axes {sorted(drop)} of {S.fmt_shape(xt.shape)} "
                         f"are not all 1")
    shape = tuple(d for i, d in enumerate(xt.shape) if i not in drop)
    imp._emit(name, "Reshape", ins[:1], imp._single_output(n, name), shape, xt.dtype, shape=shape)


def unsqueeze(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 2)
    xt = imp._data(ins[0])
    axes = _axes_arg(imp, name, "Unsqueeze", ins, a) or []
    rank = len(xt.shape) + len(axes)
    new = set(_norm_axes(name, "Unsqueeze", axes, rank))
    if len(new) != len(axes):
        raise ShapeError(f"node '{name}': Unsqueeze axes {axes} repeat an axis")
    dims = iter(xt.shape)
    shape = tuple(1 if i in new else next(dims) for i in range(rank))
    imp._emit(name, "Reshape", ins[:1], imp._single_output(n, name), shape, xt.dtype, shape=shape)


def expand(imp, n, name, ins, a):
    imp._arity(n, name, ins, 2, 2)
    xt = imp._data(ins[0])
    target = tuple(int(v) for v in imp._const(ins[1], name, "Expand shape").reshape(-1))
    shape = S.broadcast(xt.shape, target, f"node '{name}': ")
    imp._emit(name, "Expand", ins[:1], imp._single_output(n, name), shape, xt.dtype)


def tile(imp, n, name, ins, a):
    imp._arity(n, name, ins, 2, 2)
    xt = imp._data(ins[0])
    reps = [int(v) for v in imp._const(ins[1], name, "Tile repeats").reshape(-1)]
    if len(reps) != len(xt.shape) or any(r < 1 for r in reps):
        raise ShapeError(f"node '{name}': Tile repeats {reps} do not fit input {S.fmt_shape(xt.shape)}")
    imp._emit(name, "Tile", ins[:1], imp._single_output(n, name),
              tuple(d * r for d, r in zip(xt.shape, reps)), xt.dtype)


def depth_space(imp, n, name, ins, a):
    op = n.op_type
    imp._arity(n, name, ins, 1, 1)
    xt = imp._data(ins[0])
    if len(xt.shape) != 4:
        raise UnsupportedModelError(f"node '{name}': {op} is supported on 4-D tensors only")
    b = int(a.get("blocksize", 0))
    mode = str(a.get("mode", "DCR")) if op == "DepthToSpace" else "DCR"
    if b < 1 or mode not in ("DCR", "CRD"):
        raise ShapeError(f"node '{name}': {op} blocksize {b} / mode '{mode}' is invalid")
    nb, c, h, w = xt.shape
    if op == "DepthToSpace":
        if c % (b * b):
            raise ShapeError(f"node '{name}': DepthToSpace channels {c} are not a multiple of {b * b}")
        shape = (nb, c // (b * b), h * b, w * b)
    else:
        if h % b or w % b:
            raise ShapeError(f"node '{name}': SpaceToDepth input {h}x{w} is not a multiple of {b}")
        shape = (nb, c * b * b, h // b, w // b)
    imp._emit(name, op, ins, imp._single_output(n, name), shape, xt.dtype, blocksize=b, mode=mode)


def gather(imp, n, name, ins, a):
    imp._arity(n, name, ins, 2, 2)
    xt = imp._data(ins[0])
    rank = len(xt.shape)
    axis = _norm_axes(name, "Gather", [int(a.get("axis", 0))], rank)[0]
    idx = np.asarray(imp._const(ins[1], name, "Gather indices")).astype(np.int64)
    dim = xt.shape[axis]
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        raise ShapeError(f"node '{name}': Gather indices out of range for dim {dim}")
    idx = np.where(idx < 0, idx + dim, idx)
    shape = xt.shape[:axis] + tuple(idx.shape) + xt.shape[axis + 1:]
    if 0 in shape:
        raise ShapeError(f"node '{name}': Gather produces an empty tensor")
    imp._emit(name, "Gather", ins[:1], imp._single_output(n, name), shape, xt.dtype, axis=axis,
              indices=tuple(int(v) for v in idx.reshape(-1)), indices_shape=tuple(idx.shape))


def where(imp, n, name, ins, a):
    imp._arity(n, name, ins, 3, 3)
    if ins[0] not in imp.all_consts:
        raise UnsupportedModelError(f"node '{name}': Where with a condition computed at run time "
                                    f"('{ins[0]}') is not supported (only constant conditions)")
    xt, yt = imp._data(ins[1]), imp._data(ins[2])
    dtype = imp._same_dtype(name, ins[1:])
    cond = np.asarray(imp.all_consts[ins[0]]).astype(bool)
    mask = add_const(imp, f"{ins[0]}__mask", cond.astype(dtype))
    imp._data(mask)
    shape = S.broadcast(S.broadcast(cond.shape, xt.shape, f"node '{name}': "), yt.shape,
                        f"node '{name}': ")
    imp._emit(name, "Where", [mask, ins[1], ins[2]], imp._single_output(n, name), shape, dtype)


def cast(imp, n, name, ins, a):

    imp._arity(n, name, ins, 1, 1)
    xt = imp._data(ins[0])
    to = _np_dtype_name(int(a.get("to", 0)))
    if to not in FLOATS:
        raise UnsupportedModelError(f"node '{name}': Cast of run-time tensor '{ins[0]}' to {to} is "
                                    f"not supported (float32/float16 only)")
    imp._emit(name, "Identity", ins, imp._single_output(n, name), xt.shape, to)


def dropout(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 3)
    if len(ins) > 2 and ins[2] and ins[2] in imp.all_consts and bool(imp.all_consts[ins[2]]):
        raise UnsupportedModelError(f"node '{name}': Dropout in training mode is not supported")
    xt = imp._data(ins[0])
    imp._emit(name, "Identity", ins[:1], imp._single_output(n, name), xt.shape, xt.dtype)


def fold_only(imp, n, name, ins, a):
    """Reached only when const_eval could not fold: an input is computed at run time."""
    live = [t for t in ins if t and t not in imp.all_consts]
    raise UnsupportedModelError(f"node '{name}': {n.op_type} is supported on constant inputs only "
                                f"(shape computations); '{live[0] if live else '?'}' is computed at "
                                f"run time")


CONVERTERS = {
    "Concat": concat,
    "Split": split,
    "Slice": slice_,
    "Transpose": transpose,
    "Squeeze": squeeze,
    "Unsqueeze": unsqueeze,
    "Expand": expand,
    "Gather": gather,
    "Tile": tile,
    "DepthToSpace": depth_space,
    "SpaceToDepth": depth_space,
    "Where": where,
    "Cast": cast,
    "Dropout": dropout,
}
