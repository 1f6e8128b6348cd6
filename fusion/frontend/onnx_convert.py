"""ONNX node conversion: one method per operator that checks a node and emits its normalized
form (fusion/frontend/onnx_import.py lists the forms), and the table of converters.

OpConverters is a mixin of the importer (fusion.frontend.onnx_import._Importer): the converters read the
importer's tensor access (_data, _const, _to_array, the tensor types) and append to its nodes.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from fusion.frontend import onnx_shapes as S
from fusion.core.errors import ModelLoadError, ShapeError, UnsupportedModelError
from fusion.core.ir import TensorType, make_node
from fusion.frontend.onnx_coverage import extra_converters


class OpConverters:
    """Node helpers and the converters of the core operators (the importer supplies label, types,
    read, nodes, available, all_consts and the tensor access methods)."""

    def _attrs(self, n, name: str) -> dict[str, Any]:
        from onnx import helper

        out = {}
        for a in n.attribute:
            if a.ref_attr_name:
                raise UnsupportedModelError(f"node '{name}': attribute '{a.name}' refers to a "
                                            f"function attribute")
            v = helper.get_attribute_value(a)
            if v is None:
                raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' "
                                     f"attribute '{a.name}' has no value")
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            out[a.name] = v
        return out

    def _arity(self, n, name: str, ins: list[str], lo: int, hi: int) -> None:
        if not lo <= len(ins) <= hi or any(not t for t in ins[:lo]):
            want = str(lo) if lo == hi else f"{lo}..{hi}"
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' ({n.op_type}) "
                                 f"has {len(ins)} inputs, expected {want}")

    def _single_output(self, n, name: str) -> str:
        outs = list(n.output)
        if not outs or not outs[0]:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' ({n.op_type}) "
                                 f"has no output")
        for extra in outs[1:]:
            if extra and extra in self.read:
                raise UnsupportedModelError(f"node '{name}': {n.op_type} output '{extra}' is not "
                                            f"supported")
        return outs[0]

    def _same_dtype(self, name: str, tensors: list[str]) -> str:
        dts = {t: self.types[t].dtype for t in tensors}
        first = tensors[0]
        for t, d in dts.items():
            if d != dts[first]:
                raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' mixes "
                                     f"{dts[first]} ('{first}') and {d} ('{t}') inputs")
        return dts[first]

    def _emit(self, name: str, op: str, ins: list[str], out: str, shape: tuple[int, ...],
              dtype: str, /, **attrs: Any) -> None:
        self.nodes.append(make_node(name, op, ins, [out], **attrs))
        self.types[out] = TensorType(tuple(int(d) for d in shape), dtype)
        self.available.add(out)

    @staticmethod
    def _ints(name: str, op: str, key: str, value: Any, n: int, default: tuple[int, ...],
              minimum: int) -> tuple[int, ...]:
        if value is None:
            return default
        vals = tuple(int(v) for v in value)
        if len(vals) != n:
            raise UnsupportedModelError(f"node '{name}': {op} attribute {key}={list(vals)} must have "
                                        f"{n} values (only 2-D is supported)")
        if any(v < minimum for v in vals):
            raise UnsupportedModelError(f"node '{name}': {op} attribute {key}={list(vals)} is invalid")
        return vals

    # Conv -----------------------------------------------------------------------------------
    def conv(self, n, name, ins, a):
        self._arity(n, name, ins, 2, 3)
        x, w = ins[0], ins[1]
        xt = self._data(x)
        if len(xt.shape) != 4:
            raise UnsupportedModelError(f"node '{name}': only 2-D Conv is supported (input '{x}' has "
                                        f"rank {len(xt.shape)})")
        wa = self._const(w, name, "Conv weight")
        if wa.ndim != 4:
            raise UnsupportedModelError(f"node '{name}': only 2-D Conv is supported (weight '{w}' has "
                                        f"rank {wa.ndim})")
        self._data(w)
        kernel = (int(wa.shape[2]), int(wa.shape[3]))
        if "kernel_shape" in a and tuple(int(v) for v in a["kernel_shape"]) != kernel:
            raise ShapeError(f"node '{name}': kernel_shape {list(a['kernel_shape'])} disagrees with "
                             f"weight '{w}' shape {S.fmt_shape(wa.shape)}")
        strides = self._ints(name, "Conv", "strides", a.get("strides"), 2, (1, 1), 1)
        dilations = self._ints(name, "Conv", "dilations", a.get("dilations"), 2, (1, 1), 1)
        pads = self._ints(name, "Conv", "pads", a.get("pads"), 4, (0, 0, 0, 0), 0)
        group = int(a.get("group", 1))
        auto_pad = str(a.get("auto_pad", "NOTSET")) or "NOTSET"
        if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
            raise UnsupportedModelError(f"node '{name}': Conv auto_pad '{auto_pad}' is not supported")
        nb, c, h, wd = xt.shape
        m = int(wa.shape[0])
        if group < 1 or c % group or m % group or wa.shape[1] * group != c:
            raise ShapeError(f"node '{name}': Conv group={group} does not fit input channels {c} and "
                             f"weight '{w}' shape {S.fmt_shape(wa.shape)}")
        pads = S.resolve_conv_pads((h, wd), kernel, strides, dilations, auto_pad, pads)
        oh, ow = S.conv_output_hw((h, wd), kernel, strides, dilations, pads, f"node '{name}': ")
        inputs = [x, w]
        if len(ins) == 3 and ins[2]:
            b = ins[2]
            ba = self._const(b, name, "Conv bias")
            if tuple(ba.shape) != (m,):
                raise ShapeError(f"node '{name}': Conv bias '{b}' has shape {S.fmt_shape(ba.shape)}, "
                                 f"expected [{m}]")
            self._data(b)
            inputs.append(b)
        dtype = self._same_dtype(name, inputs)
        self._emit(name, "Conv", inputs, self._single_output(n, name), (nb, m, oh, ow), dtype,
                   kernel=kernel, strides=strides, pads=pads, dilations=dilations, group=group)

    # BatchNormalization ---------------------------------------------------------------------
    def batchnorm(self, n, name, ins, a):
        self._arity(n, name, ins, 5, 5)
        if int(a.get("training_mode", 0)) != 0:
            raise UnsupportedModelError(f"node '{name}': BatchNormalization in training mode is not "
                                        f"supported")
        if int(a.get("spatial", 1)) != 1:
            raise UnsupportedModelError(f"node '{name}': BatchNormalization with spatial=0 is not "
                                        f"supported")
        outs = list(n.output)
        for extra in outs[1:]:
            if extra and extra in self.read:
                raise UnsupportedModelError(f"node '{name}': BatchNormalization training output "
                                            f"'{extra}' is used (training mode is not supported)")
        x = ins[0]
        xt = self._data(x)
        if len(xt.shape) < 2:
            raise ShapeError(f"node '{name}': BatchNormalization input '{x}' has rank {len(xt.shape)}")
        c = xt.shape[1]
        for t, what in zip(ins[1:], ("scale", "bias", "mean", "var")):
            arr = self._const(t, name, f"BatchNormalization {what}")
            if tuple(arr.shape) != (c,):
                raise ShapeError(f"node '{name}': BatchNormalization {what} '{t}' has shape "
                                 f"{S.fmt_shape(arr.shape)}, expected [{c}]")
            self._data(t)
        dtype = self.types[x].dtype
        for t in ins[1:]:  # ONNX allows T1/T2 differing from T; require the model's own dtype
            self._same_dtype(name, [x, t])
        self._emit(name, "BatchNormalization", ins, self._single_output_bn(n, name), xt.shape,
                   dtype, epsilon=float(a.get("epsilon", 1e-5)))

    def _single_output_bn(self, n, name):
        if not n.output or not n.output[0]:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' has no output")
        return n.output[0]

    # element-wise unary ---------------------------------------------------------------------
    def unary(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 1)
        xt = self._data(ins[0])
        attrs = {}
        if n.op_type == "HardSigmoid":
            attrs = {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}
        self._emit(name, n.op_type, ins, self._single_output(n, name), xt.shape, xt.dtype, **attrs)

    def clip(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 3)
        xt = self._data(ins[0])
        lo, hi = float(a.get("min", -math.inf)), float(a.get("max", math.inf))
        for i, which in ((1, "min"), (2, "max")):
            if len(ins) > i and ins[i]:
                arr = self._const(ins[i], name, f"Clip {which} bound")
                if arr.size != 1:
                    raise UnsupportedModelError(f"node '{name}': Clip {which} bound '{ins[i]}' is not "
                                                f"a scalar (shape {S.fmt_shape(arr.shape)})")
                if which == "min":
                    lo = float(arr.reshape(()))
                else:
                    hi = float(arr.reshape(()))
        self._emit(name, "Clip", [ins[0]], self._single_output(n, name), xt.shape, xt.dtype,
                   min=lo, max=hi)

    # element-wise binary --------------------------------------------------------------------
    def binary(self, n, name, ins, a):
        self._arity(n, name, ins, 2, 2)
        if int(a.get("broadcast", 0)) and "axis" in a:
            raise UnsupportedModelError(f"node '{name}': legacy {n.op_type} broadcast with axis "
                                        f"(opset < 7) is not supported")
        if n.op_type == "Div":
            self._const(ins[1], name, "Div divisor")
        at, bt = self._data(ins[0]), self._data(ins[1])
        dtype = self._same_dtype(name, ins)
        shape = S.broadcast(at.shape, bt.shape, f"node '{name}': ")
        self._emit(name, n.op_type, ins, self._single_output(n, name), shape, dtype)

    # pooling / reductions -------------------------------------------------------------------
    def gap(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 1)
        xt = self._data(ins[0])
        if len(xt.shape) != 4:
            raise UnsupportedModelError(f"node '{name}': GlobalAveragePool is supported on 4-D "
                                        f"tensors only (input '{ins[0]}' has rank {len(xt.shape)})")
        nb, c = xt.shape[:2]
        self._emit(name, "GlobalAveragePool", ins, self._single_output(n, name), (nb, c, 1, 1),
                   xt.dtype)

    def reduce_mean(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 2)
        xt = self._data(ins[0])
        rank = len(xt.shape)
        if len(ins) == 2 and ins[1]:
            axes = [int(v) for v in self._const(ins[1], name, "ReduceMean axes").reshape(-1)]
        elif "axes" in a:
            axes = [int(v) for v in a["axes"]]
        else:
            axes = []
        if not axes:
            if int(a.get("noop_with_empty_axes", 0)):
                raise UnsupportedModelError(f"node '{name}': ReduceMean with empty axes and "
                                            f"noop_with_empty_axes=1 is not supported")
            axes = list(range(rank))
        if any(not -rank <= ax < rank for ax in axes):
            raise ShapeError(f"node '{name}': ReduceMean axes {axes} out of range for rank {rank}")
        norm = sorted({ax % rank for ax in axes})
        if rank != 4 or norm != [2, 3]:
            raise UnsupportedModelError(f"node '{name}': ReduceMean over axes {axes} of a {rank}-D "
                                        f"tensor is not supported (only the spatial axes 2, 3 of a "
                                        f"4-D tensor)")
        keep = 1 if int(a.get("keepdims", 1)) else 0
        nb, c = xt.shape[:2]
        shape = (nb, c, 1, 1) if keep else (nb, c)
        self._emit(name, "ReduceMean", [ins[0]], self._single_output(n, name), shape, xt.dtype,
                   axes=(2, 3), keepdims=keep)

    # shape ops ------------------------------------------------------------------------------
    def flatten(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 1)
        xt = self._data(ins[0])
        rank = len(xt.shape)
        axis = int(a.get("axis", 1))
        if not -rank <= axis <= rank:
            raise ShapeError(f"node '{name}': Flatten axis {axis} out of range for rank {rank}")
        axis = axis + rank if axis < 0 else axis
        self._emit(name, "Flatten", ins, self._single_output(n, name), S.flatten(xt.shape, axis),
                   xt.dtype, axis=axis)

    def reshape(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 2)
        xt = self._data(ins[0])
        if len(ins) == 2 and ins[1]:
            target = [int(v) for v in self._const(ins[1], name, "Reshape shape").reshape(-1)]
        elif "shape" in a:  # opset < 5
            target = [int(v) for v in a["shape"]]
        else:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' (Reshape) "
                                 f"has no shape")
        shape = S.reshape(xt.shape, tuple(target), bool(int(a.get("allowzero", 0))),
                          f"node '{name}': ")
        self._emit(name, "Reshape", [ins[0]], self._single_output(n, name), shape, xt.dtype,
                   shape=shape)

    # matrix ops -----------------------------------------------------------------------------
    def gemm(self, n, name, ins, a):
        self._arity(n, name, ins, 2, 3)
        inputs = [t for t in ins if t]
        if len(inputs) != len(ins):
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' (Gemm) has an "
                                 f"empty input")
        tys = [self._data(t) for t in inputs]
        dtype = self._same_dtype(name, inputs)
        ta, tb = (1 if int(a.get("transA", 0)) else 0), (1 if int(a.get("transB", 0)) else 0)
        shape = S.gemm(tys[0].shape, tys[1].shape, tys[2].shape if len(tys) == 3 else None, ta, tb,
                       f"node '{name}': ")
        self._emit(name, "Gemm", inputs, self._single_output(n, name), shape, dtype,
                   alpha=float(a.get("alpha", 1.0)), beta=float(a.get("beta", 1.0)),
                   transA=ta, transB=tb)

    def matmul(self, n, name, ins, a):
        self._arity(n, name, ins, 2, 2)
        at, bt = self._data(ins[0]), self._data(ins[1])
        dtype = self._same_dtype(name, ins)
        shape = S.matmul(at.shape, bt.shape, f"node '{name}': ")
        self._emit(name, "MatMul", ins, self._single_output(n, name), shape, dtype)

    # Constant -------------------------------------------------------------------------------
    def constant(self, n, name, ins, a):
        if ins:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': Constant node '{name}' has "
                                 f"inputs")
        out = self._single_output(n, name)
        if len(a) != 1:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': Constant node '{name}' must "
                                 f"have exactly one value attribute, has {sorted(a) or 'none'}")
        (key, v), = a.items()
        if key == "value":
            arr = self._to_array(v, "Constant value")
        elif key == "value_float":
            arr = np.array(v, dtype=np.float32)
        elif key == "value_floats":
            arr = np.array(list(v), dtype=np.float32)
        elif key == "value_int":
            arr = np.array(v, dtype=np.int64)
        elif key == "value_ints":
            arr = np.array(list(v), dtype=np.int64)
        else:
            raise UnsupportedModelError(f"node '{name}': Constant attribute '{key}' is not supported")
        self.all_consts[out] = arr
        self.available.add(out)


CONVERTERS: dict[str, Callable] = {
    "Conv": OpConverters.conv,
    "BatchNormalization": OpConverters.batchnorm,
    "Relu": OpConverters.unary,
    "Sigmoid": OpConverters.unary,
    "HardSwish": OpConverters.unary,
    "HardSigmoid": OpConverters.unary,
    "Identity": OpConverters.unary,
    "Clip": OpConverters.clip,
    "Mul": OpConverters.binary,
    "Add": OpConverters.binary,
    "Sub": OpConverters.binary,
    "Div": OpConverters.binary,
    "GlobalAveragePool": OpConverters.gap,
    "ReduceMean": OpConverters.reduce_mean,
    "Flatten": OpConverters.flatten,
    "Reshape": OpConverters.reshape,
    "Gemm": OpConverters.gemm,
    "MatMul": OpConverters.matmul,
    "Constant": OpConverters.constant,
}
CONVERTERS.update(extra_converters(CONVERTERS))

SUPPORTED_OPS = frozenset(CONVERTERS)
