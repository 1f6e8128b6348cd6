"""Which int8 tensors of a quantized graph are stored channels-last (NHWC) on the CPU.

On a VNNI CPU the int8 convolutions run in NHWC (schedules/quant_nhwc.py): vpdpbusd reduces 4
consecutive channels, the depthwise taps vectorise over channels, and the requantization
writes whole channel vectors, as ONNX Runtime's own int8 kernels (MLAS, NHWC) do. A tensor is
stored NHWC when its producer and every consumer read and write both layouts (the quantize and
dequantize kernels, QAdd, and the QConv/QDwSep kernels of the NHWC path); any other tensor stays
NCHW, so a graph output or a float op's input keeps the graph's layout. The graph's types stay
logical (NCHW): this decides only the buffers the kernels agree on.
"""

from __future__ import annotations

import numpy as np

from fusion.core.ir import Graph, Node
from schedules.quant_vnni import has_vnni

_PRODUCERS = ("QuantizeLinear", "QConv", "QDwSep", "QAdd", "QGlobalAvgPool")
_CONSUMERS = ("DequantizeLinear", "QConv", "QDwSep", "QAdd", "QGlobalAvgPool")


def _attrs(n: Node, prefix: str = "") -> dict:
    return {k[len(prefix):]: v for k, v in n.attrs if k.startswith(prefix)}


def fits_int8(w: np.ndarray, w_zp) -> bool:
    """w − w_zp (per output channel) fits int8: vpdpbusd's signed operand; and at least 16 outputs
    (one whole vpdpbusd: with fewer the requantization's region shrinks the 16-lane loop)."""
    if w.shape[0] < 16:
        return False
    wz = w.astype(np.int32) - np.asarray(w_zp, np.int32).reshape(-1, *([1] * (w.ndim - 1)))
    return bool(wz.min(initial=0) >= -128 and wz.max(initial=0) <= 127)


def conv_form(a: dict, cin: int) -> str | None:
    """'dw' (one channel per group, any kernel), 'dense' (group 1) or None (other groupings)."""
    if a["group"] == 1:
        return "dense"
    if a["group"] == cin and len(a["w_zp"]) == cin:
        return "dw"
    return None


def nhwc_node(n: Node, g: Graph) -> bool:
    """Whether this node's kernel is the NHWC-capable one (reads and writes either layout)."""
    if not has_vnni():
        return False
    if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
        return len(g.types[n.inputs[0]].shape) == 4
    if n.op_type in ("QAdd", "QGlobalAvgPool"):
        return len(g.types[n.inputs[0]].shape) == 4
    if n.op_type == "QConv":
        a = _attrs(n)
        form = conv_form(a, g.types[n.inputs[0]].shape[1])
        return form == "dw" or (form == "dense" and fits_int8(g.constants[n.inputs[1]], a["w_zp"]))
    if n.op_type == "QDwSep":
        ad, ap = _attrs(n, "dw_"), _attrs(n, "pw_")
        return (conv_form(ad, g.types[n.inputs[0]].shape[1]) == "dw"
                and fits_int8(g.constants[n.inputs[3]], ap["w_zp"]))
    return False


def channels_last(g: Graph) -> frozenset[str]:
    """The int8 tensors stored NHWC: 4-D, not a graph input or output, written and read only by
    NHWC-capable kernels."""
    if not has_vnni():
        return frozenset()
    ok = {n.name: nhwc_node(n, g) for n in g.nodes}
    out = set()
    for n in g.nodes:
        if n.op_type not in _PRODUCERS or not ok[n.name]:
            continue
        t = n.outputs[0]
        cons = g.consumers_of(t)
        if (t in g.outputs or len(g.types[t].shape) != 4 or not cons
                or not all(c.op_type in _CONSUMERS and ok[c.name] for c in cons)):
            continue
        out.add(t)
    return frozenset(out)
