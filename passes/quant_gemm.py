"""QDQ Gemm → QGemm: DequantizeLinear(x) → Gemm(B = DequantizeLinear of an int8 constant, C = an
int32 bias with scale x_scale·w_scale) → QuantizeLinear becomes one QGemm on the integers, as ONNX
Runtime runs the pattern (its QGemm; the classifier of the MobileNets). Applied after quant_fuse
on the CPU target only (its kernels are schedules/quant_nhwc_ops.py's).

    QGemm   inputs (xq (N, K) run-time, wq (O, K) int8/uint8 constant, bq (O,) int32 constant);
            attrs x_zp, w_zp (O ints), mult (O float32: x_scale*w_scale[o]/y_scale), y_zp, y_dtype,
            lo, hi (the output clamp) -- the QConv attributes of a 1×1 convolution
"""

from __future__ import annotations

import numpy as np

from fusion.core.ir import Graph, make_node
from fusion.frontend.onnx_ops_quant import QRANGE
from passes.quant_fuse import _drop_dead, _output_quant

PASS = "quant_gemm"


def _match(g: Graph, n) -> dict | None:
    if (n.op_type != "Gemm" or n.attr("transA") or n.attr("alpha") != 1.0 or n.attr("beta") != 1.0
            or len(g.types[n.inputs[0]].shape) != 2):
        return None
    dq = g.producer(n.inputs[0])
    wq = g.quant.get(n.inputs[1])
    if dq is None or dq.op_type != "DequantizeLinear" or wq is None or wq.values.ndim != 2:
        return None
    w = wq.values if n.attr("transB") else wq.values.T
    if w.dtype.name not in ("int8", "uint8") or wq.axis not in (None, 1 if not n.attr("transB") else 0):
        return None
    o = w.shape[0]
    sw = np.broadcast_to(wq.scale, (o,)).astype(np.float32)
    sx = np.float32(dq.attr("scale"))
    bias = np.zeros(o, np.int32)
    if len(n.inputs) > 2:
        bq = g.quant.get(n.inputs[2])
        if (bq is None or bq.values.dtype != np.int32 or bq.values.shape not in ((o,), (1, o))
                or np.any(bq.zero_point != 0)
                or not np.array_equal(np.broadcast_to(bq.scale, (o,)), (sx * sw).astype(np.float32))):
            return None
        bias = bq.values.reshape(o).astype(np.int32)
    out = _output_quant(g, n.outputs[0])
    if isinstance(out, str):
        return None
    qn, absorbed, (lo, hi) = out
    mult = ((sx * sw).astype(np.float32) / np.float32(qn.attr("scale"))).astype(np.float32)
    return dict(x=dq.inputs[0], w=np.ascontiguousarray(w), b=bias, out=qn.outputs[0],
                old={n.name, qn.name, *(a.name for a in absorbed)},
                attrs=dict(x_zp=dq.attr("zero_point"), w_zp=tuple(int(v) for v in np.broadcast_to(wq.zero_point, (o,))),
                           mult=tuple(float(v) for v in mult), y_zp=qn.attr("zero_point"),
                           y_dtype=qn.attr("dtype"), lo=lo, hi=hi))


def quant_gemm(g: Graph) -> Graph:
    consts = dict(g.constants)
    new, removed = {}, set()
    for n in g.nodes:
        m = _match(g, n)
        if m is None or m["attrs"]["y_dtype"] not in QRANGE:
            continue
        wn, bn = f"{n.name}__wq", f"{n.name}__bq"
        consts[wn], consts[bn] = m["w"], m["b"]
        new[n.name] = make_node(n.name, "QGemm", [m["x"], wn, bn], [m["out"]], **m["attrs"])
        removed |= m["old"] - {n.name}
    if not new:
        return g
    return _drop_dead(g.rewrite([new.get(n.name, n) for n in g.nodes if n.name not in removed], consts))
