"""The tolerance of `check` on an int8 (QDQ) model.

The reference is ONNX Runtime's int8 kernels (fusion/reference.QDQ_CONFIG). Integer paths
(QConv, the fused QDwSep, QAdd, QuantizeLinear/DequantizeLinear, data movement) follow ORT's
arithmetic step for step, so a model made only of them must match exactly (tolerance 0). Where
the graph keeps float operators between its Q/DQ pairs (e.g. GlobalAveragePool, Gemm, which ORT
runs as QLinearGlobalAveragePool / QGemm), a float step can round the other way: the tolerance is
one quantization step of the output's DequantizeLinear, and the check line names those operators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from passes.quant_fuse import QUANT_OPS

EXACT_OPS = frozenset(QUANT_OPS) | {"Flatten", "Reshape", "Identity", "ToNC1HWC0", "ToNCHW"}


@dataclass(frozen=True)
class Int8Tolerance:
    tolerance: float                 # relative to the output's range, as check's max_rel
    step: float                      # the output's quantization step (its DequantizeLinear scale)
    float_ops: tuple[str, ...]       # float operators between Q/DQ pairs (empty: exact required)

    def describe(self, max_abs: float) -> str:
        how = ("exact required: integer paths only" if not self.float_ops else
               f"at most 1 step: float {', '.join(self.float_ops)} between Q/DQ")
        return (f"int8: {max_abs / self.step:.0f} output step(s) of {self.step:.3g} ({how}); "
                f"reference ORT int8 kernels (session.qdqisint8allowed=1)")


def int8_tolerance(graph, ref: dict[str, np.ndarray]) -> Int8Tolerance | None:
    """None for a model without quantized ops or with a float (not dequantized) output."""
    if not any(n.op_type in QUANT_OPS for n in graph.nodes):
        return None
    rels, steps = [], []
    for name in graph.outputs:
        p = graph.producer(name)
        if p is None or p.op_type != "DequantizeLinear":
            return None
        step = float(p.attr("scale"))
        top = float(np.abs(np.asarray(ref[name], np.float64)).max()) if np.size(ref[name]) else 0.0
        rels.append(step / top if top > 0 else step)
        steps.append(step)
    float_ops = tuple(sorted({n.op_type for n in graph.nodes if n.op_type not in EXACT_OPS}))
    tol = 0.0 if not float_ops else min(rels) * (1 + 1e-6)
    return Int8Tolerance(tol, min(steps), float_ops)
