"""QDQ → quantized ops: DequantizeLinear → Conv → [Relu | Clip] → QuantizeLinear becomes one QConv
on the integers, and a depthwise QConv whose only consumer is a 1×1 QConv becomes one QDwSep
(the fused int8 DW→PW block); DequantizeLinear(a), DequantizeLinear(b) → Add → QuantizeLinear
becomes QAdd. Everything else keeps its real QuantizeLinear / DequantizeLinear ops around float
kernels (ORT's QDQ semantics, schedules/quant_ops.py).

Node forms written here (the contract of schedules/quant_ops.py):

    QConv   inputs (xq, wq, bq): xq uint8/int8 run-time, wq int8/uint8 constant (O, C/g, kh, kw),
            bq int32 constant (O,); attrs kernel strides pads dilations group (as Conv),
            x_zp=int, w_zp=(O ints), mult=(O float32: x_scale*w_scale[o]/y_scale, ORT's order),
            y_zp=int, y_dtype, lo/hi = the output clamp (dtype range ∩ the absorbed activation)
    QDwSep  inputs (xq, w_dw, b_dw, w_pw, b_pw); attrs dw_* and pw_* the two QConvs' attrs
    QAdd    inputs (aq, bq) same shape; attrs a_scale a_zp b_scale b_zp y_scale y_zp y_dtype lo hi

Requantization follows ONNX Runtime's QLinearConv (MLAS): int32 accumulator plus int32 bias,
times the float32 multiplier, clamped to [lo - y_zp, hi - y_zp], rounded half to even, plus
y_zp. The DW intermediate of a QDwSep is exactly the int8 tensor the model's QuantizeLinear
after the DW writes.
"""

from __future__ import annotations

import numpy as np

from fusion.core.ir import Graph, Node, make_node
from fusion.frontend.onnx_ops_quant import QRANGE
from passes.records import Refusal

QUANT_OPS = ("QConv", "QDwSep", "QAdd", "QGemm", "QGlobalAvgPool", "QuantizeLinear",
             "DequantizeLinear")   # QGemm, QGlobalAvgPool: passes/quant_gemm, quant_pool (llvm)
PASS = "quant_fuse"


def is_quantized(g: Graph) -> bool:
    return any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in g.nodes) or bool(g.quant)


def _q(x: float, scale: float, zp: int, dtype: str) -> int:
    """QuantizeLinear of one float (bounds of an absorbed Clip)."""
    lo, hi = QRANGE[dtype]
    return int(np.clip(np.rint(np.float32(x) / np.float32(scale)) + zp, lo, hi))


def _single_consumer(g: Graph, t: str) -> Node | None:
    cons = g.consumers_of(t)
    return cons[0] if len(cons) == 1 and t not in g.outputs else None


def _output_quant(g: Graph, conv_out: str) -> tuple[Node, list[Node], tuple[int, int]] | str:
    """The QuantizeLinear after conv_out (through at most one Relu/Clip), the absorbed nodes and the
    output clamp; or why not."""
    nxt = _single_consumer(g, conv_out)
    absorbed: list[Node] = []
    act = None
    if nxt is not None and nxt.op_type in ("Relu", "Clip"):
        act, absorbed = nxt, [nxt]
        nxt = _single_consumer(g, nxt.outputs[0])
    if nxt is None or nxt.op_type != "QuantizeLinear":
        return "its output is not quantized by one QuantizeLinear"
    dt, s, zp = nxt.attr("dtype"), nxt.attr("scale"), nxt.attr("zero_point")
    lo, hi = QRANGE[dt]
    if act is not None and act.op_type == "Relu":
        lo = max(lo, zp)
    elif act is not None:
        if np.isfinite(act.attr("min")):
            lo = max(lo, _q(act.attr("min"), s, zp, dt))
        if np.isfinite(act.attr("max")):
            hi = min(hi, _q(act.attr("max"), s, zp, dt))
    return nxt, absorbed, (lo, hi)


def _match_conv(g: Graph, n: Node) -> tuple[dict, list[Node], list[str]] | str:
    """The QConv attributes, the nodes it replaces, its inputs; or why not."""
    dq = g.producer(n.inputs[0])
    if dq is None or dq.op_type != "DequantizeLinear":
        return "its input is not a DequantizeLinear"
    wq = g.quant.get(n.inputs[1])
    if wq is None or wq.values.dtype.name not in ("int8", "uint8"):
        return "its weight is not an int8/uint8 DequantizeLinear constant"
    o = wq.values.shape[0]
    if wq.axis not in (None, 0):
        return f"its weight is quantized along axis {wq.axis} (per output channel or per tensor only)"
    sw = np.broadcast_to(wq.scale, (o,)).astype(np.float32)
    sx = np.float32(dq.attr("scale"))
    bias = np.zeros(o, np.int32)
    if len(n.inputs) > 2 and n.inputs[2]:
        bq = g.quant.get(n.inputs[2])
        if bq is None or bq.values.dtype != np.int32 or np.any(bq.zero_point != 0):
            return "its bias is not an int32 DequantizeLinear constant with zero point 0"
        if not np.array_equal(np.broadcast_to(bq.scale, (o,)), (sx * sw).astype(np.float32)):
            return "its bias scale is not x_scale * w_scale"
        bias = bq.values.astype(np.int32)
    out = _output_quant(g, n.outputs[0])
    if isinstance(out, str):
        return out
    qn, absorbed, (lo, hi) = out
    sy = np.float32(qn.attr("scale"))
    mult = ((sx * sw).astype(np.float32) / sy).astype(np.float32)  # ORT: X_scale * W_scale[i] / Y_scale
    attrs = dict(kernel=n.attr("kernel"), strides=n.attr("strides"), pads=n.attr("pads"),
                 dilations=n.attr("dilations"), group=n.attr("group"), x_zp=dq.attr("zero_point"),
                 w_zp=tuple(int(v) for v in np.broadcast_to(wq.zero_point, (o,))),
                 mult=tuple(float(v) for v in mult), y_zp=qn.attr("zero_point"),
                 y_dtype=qn.attr("dtype"), lo=lo, hi=hi)
    return attrs, [n, *absorbed, qn], [dq.inputs[0], wq.values, bias, qn.outputs[0]]


