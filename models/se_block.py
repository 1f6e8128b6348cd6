"""An MBConv block with squeeze-and-excitation as timm and torchvision export it (torch.onnx.export):

  x -> DW k x k (+BN) -> act -> a ─┬─ ReduceMean(axes 2,3, keepdims) | GlobalAveragePool
                                   │    -> Conv 1x1 +bias (reduce) -> se_act -> Conv 1x1 +bias (expand)
                                   │    -> Sigmoid | HardSigmoid(1/6, 1/2)
                                   └─ Mul(a, gate) -> PW 1x1 (+BN) [-> + x]

EfficientNet (timm): act SiLU (Sigmoid + Mul), se_act SiLU, gate Sigmoid, ReduceMean.
MobileNetV3 (timm): act ReLU / HardSwish, se_act ReLU, gate HardSigmoid(alpha 1/6), ReduceMean.
torchvision: AdaptiveAvgPool2d(1) exports as GlobalAveragePool.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from .common import GraphBuilder, conv_out_size


def mbconv_se(cin: int = 24, cout: int = 40, h: int = 9, w: int | None = None, stride: int = 1,
              kernel: int = 3, batch: int = 1, act: str = "silu", se_act: str = "silu", gate: str = "sigmoid",
              se_mid: int = 6, mean: str = "reducemean", residual: bool = False, opset: int = 17,
              hswish_form: str = "op", seed: int = 0) -> onnx.ModelProto:
    """One DW -> act -> SE -> PW block with input ``x`` [batch, cin, h, w] and output ``y``."""
    w = h if w is None else w
    if gate not in ("sigmoid", "hardsigmoid") or mean not in ("reducemean", "gap"):
        raise ValueError(f"gate must be sigmoid|hardsigmoid and mean reducemean|gap, got {gate!r}, {mean!r}")
    pad = kernel // 2
    oh, ow = (conv_out_size(n, kernel, stride, 1, pad, pad, None) for n in (h, w))
    if residual and (stride != 1 or cin != cout):
        raise ValueError("residual needs stride 1 and cin == cout")
    g = GraphBuilder(seed=seed, opset=opset, hswish_form=hswish_form)
    t = g.conv_bn("dw", "x", cin, cin, kernel, group=cin, stride=stride)
    a = g.activation("dw_act", t, act)
    if mean == "gap":
        m = g.node("GlobalAveragePool", "se_mean", [a])
    elif opset >= 18:
        g.initializers.append(numpy_helper.from_array(np.array([2, 3], np.int64), g._claim("se_axes")))
        axes = "se_axes"
        m = g.node("ReduceMean", "se_mean", [a, axes], keepdims=1)
    else:
        m = g.node("ReduceMean", "se_mean", [a], axes=[2, 3], keepdims=1)
    r = g.conv("se_reduce", m, g.he_weight(se_mid, cin, 1), g.rng.normal(0, 0.1, se_mid))
    r = g.activation("se_act", r, se_act)
    e = g.conv("se_expand", r, g.he_weight(cin, se_mid, 1, gain=1.0), g.rng.normal(0, 0.1, cin))
    if gate == "sigmoid":
        s = g.node("Sigmoid", "se_gate", [e])
    else:
        s = g.node("HardSigmoid", "se_gate", [e], alpha=1.0 / 6.0, beta=0.5)
    t = g.node("Mul", "se_mul", [a, s])
    t = g.conv_bn("pw", t, cin, cout, gain=1.0)
    if residual:
        t = g.node("Add", "add", ["x", t])
    return g.model("mbconv_se", [batch, cin, h, w], t, [batch, cout, oh, ow])
