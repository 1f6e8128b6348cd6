"""ONNX converters of QuantizeLinear / DequantizeLinear (QDQ models, ONNX Runtime semantics).

    QuantizeLinear    input (x) float, per-tensor; attrs scale=float zero_point=int dtype='uint8'|'int8'
                      -> y = saturate(round_half_even(x / scale) + zero_point)
    DequantizeLinear  input (q) a run-time uint8/int8 tensor, per-tensor; attrs scale zero_point
                      -> y = (q - zero_point) * scale   (float32)

A DequantizeLinear of a constant (quantized weights, int32 biases) is folded into a float32
constant computed as ORT computes it, and its integer form is kept in `Graph.quant`
(QuantizedConst) so passes/quant_fuse.py can run the conv on the integers. Per-channel scales
are accepted on constants only; a per-channel or blocked quantization of a run-time tensor, or
a quantized dtype other than uint8/int8 (int16, int4, float8), is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fusion.core.errors import UnsupportedModelError
from fusion.core.ir import TensorType

QDTYPES = ("uint8", "int8")
QRANGE = {"uint8": (0, 255), "int8": (-128, 127)}


@dataclass(frozen=True, eq=False)
class QuantizedConst:
    """The integer form of a folded DequantizeLinear: value = (values - zero_point) * scale,
    per tensor (axis None) or per slice along `axis`."""
    values: np.ndarray          # as stored: int8 / uint8 / int32
    scale: np.ndarray           # float32, shape (1,) or (values.shape[axis],)
    zero_point: np.ndarray      # int32, same shape as scale
    axis: int | None


def _type(imp, t: str) -> TensorType:
    if t in imp.types:
        return imp.types[t]
    arr = np.asarray(imp.all_consts[t])
    return TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name)


def _params(imp, n, name: str, ins: list[str], a: dict, x_dtype: str | None):
    """(scale float32 1-D, zero point int32 1-D, zero-point dtype) of a Q/DQ node."""
    if int(a.get("block_size", 0)):
        raise UnsupportedModelError(f"node '{name}': blocked {n.op_type} (block_size) is not supported")
    scale = np.asarray(imp._const(ins[1], name, f"{n.op_type} scale"))
    if scale.dtype != np.float32:
        raise UnsupportedModelError(f"node '{name}': {n.op_type} scale of dtype {scale.dtype.name} is "
                                    f"not supported (float32 only)")
    if len(ins) > 2 and ins[2]:
        zp = np.asarray(imp._const(ins[2], name, f"{n.op_type} zero point"))
        zdt = zp.dtype.name
    else:
        zdt = x_dtype if x_dtype in QDTYPES + ("int32",) else str(a.get("_default", "uint8"))
        zp = np.zeros(scale.shape, zdt)
    if zp.shape != scale.shape and zp.size != scale.size:
        raise UnsupportedModelError(f"node '{name}': {n.op_type} zero point shape {list(zp.shape)} "
                                    f"differs from its scale's {list(scale.shape)}")
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise UnsupportedModelError(f"node '{name}': {n.op_type} scale must be finite and positive")
    return scale.reshape(-1), zp.reshape(-1).astype(np.int32), zdt


def dequantize(imp, n, name, ins, a):
    imp._arity(n, name, ins, 2, 3)
    out = imp._single_output(n, name)
    x = ins[0]
    if x not in imp.types and x not in imp.all_consts:
        imp._data(x)  # the importer's "read before it is produced" error
    xt = _type(imp, x)
    if xt.dtype not in QDTYPES + ("int32",):
        raise UnsupportedModelError(f"node '{name}': DequantizeLinear of {xt.dtype} is not supported "
                                    f"(uint8, int8, int32)")
    scale, zp, zdt = _params(imp, n, name, ins, a, xt.dtype)
    if zdt != xt.dtype:
        raise UnsupportedModelError(f"node '{name}': DequantizeLinear zero point is {zdt}, input is "
                                    f"{xt.dtype}")
    if x in imp.all_consts:
        q = np.asarray(imp.all_consts[x])
        axis = None
        if scale.size > 1:
            axis = int(a.get("axis", 1)) % max(q.ndim, 1)
            if q.shape[axis] != scale.size:
                raise UnsupportedModelError(f"node '{name}': DequantizeLinear scale has {scale.size} "
                                            f"values for axis {axis} of size {q.shape[axis]}")
        bshape = [1] * q.ndim
        if axis is not None:
            bshape[axis] = scale.size
        s = scale.reshape(bshape) if q.ndim else scale.reshape(())
        z = zp.reshape(bshape) if q.ndim else zp.reshape(())
        # ORT: float(int32(q) - zero_point) * scale, one float32 rounding
        imp.all_consts[out] = (q.astype(np.int32) - z).astype(np.float32) * s
        if not hasattr(imp, "quant_consts"):
            imp.quant_consts = {}
        imp.quant_consts[out] = QuantizedConst(q, scale, zp, axis)
        imp.available.add(out)
        return
    if scale.size != 1:
        raise UnsupportedModelError(f"node '{name}': per-channel DequantizeLinear of a run-time tensor "
                                    f"is not supported")
    if xt.dtype not in QDTYPES:
        raise UnsupportedModelError(f"node '{name}': DequantizeLinear of a run-time {xt.dtype} tensor "
                                    f"is not supported")
    imp._emit(name, "DequantizeLinear", [x], out, xt.shape, "float32",
              scale=float(scale[0]), zero_point=int(zp[0]))


def quantize(imp, n, name, ins, a):
    imp._arity(n, name, ins, 2, 3)
    out = imp._single_output(n, name)
    xt = imp._data(ins[0])
    if xt.dtype != "float32":
        raise UnsupportedModelError(f"node '{name}': QuantizeLinear of {xt.dtype} is not supported "
                                    f"(float32)")
    if int(a.get("saturate", 1)) != 1 or int(a.get("output_dtype", 0)):
        raise UnsupportedModelError(f"node '{name}': QuantizeLinear attributes saturate/output_dtype "
                                    f"are not supported")
    scale, zp, zdt = _params(imp, n, name, ins, a, None)
    if zdt not in QDTYPES:
        raise UnsupportedModelError(f"node '{name}': QuantizeLinear to {zdt} is not supported "
                                    f"(uint8, int8)")
    if scale.size != 1:
        raise UnsupportedModelError(f"node '{name}': per-channel QuantizeLinear of a run-time tensor "
                                    f"is not supported")
    imp._emit(name, "QuantizeLinear", [ins[0]], out, xt.shape, zdt,
              scale=float(scale[0]), zero_point=int(zp[0]), dtype=zdt)


CONVERTERS = {"QuantizeLinear": quantize, "DequantizeLinear": dequantize}