def _is_dw(a: dict, cin: int) -> bool:
    return a["group"] == cin and len(a["w_zp"]) == cin


def _is_pw(a: dict) -> bool:
    return (a["kernel"] == (1, 1) and a["strides"] == (1, 1) and a["pads"] == (0, 0, 0, 0)
            and a["group"] == 1)


def quant_fuse(g: Graph, fuse: bool = True) -> tuple[Graph, list[Refusal]]:
    """QDQ convs → QConv (always: they are the model's int8 ops), then DW→PW pairs → QDwSep
    (fuse=False keeps them two QConv kernels) and quantized residual Adds → QAdd."""
    refusals: list[Refusal] = []
    consts = dict(g.constants)
    removed: set[str] = set()
    qconv: dict[str, Node] = {}     # conv name -> its QConv
    for n in g.nodes:
        if n.op_type != "Conv":
            continue
        m = _match_conv(g, n)
        if isinstance(m, str):
            refusals.append(Refusal(PASS, (n.name,), f"Conv stays float between its QDQ ops: {m}"))
            continue
        attrs, old, (xq, w, b, out) = m
        wn, bn = f"{n.name}__wq", f"{n.name}__bq"
        consts[wn], consts[bn] = w, b
        qconv[n.name] = make_node(n.name, "QConv", [xq, wn, bn], [out], **attrs)
        removed |= {o.name for o in old}
    nodes = [qconv.get(n.name, n) for n in g.nodes if n.name in qconv or n.name not in removed]
    g2 = _drop_dead(g.rewrite(nodes, consts))
    if fuse:
        g2, why = _fuse_pairs(g2)
        refusals += why
    return _drop_dead(_quant_adds(g2)), refusals


def _drop_dead(g: Graph) -> Graph:
    """Drop DequantizeLinear nodes nobody reads any more (the QConvs read the integers)."""
    while True:
        dead = {n.name for n in g.nodes if not any(g.uses(t) for t in n.outputs if t)}
        if not dead:
            return g
        g = g.rewrite([n for n in g.nodes if n.name not in dead])


def _fuse_pairs(g: Graph) -> tuple[Graph, list[Refusal]]:
    why: list[Refusal] = []
    nodes = {n.name: n for n in g.nodes}
    for dw in g.nodes:
        if dw.op_type != "QConv" or dw.name not in nodes:
            continue
        a = dict(dw.attrs)
        if not _is_dw(a, g.types[dw.inputs[0]].shape[1]):
            continue
        pw = _single_consumer(g, dw.outputs[0])
        if pw is None or pw.op_type != "QConv" or not _is_pw(dict(pw.attrs)):
            why.append(Refusal("quant_fuse", (dw.name,), "int8 DW is not followed by exactly one "
                                                         "1x1 stride-1 QConv"))
            continue
        attrs = {f"dw_{k}": v for k, v in dw.attrs} | {f"pw_{k}": v for k, v in pw.attrs}
        fused = make_node(dw.name, "QDwSep", [*dw.inputs, *pw.inputs[1:]], pw.outputs,
                          members=(dw.name, pw.name), **attrs)
        nodes[dw.name] = fused
        del nodes[pw.name]
    return g.rewrite(nodes.values()), why


def _quant_adds(g: Graph) -> Graph:
    """DQ(a) + DQ(b) → Q  ⇒  QAdd(a, b) (ORT runs it as QLinearAdd)."""
    new: dict[str, Node] = {}
    drop: set[str] = set()
    for n in g.nodes:
        if n.op_type != "Add":
            continue
        da, db = (g.producer(t) for t in n.inputs)
        q = _single_consumer(g, n.outputs[0])
        if (da is None or db is None or q is None or da.op_type != "DequantizeLinear"
                or db.op_type != "DequantizeLinear" or q.op_type != "QuantizeLinear"
                or g.types[da.inputs[0]].shape != g.types[db.inputs[0]].shape):
            continue
        dt = q.attr("dtype")
        lo, hi = QRANGE[dt]
        new[n.name] = make_node(n.name, "QAdd", [da.inputs[0], db.inputs[0]], q.outputs,
                                a_scale=da.attr("scale"), a_zp=da.attr("zero_point"),
                                b_scale=db.attr("scale"), b_zp=db.attr("zero_point"),
                                y_scale=q.attr("scale"), y_zp=q.attr("zero_point"),
                                y_dtype=dt, lo=lo, hi=hi)
        drop.add(q.name)
    return g.rewrite([new.get(n.name, n) for n in g.nodes if n.name not in drop])
