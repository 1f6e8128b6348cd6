"""Re-parameterizable networks in their training form, written as torch.onnx.export writes them in
eval mode (opset 17; the exporter folds each Conv's own BN into it, so a branch is one Conv with a
bias, while a BN on the block input, the identity branch, stays a BatchNormalization):

- MobileOne (timm byobnet.MobileOneBlock): per block `scale + identity`, then `out += kxk_i(x)` for
  each of `branches` k x k branches, then ReLU. A missing branch is Python's 0, which the exporter
  writes as `Add(t, 0)`. Each stage block is a DW MobileOneBlock (3x3, group C; a 1x1 DW scale
  branch; the identity BN where stride 1) and a PW one (1x1 branches; the identity BN where the
  channels match).
- RepViT (timm repvit.RepVggDw, legacy=False): `BN(dw3x3(x) + dw1x1(x) + x)`, an optional
  squeeze-excite, and the residual channel mixer `x + PW(GELU(PW(x)))`, GELU written out with Erf.

`train=False` writes the re-parameterized (inference) form: one conv per block, the reference for
how many chains the training form should fuse once the branches are merged.
"""

from __future__ import annotations

import numpy as np
import onnx

from .common import GraphBuilder

OPSET = 17


def _conv(g: GraphBuilder, name: str, x: str, cin: int, cout: int, k: int, stride: int = 1,
          group: int = 1, gain: float = 1.0) -> str:
    """A Conv with the exporter's folded BN: a weight and a bias."""
    w = g.he_weight(cout, cin // group, k, gain)
    b = g.rng.normal(0.0, 0.1, cout)
    return g.conv(name, x, w, b, stride=stride, group=group, pads=[k // 2] * 4)


def _identity_bn(g: GraphBuilder, name: str, x: str, c: int) -> str:
    return g.batchnorm(name, x, g.bn_stats(c))


def _add0(g: GraphBuilder, name: str, t: str) -> str:
    """`tensor + 0` (an absent branch in Python), as the exporter writes it."""
    return g.node("Add", name, [t, g.const("zero", 0.0)])


def mobileone_block(g: GraphBuilder, name: str, x: str, cin: int, cout: int, k: int, stride: int,
                    depthwise: bool, branches: int, train: bool) -> str:
    group = cin if depthwise else 1
    if not train:
        return g.node("Relu", f"{name}_act", [_conv(g, f"{name}_reparam", x, cin, cout, k, stride, group, 2.0)])
    scale = _conv(g, f"{name}_scale", x, cin, cout, 1, stride, group) if k > 1 else None
    ident = _identity_bn(g, f"{name}_id", x, cin) if cin == cout and stride == 1 else None
    if scale is not None and ident is not None:
        out = g.node("Add", f"{name}_add_si", [scale, ident])
    elif scale is not None or ident is not None:
        out = _add0(g, f"{name}_add_si", scale or ident)
    else:
        out = None   # 0 + 0 stays a Python int
    gain = 2.0 / (branches + (scale is not None) + (ident is not None))
    for i in range(branches):
        t = _conv(g, f"{name}_kxk{i}", x, cin, cout, k, stride, group, gain)
        out = _add0(g, f"{name}_add{i}", t) if out is None else g.node("Add", f"{name}_add{i}", [out, t])
    return g.node("Relu", f"{name}_act", [out])


# (blocks, width) per stage of MobileOne-S0 (timm: num_blocks (2, 8, 10, 1), widths 64/128/256/512 x
# (0.75, 1, 1, 2), 4 conv branches); `stages` may shrink it for tests
MOBILEONE_S0 = ((2, 48), (8, 128), (10, 256), (1, 1024))


def mobileone(stages=MOBILEONE_S0, branches: int = 4, resolution: int = 224, stem: int = 48,
              train: bool = True, batch: int = 1, num_classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    g = GraphBuilder(seed=seed, opset=OPSET)
    x = mobileone_block(g, "stem", "x", 3, stem, 3, 2, False, 1, train)
    c = stem
    for s, (n, width) in enumerate(stages):
        for i in range(n):
            stride = 2 if i == 0 else 1
            name = f"s{s}b{i}"
            x = mobileone_block(g, f"{name}_dw", x, c, c, 3, stride, True, branches, train)
            x = mobileone_block(g, f"{name}_pw", x, c, width, 1, 1, False, branches, train)
            c = width
    x = g.node("GlobalAveragePool", "gap", [x])
    x = g.node("Flatten", "flat", [x])
    y = g.gemm("fc", x, c, num_classes)
    return g.model("mobileone" + ("" if train else "_reparam"), [batch, 3, resolution, resolution], y,
                   [batch, num_classes])


def _gelu(g: GraphBuilder, name: str, x: str) -> str:
    """GELU as opset-17 exporters write it: x * 0.5 * (1 + erf(x / sqrt(2)))."""
    d = g.node("Div", f"{name}_div", [x, g.const("sqrt2", float(np.sqrt(2.0)))])
    e = g.node("Erf", f"{name}_erf", [d])
    a = g.node("Add", f"{name}_add", [e, g.const("one", 1.0)])
    m = g.node("Mul", f"{name}_mul", [x, a])
    return g.node("Mul", name, [m, g.const("half", 0.5)])


def _se(g: GraphBuilder, name: str, x: str, c: int) -> str:
    r = max(8, c // 4)
    s = g.node("GlobalAveragePool", f"{name}_gap", [x])
    s = g.node("Relu", f"{name}_relu", [_conv(g, f"{name}_fc1", s, c, r, 1)])
    s = g.node("Sigmoid", f"{name}_sig", [_conv(g, f"{name}_fc2", s, r, c, 1)])
    return g.node("Mul", name, [x, s])


def repvit_block(g: GraphBuilder, name: str, x: str, c: int, se: bool, train: bool) -> str:
    """Stride-1 RepViT block: RepVggDw token mixer, optional SE, residual FFN channel mixer."""
    if train:
        dw3 = _conv(g, f"{name}_dw3", x, c, c, 3, 1, c)
        dw1 = g.conv(f"{name}_dw1", x, g.he_weight(c, 1, 1, 1.0), g.rng.normal(0, 0.1, c), group=c, pads=[0] * 4)
        t = g.node("Add", f"{name}_add1", [dw3, dw1])
        t = g.node("Add", f"{name}_add2", [t, x])
        t = g.batchnorm(f"{name}_bn", t, g.bn_stats(c))
    else:
        t = _conv(g, f"{name}_dw", x, c, c, 3, 1, c)
    if se:
        t = _se(g, f"{name}_se", t, c)
    f = _gelu(g, f"{name}_gelu", _conv(g, f"{name}_pw1", t, c, 2 * c, 1, gain=2.0))
    f = _conv(g, f"{name}_pw2", f, 2 * c, c, 1)
    return g.node("Add", f"{name}_res", [t, f])


def repvit(stages=((2, 48), (2, 96)), resolution: int = 56, train: bool = True, batch: int = 1,
           num_classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """A RepViT of `stages` ((blocks, channels), ...): a stride-4 stem, then per stage a DW s2 + PW
    downsample (from the second stage on) and `blocks` RepViT blocks, SE on every other one."""
    g = GraphBuilder(seed=seed, opset=OPSET)
    c = stages[0][1]
    x = g.node("Relu", "stem_act", [_conv(g, "stem1", "x", 3, c // 2, 3, 2, gain=2.0)])
    x = _conv(g, "stem2", x, c // 2, c, 3, 2)
    for s, (n, width) in enumerate(stages):
        if s:
            x = _conv(g, f"s{s}_down_dw", x, c, c, 3, 2, c)
            x = _conv(g, f"s{s}_down_pw", x, c, width, 1)
            c = width
        for i in range(n):
            x = repvit_block(g, f"s{s}b{i}", x, c, se=i % 2 == 0, train=train)
    x = g.node("Flatten", "flat", [g.node("GlobalAveragePool", "gap", [x])])
    y = g.gemm("fc", x, c, num_classes)
    return g.model("repvit" + ("" if train else "_reparam"), [batch, 3, resolution, resolution], y,
                   [batch, num_classes])
