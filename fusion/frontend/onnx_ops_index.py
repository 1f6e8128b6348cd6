"""ONNX converters for operators with integer or boolean run-time tensors, and the normalizations
and pooling forms that sit beside them in vision exports:

    ArgMax / ArgMin        input (x); axis=int keepdims=0|1 last=0|1 -> int64 indices
    Equal Less Greater LessOrEqual GreaterOrEqual   inputs (a, b), numpy broadcasting -> bool
    Not / And / Or         bool inputs -> bool
    Where                  inputs (cond, x, y); cond a run-time bool tensor (a constant condition
                           keeps fusion.frontend.onnx_ops_shape's float-mask form)
    Gather                 inputs (x, indices); indices a run-time int64/int32 tensor, attrs
                           axis=int (constant indices keep fusion.frontend.onnx_ops_shape's form)
    InstanceNormalization  inputs (x, scale, bias) constants; epsilon
    LpPool                 input (x), 4-D; the pooling attributes of MaxPool plus p=int

Integer and boolean tensors exist only between these operators: they are typed int64 / bool in
the graph, so a float consumer of one is refused by the importer's dtype check (one line)."""

from __future__ import annotations

from fusion.frontend import onnx_shapes as S
from fusion.core.errors import ShapeError, UnsupportedModelError
from fusion.frontend.onnx_ops_shape import gather as const_gather, where as const_where
from fusion.frontend.onnx_ops_vision import _norm_axes, pool
from fusion.core.ir import TensorType

FLOATS = ("float32", "float16")
INDEX_DTYPES = ("int64", "int32")
COMPARE = ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")
LOGIC = ("Not", "And", "Or")


def _type(imp, t: str, name: str):
    """The type of any run-time tensor or constant (float, integer or bool)."""
    if t in imp.types:
        return imp.types[t]
    if t in imp.all_consts:
        import numpy as np


        arr = np.asarray(imp.all_consts[t])
        ty = TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name)
        imp.types[t] = ty
        imp.used_consts.add(t)
        return ty
    raise ShapeError(f"node '{name}': tensor '{t}' is read before it is produced")


def arg_reduce(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 1)
    xt = imp._data(ins[0])
    rank = len(xt.shape)
    axis = _norm_axes(name, n.op_type, [int(a.get("axis", 0))], rank)[0]
    keep = 1 if int(a.get("keepdims", 1)) else 0
    shape = tuple(1 if i == axis else d for i, d in enumerate(xt.shape) if keep or i != axis)
    imp._emit(name, n.op_type, ins, imp._single_output(n, name), shape, "int64", axis=axis,
              keepdims=keep, last=1 if int(a.get("select_last_index", 0)) else 0)


def compare(imp, n, name, ins, a):
    op = n.op_type
    imp._arity(n, name, ins, 1 if op == "Not" else 2, 1 if op == "Not" else 2)
    types = [_type(imp, t, name) for t in ins]
    for t, ty in zip(ins, types):
        ok = ty.dtype == "bool" if op in LOGIC else ty.dtype in FLOATS + INDEX_DTYPES
        if not ok:
            raise UnsupportedModelError(f"node '{name}': {op} of '{t}' ({ty.dtype}) is not supported")
    if op not in LOGIC and len({"float" if t.dtype in FLOATS else "int" for t in types}) > 1:
        raise ShapeError(f"node '{name}': {op} mixes float and integer inputs")
    shape = types[0].shape
    for ty in types[1:]:
        shape = S.broadcast(shape, ty.shape, f"node '{name}': ")
    imp._emit(name, op, ins, imp._single_output(n, name), shape, "bool")


def where(imp, n, name, ins, a):
    if len(ins) == 3 and ins[0] in imp.all_consts:
        return const_where(imp, n, name, ins, a)
    imp._arity(n, name, ins, 3, 3)
    ct = _type(imp, ins[0], name)
    if ct.dtype != "bool":
        raise ShapeError(f"node '{name}': Where condition '{ins[0]}' is {ct.dtype}, not bool")
    xt, yt = imp._data(ins[1]), imp._data(ins[2])
    dtype = imp._same_dtype(name, ins[1:])
    shape = S.broadcast(S.broadcast(ct.shape, xt.shape, f"node '{name}': "), yt.shape, f"node '{name}': ")
    imp._emit(name, "Where", ins, imp._single_output(n, name), shape, dtype, runtime=1)


def gather(imp, n, name, ins, a):
    if len(ins) == 2 and ins[1] in imp.all_consts:
        return const_gather(imp, n, name, ins, a)
    imp._arity(n, name, ins, 2, 2)
    xt, it = imp._data(ins[0]), _type(imp, ins[1], name)
    if it.dtype not in INDEX_DTYPES:
        raise ShapeError(f"node '{name}': Gather indices '{ins[1]}' are {it.dtype}, not int64/int32")
    rank = len(xt.shape)
    axis = _norm_axes(name, "Gather", [int(a.get("axis", 0))], rank)[0]
    shape = xt.shape[:axis] + tuple(it.shape) + xt.shape[axis + 1:]
    if 0 in shape:
        raise ShapeError(f"node '{name}': Gather produces an empty tensor")
    imp._emit(name, "Gather", ins, imp._single_output(n, name), shape, xt.dtype, axis=axis, runtime=1)


def instance_norm(imp, n, name, ins, a):
    imp._arity(n, name, ins, 3, 3)
    xt = imp._data(ins[0])
    if len(xt.shape) < 3:
        raise UnsupportedModelError(f"node '{name}': InstanceNormalization needs rank >= 3 "
                                    f"(input '{ins[0]}' has rank {len(xt.shape)})")
    for t in ins[1:]:
        v = imp._const(t, name, "InstanceNormalization scale/bias")
        if v.size != xt.shape[1]:
            raise ShapeError(f"node '{name}': InstanceNormalization scale/bias '{t}' has {v.size} "
                             f"values for {xt.shape[1]} channels")
        imp._data(t)
    dtype = imp._same_dtype(name, ins)
    imp._emit(name, "InstanceNormalization", ins, imp._single_output(n, name), xt.shape, dtype,
              epsilon=float(a.get("epsilon", 1e-5)))


def lp_pool(imp, n, name, ins, a):
    p = int(a.get("p", 2))
    if p < 1:
        raise UnsupportedModelError(f"node '{name}': LpPool p={p} is not supported (p >= 1)")
    pool(imp, n, name, ins, a)
    imp.nodes[-1] = imp.nodes[-1].with_attrs(p=p)


CONVERTERS = {
    "ArgMax": arg_reduce,
    "ArgMin": arg_reduce,
    **{op: compare for op in COMPARE + LOGIC},
    "Where": where,
    "Gather": gather,
    "InstanceNormalization": instance_norm,
    "LpPool": lp_pool,
}
