"""Constant folding at import: a node whose inputs are all constants is evaluated with NumPy once
and becomes a constant; `Shape`/`Size` fold as soon as their input's shape is known.

This runs in the importer, not as a graph pass, because the importer needs the folded values
while it converts the nodes that read them: a Reshape's target shape, a Resize's scales, a
Slice's starts are attributes of the normalized graph, so the Shape→Gather→Concat subgraph that
computes them must already be a constant when the Reshape is converted.

`try_fold(imp, node, name, ins, attrs)` returns True when it folded the node (its outputs are
then entries of `imp.all_consts`; no graph node is emitted).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fusion.core.errors import ShapeError, UnsupportedModelError
from fusion.core.ir import ceil_div
from fusion.frontend import onnx_shapes as S


def try_fold(imp, n, name: str, ins: list[str], a: dict[str, Any]) -> bool:
    fn = _FOLDERS.get(n.op_type)
    if fn is None:
        return False
    if n.op_type in ("Shape", "Size"):
        if not ins or (ins[0] not in imp.types and ins[0] not in imp.all_consts):
            return False
        shape = (imp.types[ins[0]].shape if ins[0] in imp.types else imp.all_consts[ins[0]].shape)
        vals = [np.broadcast_to(np.uint8(0), shape)]  # only the shape is read (no copy)
    else:
        if any(t and t not in imp.all_consts for t in ins):
            return False
        vals = [imp.all_consts[t] if t else None for t in ins]
    if n.op_type == "Split":
        a = dict(a, _n_outputs=len(n.output))
    try:
        outs = fn(vals, a, imp.opset)
    except (ValueError, IndexError, TypeError) as e:
        raise ShapeError(f"node '{name}': cannot evaluate {n.op_type} on its constant inputs "
                         f"({' '.join(str(e).split())})") from None
    if not isinstance(outs, list):
        outs = [outs]
    names = [t for t in n.output]
    if len(outs) < len([t for t in names if t]):
        raise UnsupportedModelError(f"node '{name}': {n.op_type} has more outputs than it computes")
    for t, v in zip(names, outs):
        if t:
            imp.all_consts[t] = np.asarray(v)
            imp.available.add(t)
    return True


# --- helpers ----------------------------------------------------------------------------------
def _axes(vals, a, idx: int, key: str = "axes") -> list[int] | None:
    if len(vals) > idx and vals[idx] is not None:
        return [int(v) for v in np.asarray(vals[idx]).reshape(-1)]
    if key in a:
        return [int(v) for v in a[key]]
    return None


def _norm(axes, rank):
    out = []
    for ax in axes:
        if not -rank <= int(ax) < rank:
            raise ValueError(f"axis {ax} out of range for rank {rank}")
        out.append(int(ax) % rank)
    return sorted(out)


def _int_div(x, y):
    if np.issubdtype(np.asarray(x).dtype, np.integer) and np.issubdtype(np.asarray(y).dtype, np.integer):
        return np.trunc(np.true_divide(x, y)).astype(np.result_type(x, y))
    return np.true_divide(x, y).astype(np.result_type(x, y))


def _cast(vals, a, opset):
    from onnx import helper

    return vals[0].astype(helper.tensor_dtype_to_np_dtype(int(a["to"])))


def _shape(vals, a, opset):
    shape = np.array(vals[0].shape, np.int64)
    rank = len(shape)
    start, end = int(a.get("start", 0)), a.get("end")
    start = max(0, min(rank, start + rank if start < 0 else start))
    end = rank if end is None else int(end)
    end = max(0, min(rank, end + rank if end < 0 else end))
    return shape[start:end]


def _const_of_shape(vals, a, opset):
    from onnx import numpy_helper

    value = numpy_helper.to_array(a["value"]).reshape(-1) if "value" in a else np.zeros(1, np.float32)
    return np.full(tuple(int(d) for d in vals[0].reshape(-1)), value[0], dtype=value.dtype)


def _gather(vals, a, opset):
    data, idx = vals[0], np.asarray(vals[1]).astype(np.int64)
    axis = int(a.get("axis", 0))
    axis = axis % data.ndim
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    return np.take(data, idx, axis=axis)


def _slice(vals, a, opset):
    data = vals[0]
    if opset < 10:
        starts, ends = list(a["starts"]), list(a["ends"])
        axes = list(a.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = [int(v) for v in vals[1].reshape(-1)]
        ends = [int(v) for v in vals[2].reshape(-1)]
        axes = _axes(vals, {}, 3) or list(range(len(starts)))
        steps = _axes(vals, {}, 4) or [1] * len(starts)
    sl = [slice(None)] * data.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps):
        sl[int(ax) % data.ndim] = slice(int(s), int(e), int(st))
    return data[tuple(sl)]


def _squeeze(vals, a, opset):
    axes = _axes(vals, a, 1)
    if axes is None:
        return np.squeeze(vals[0])
    return np.squeeze(vals[0], axis=tuple(_norm(axes, vals[0].ndim)))


def _unsqueeze(vals, a, opset):
    axes = _axes(vals, a, 1) or []
    out_rank = vals[0].ndim + len(axes)
    out = vals[0]
    for ax in _norm(axes, out_rank):
        out = np.expand_dims(out, ax)
    return out


def _reshape(vals, a, opset):

    target = tuple(int(v) for v in (vals[1].reshape(-1) if len(vals) > 1 else a["shape"]))
    return vals[0].reshape(S.reshape(vals[0].shape, target, bool(int(a.get("allowzero", 0)))))


def _range(vals, a, opset):
    start, limit, delta = (np.asarray(v).reshape(()) for v in vals[:3])
    return np.arange(start, limit, delta).astype(np.asarray(vals[0]).dtype)


def _expand(vals, a, opset):
    shape = tuple(int(d) for d in vals[1].reshape(-1))
    return vals[0] * np.ones(shape, vals[0].dtype)


def _split(vals, a, opset):
    data = vals[0]
    axis = int(a.get("axis", 0)) % data.ndim
    sizes = _axes(vals, a, 1, "split")
    n_out = int(a.get("_n_outputs", 0)) or (len(sizes) if sizes else int(a.get("num_outputs", 0)))
    if sizes is None:
        part = ceil_div(data.shape[axis], n_out)
        sizes = [min(part, data.shape[axis] - i * part) for i in range(n_out)]
    return np.split(data, np.cumsum(sizes)[:-1], axis=axis)


def _reduce(np_fn):
    def fold(vals, a, opset):
        axes = _axes(vals, a, 1)
        keep = bool(int(a.get("keepdims", 1)))
        if not axes:
            if int(a.get("noop_with_empty_axes", 0)):
                return vals[0]
            axes = list(range(vals[0].ndim))
        return np_fn(vals[0], axis=tuple(_norm(axes, vals[0].ndim)), keepdims=keep)
    return fold


def _flatten(vals, a, opset):
    axis = int(a.get("axis", 1)) % (vals[0].ndim + 1) if vals[0].ndim else 0
    return vals[0].reshape(int(np.prod(vals[0].shape[:axis])), -1)


def _concat(vals, a, opset):
    return np.concatenate([v for v in vals if v is not None], axis=int(a["axis"]))


def _unary(f):
    return lambda vals, a, opset: f(vals[0])


def _binary(f):
    return lambda vals, a, opset: f(vals[0], vals[1])


_FOLDERS: dict[str, Callable] = {
    "Shape": _shape,
    "Size": lambda vals, a, opset: np.array(vals[0].size, np.int64),
    "Cast": _cast,
    "ConstantOfShape": _const_of_shape,
    "Gather": _gather,
    "Slice": _slice,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Concat": _concat,
    "Range": _range,
    "Expand": _expand,
    "Tile": lambda vals, a, opset: np.tile(vals[0], [int(r) for r in vals[1].reshape(-1)]),
    "Split": _split,
    "Transpose": lambda vals, a, opset: np.transpose(vals[0], a.get("perm")),
    "Identity": _unary(lambda x: x),
    "Dropout": _unary(lambda x: x),  # inference: the mask output is refused by its converter
    "Neg": _unary(np.negative),
    "Abs": _unary(np.abs),
    "Floor": _unary(np.floor),
    "Ceil": _unary(np.ceil),
    "Sqrt": _unary(np.sqrt),
    "Not": _unary(np.logical_not),
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_int_div),
    "Pow": _binary(lambda x, y: np.power(x, y).astype(x.dtype)),
    "Min": lambda vals, a, opset: np.minimum.reduce(vals),
    "Max": lambda vals, a, opset: np.maximum.reduce(vals),
    "Equal": _binary(np.equal),
    "Less": _binary(np.less),
    "Greater": _binary(np.greater),
    "And": _binary(np.logical_and),
    "Or": _binary(np.logical_or),
    "Where": lambda vals, a, opset: np.where(vals[0], vals[1], vals[2]),
    "ReduceProd": _reduce(np.prod),
    "ReduceSum": _reduce(np.sum),
    "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
}

# operators megafuse only runs when their inputs are constants (shape arithmetic)
FOLD_ONLY = ("Shape", "Size", "ConstantOfShape", "Range", "Equal", "Less", "Greater", "Not",
             "And", "Or", "ReduceProd")
