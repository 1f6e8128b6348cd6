"""Modeled cost of the kernels outside the fused chains (stem conv, expansion convs, pooling,
classifier, layout conversions) on the simulated SoC: a roofline estimate, launch + max(bytes /
HBM bandwidth, FLOPs / peak of the unit). These kernels are identical in the fused and unfused
variants of a model, so they shift both totals alike; they are labelled 'roofline estimate'."""

from __future__ import annotations

import numpy as np

from fusion.cost import (
    _cube_peak_flops_per_us,
    _launch_us,
    _vector_peak_flops_per_us,
)
from fusion.core.soc import SocSpec

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


def other_kernel_cost(cm, step, soc: SocSpec) -> dict:
    node = cm.graph.node(step.name)
    itemsize = np.dtype(cm.dtype).itemsize
    nbytes = int(np.prod(step.out_shape)) * itemsize
    for p in step.params:
        if isinstance(p, str):
            nbytes += int(np.prod(cm.graph.types[p].shape)) * itemsize
        else:
            nbytes += p.numpy().nbytes
    flops = _flops(node, step.out_shape, cm.graph)
    unit = "cube" if node.op_type in CUBE_OPS else "vector"
    peak = _cube_peak_flops_per_us(soc, cm.dtype) if unit == "cube" else _vector_peak_flops_per_us(soc, itemsize)
    mem_us = nbytes / (soc.hbm_gbps * 1e3)  # GB/s → bytes per µs
    comp_us = flops / peak
    launch = _launch_us(soc, soc.vector_cores)
    return {"name": step.name, "op": node.op_type, "time_us": launch + max(mem_us, comp_us), "gm_bytes": nbytes,
            "flops": flops, "unit": unit, "bound": "memory" if mem_us >= comp_us else "compute",
            "figures": "modeled (roofline estimate)"}
