"""Modeled cost of the kernels outside the fused chains (stem conv, expansion convs, pooling,
classifier, layout conversions, vision ops) on the simulated SoC: each op is the vendor-like
kernel that would run it (fusion/cost/vendor_layers.Layer), lowered to a program and timed by the
step simulator like every other kernel (fusion/cost/vendor_baseline.layer_kernel). These kernels
are identical in the fused and unfused variants of a model, so they shift both totals alike."""

from __future__ import annotations

import numpy as np

from fusion.core.soc import SocSpec
from fusion.cost.vendor_baseline import layer_kernel
from fusion.cost.vendor_layers import ACT_OPS, POOL_OPS, Layer

CUBE_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul"}


def _flops(node, out_shape, graph) -> int:
    out = int(np.prod(out_shape))
    if node.op_type == "Conv":
        w = graph.types[node.inputs[1]].shape
        return 2 * out * int(np.prod(w[1:]))
    if node.op_type == "ConvTranspose":  # every input pixel scatters a (O/g) x kh x kw patch
        w = graph.types[node.inputs[1]].shape
        return 2 * int(np.prod(graph.types[node.inputs[0]].shape)) * int(np.prod(w[1:]))
    if node.op_type in ("Gemm", "MatMul"):
        a = graph.types[node.inputs[0]].shape
        k = a[0] if node.attr("transA", 0) else a[-1]
        return 2 * out * int(k)
    return 2 * max(out, int(np.prod(graph.types[node.inputs[0]].shape)))


def _nchw(shape) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a logical shape (a 5-D NC1HWC0 shape: C = C1 * C0; fewer dims: ones)."""
    s = [int(d) for d in shape]
    if len(s) == 5:
        return s[0], s[1] * s[4], s[2], s[3]
    s = (s + [1, 1, 1, 1])[:4] if len(s) < 4 else s[:3] + [int(np.prod(s[3:]))]
    return s[0], s[1], s[2], s[3]


def node_layer(graph, node) -> Layer:
    """The vendor-like kernel that runs one ONNX node."""
    op, name = node.op_type, node.name
    out = graph.types[node.outputs[0]].shape
    n, cin, h, w = _nchw(graph.types[node.inputs[0]].shape)
    if op in ("Conv", "ConvTranspose"):
        ws = [int(d) for d in graph.types[node.inputs[1]].shape]
        group = int(node.attr("group", 1))
        kh, kw = (ws[2], ws[3]) if len(ws) == 4 else (1, 1)
        _n, cout, oh, ow = _nchw(out)
        if op == "ConvTranspose":   # a GEMM per input pixel: Cin -> (Cout / g) x kh x kw, scattered
            return Layer("conv", name, n, cin, ws[1] * kh * kw * group, h, w, h, w, members=(name,))
        stride = int((node.attr("strides") or (1, 1))[0])
        if group > 1 and group == cin == cout:
            return Layer("dwconv", name, n, cin, cout, h, w, oh, ow, kh, kw, stride, members=(name,))
        return Layer("conv", name, n, max(1, cin // group), cout, h, w, oh, ow, kh, kw, stride, members=(name,))
    if op in ("Gemm", "MatMul"):
        a = [int(d) for d in graph.types[node.inputs[0]].shape]
        k = a[0] if node.attr("transA", 0) else a[-1]
        m = int(np.prod(a)) // k
        return Layer("gemm", name, m, k, int(out[-1]), 1, 1, 1, 1, members=(name,))
    if op in POOL_OPS:
        _n, c, oh, ow = _nchw(out)
        k = node.attr("kernel_shape") or (h, w)
        s = int((node.attr("strides") or (1, 1))[0]) if "Global" not in op else 1
        return Layer("pool", name, n, c, c, h, w, oh, ow, int(k[0]), int(k[-1]), s, members=(name,))
    on, oc, oh, ow = _nchw(out)
    inputs = [i for i in node.inputs if i and not graph.is_constant(i)]
    return Layer("eltwise", name, on, oc, oc, oh * ow, 1, oh * ow, 1, act=ACT_OPS.get(op, "none"),
                 residual=len(inputs) > 1, members=(name,))


def other_kernel_cost(cm, step, soc: SocSpec) -> dict:
    node = cm.graph.node(step.name)
    k = layer_kernel(soc, node_layer(cm.graph, node), str(np.dtype(cm.dtype)))
    memory = max(k.mte2_us, k.mte3_us) >= max(k.cube_us, k.vector_us, k.mte1_us)
    return {"name": step.name, "op": node.op_type, "time_us": k.time_us,
            "gm_bytes": int(k.counts.get("gm_read_bytes", 0) + k.counts.get("gm_write_bytes", 0)),
            "flops": _flops(node, step.out_shape, cm.graph),
            "unit": "cube" if node.op_type in CUBE_OPS else k.engine,
            "bound": "memory" if memory else "compute", "kernel": k.kind,
            "figures": "modeled (vendor-like program on the step simulator)"}
