"""QDQ GlobalAveragePool → QGlobalAvgPool: DequantizeLinear(x) → GlobalAveragePool → QuantizeLinear
becomes one integer pool, as ONNX Runtime runs the pattern (QLinearGlobalAveragePool: the int32
sum of each channel, biased by −x_zp·(H·W), times the float32 x_scale / (y_scale · float(H·W)),
clamped, rounded half to even, plus y_zp -- MLAS's order). Applied after quant_fuse on the CPU
target only (its kernel is schedules/quant_nhwc_ops.py's).

    QGlobalAvgPool  inputs (xq (N, C, H, W) run-time); attrs x_zp, image (H·W), mult (float32),
                    y_zp, y_dtype, lo, hi (the output dtype's range)
"""

from __future__ import annotations

import numpy as np

from fusion.core.ir import Graph, make_node
from fusion.frontend.onnx_ops_quant import QRANGE
from passes.quant_fuse import _drop_dead, _single_consumer


def quant_pool(g: Graph) -> Graph:
    new, drop = {}, set()
    for n in g.nodes:
        if n.op_type != "GlobalAveragePool" or len(g.types[n.inputs[0]].shape) != 4:
            continue
        dq, q = g.producer(n.inputs[0]), _single_consumer(g, n.outputs[0])
        if dq is None or q is None or dq.op_type != "DequantizeLinear" or q.op_type != "QuantizeLinear":
            continue
        xt = g.types[dq.inputs[0]]
        if xt.dtype not in QRANGE or q.attr("dtype") != xt.dtype:
            continue
        image = int(xt.shape[2]) * int(xt.shape[3])
        mult = np.float32(dq.attr("scale")) / (np.float32(q.attr("scale")) * np.float32(image))
        lo, hi = QRANGE[q.attr("dtype")]
        new[n.name] = make_node(n.name, "QGlobalAvgPool", [dq.inputs[0]], q.outputs, x_zp=dq.attr("zero_point"),
                                image=image, mult=float(np.float32(mult)), y_zp=q.attr("zero_point"),
                                y_dtype=q.attr("dtype"), lo=lo, hi=hi)
        drop.add(q.name)
    if not new:
        return g
    return _drop_dead(g.rewrite([new.get(n.name, n) for n in g.nodes if n.name not in drop]))
