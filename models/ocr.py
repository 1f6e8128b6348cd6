"""Models that mimic what exporters of OCR/classification networks write (random weights, seeded).

The DW-separable blocks carry the patterns third-party exports contain: a per-tensor scale and
shift (`Mul` by a constant, `Add` of a constant) between the DW conv and its activation or after
the activation, hard-swish spelled as `HardSwish`, `x * HardSigmoid(x)` (alpha 1/6 or Paddle's
0.2), `x * Clip(x + 3, 0, 6) / 6` or `x * (Clip(x + 3, 0, 6) / 6)`, DW without an activation,
and squeeze-and-excitation (SE) between DW and PW. The heads use the operators such networks
end in: an FPN neck with Resize and Concat and a ConvTranspose head (detector), Reshape /
Transpose / MatMul / Softmax (recognizer), MaxPool after the stem (classifier).

Each builder's BLOCKS table is the one source of truth for its chains: `fusable_chains` counts
the DW→PW chains not blocked by SE, which the tests assert the compiler fuses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from .common import GraphBuilder


@dataclass(frozen=True)
class Blk:
    """One DW-separable block: DW k x k (stride) -> BN -> [affine] -> act -> [affine] -> [SE] -> PW."""
    name: str
    cout: int
    stride: int = 1
    act: str = "hardswish"     # relu | relu6 | hardswish | hsig02 | none
    affine: str = ""           # "" | pre (between DW-BN and act) | post (after the act)
    se: bool = False
    kernel: int = 3
    form: str = "op"           # hard-swish spelling: op | hardsigmoid | clip | gate


def se_blocked(b: Blk) -> bool:
    """The block's SE sits behind a leftover scale/shift after the act (affine "post"): not the
    exporters' SE form the fused kernel carries (passes/se_match.py), so the chain stays refused."""
    return b.se and b.affine == "post"


def fusable_chains(blocks: tuple[Blk, ...], se: bool = True) -> int:
    """Chains a compile fuses; se=False for a target without the SE kernel (npuir, -t ascend at fp32)."""
    return sum(1 for b in blocks if not (se_blocked(b) or (b.se and not se)))


def _hswish(g: GraphBuilder, name: str, x: str, form: str) -> str:
    if form == "op":
        return g.node("HardSwish", name, [x])
    if form == "hardsigmoid":
        gate = g.node("HardSigmoid", f"{name}_hsig", [x], alpha=1.0 / 6.0, beta=0.5)
        return g.node("Mul", name, [x, gate])
    shifted = g.node("Add", f"{name}_add", [x, g.const("hswish_3", 3.0)])
    clip = g.clip(f"{name}_clip", shifted, 0.0, 6.0)
    if form == "clip":   # (x * clip(x + 3, 0, 6)) / 6
        prod = g.node("Mul", f"{name}_mul", [x, clip])
        return g.node("Div", name, [prod, g.const("hswish_6", 6.0)])
    gate = g.node("Div", f"{name}_gate", [clip, g.const("hswish_6", 6.0)])   # x * (clip(x + 3, 0, 6) / 6)
    return g.node("Mul", name, [x, gate])


def _act(g: GraphBuilder, name: str, x: str, act: str, form: str = "op") -> str:
    if act == "hardswish":
        return _hswish(g, name, x, form)
    if act == "hsig02":   # Paddle's hard-swish variant: x * HardSigmoid(x; 0.2, 0.5)
        gate = g.node("HardSigmoid", f"{name}_hsig", [x], alpha=0.2, beta=0.5)
        return g.node("Mul", name, [x, gate])
    return g.activation(name, x, act)


def _affine(g: GraphBuilder, name: str, x: str) -> str:
    """Per-tensor scale and shift as exporters write a learnable affine: x * a + b."""
    a = g.initializer(f"{name}_scale", np.array(g.rng.uniform(0.8, 1.25), np.float32))
    b = g.initializer(f"{name}_shift", np.array(g.rng.normal(0.0, 0.1), np.float32))
    t = g.node("Mul", f"{name}_mul", [x, a])
    return g.node("Add", f"{name}_add", [t, b])


def _se(g: GraphBuilder, name: str, x: str, c: int) -> str:
    """Squeeze-and-excitation: GAP -> 1x1 (C/4) -> Relu -> 1x1 (C) -> HardSigmoid -> x * gate."""
    mid = max(8, c // 4)
    t = g.node("GlobalAveragePool", f"{name}_pool", [x])
    t = g.conv(f"{name}_fc1", t, g.he_weight(mid, c, 1), g.rng.normal(0, 0.1, mid))
    t = g.node("Relu", f"{name}_relu", [t])
    t = g.conv(f"{name}_fc2", t, g.he_weight(c, mid, 1, gain=1.0), g.rng.normal(0, 0.1, c))
    t = g.node("HardSigmoid", f"{name}_gate", [t], alpha=0.2, beta=0.5)
    return g.node("Mul", f"{name}_scale", [x, t])


def dw_block(g: GraphBuilder, b: Blk, x: str, cin: int) -> str:
    """Tensor names: {name}_dw (DW conv), {name}_pw_act (block output; {name}_pw_bn with act none)."""
    t = g.conv_bn(f"{b.name}_dw", x, cin, cin, b.kernel, group=cin, stride=b.stride)
    if b.affine == "pre":
        t = _affine(g, f"{b.name}_dw_aff", t)
    t = _act(g, f"{b.name}_dw_act", t, b.act, b.form)
    if b.affine == "post":
        t = _affine(g, f"{b.name}_dw_aff", t)
    if b.se:
        t = _se(g, f"{b.name}_se", t, cin)
    t = g.conv_bn(f"{b.name}_pw", t, cin, b.cout)
    return _act(g, f"{b.name}_pw_act", t, "relu" if b.act == "none" else b.act, b.form)


def _stem(g: GraphBuilder, cout: int) -> str:
    t = g.conv_bn("stem", "x", 3, cout, 3, stride=2)
    return _act(g, "stem_act", t, "hardswish")


# --- OCR-style detector (DB-like): DW-separable backbone, FPN neck, ConvTranspose head ----------
DETECTOR_BLOCKS = (
    Blk("s1b1", 24, 1, "relu", "pre"),
    Blk("s1b2", 32, 2, "relu", "post"),                      # -> stride 4
    Blk("s2b1", 40, 2, "hardswish", "pre", form="clip"),     # -> stride 8
    Blk("s2b2", 40, 1, "hardswish", "post", se=True, kernel=5),
    Blk("s3b1", 56, 2, "hsig02", "pre"),                     # -> stride 16
    Blk("s3b2", 56, 1, "hardswish", "", form="gate"),
    Blk("s3b3", 64, 1, "hardswish", "pre", se=True, form="hardsigmoid"),
)
DETECTOR_FEATURES = ("s1b2_pw_act", "s2b2_pw_act", "s3b3_pw_act")   # strides 4, 8, 16
DETECTOR_STRIDE = 16   # the deepest feature's
DETECTOR_OPS = ("Resize", "Concat", "ConvTranspose", "Sigmoid")


def ocr_detector(batch: int = 1, resolution: int = 64, seed: int = 0, opset: int = 14,
                 fold_bn: bool = False) -> onnx.ModelProto:
    """resolution: the square input side (64 for tests; 960 as an OCR detector runs, issue 30): a
    multiple of DETECTOR_STRIDE, so the FPN's x2 upsamplings meet their laterals."""
    if not isinstance(resolution, int) or resolution <= 0 or resolution % DETECTOR_STRIDE:
        raise ValueError(f"ocr_detector resolution must be a positive multiple of {DETECTOR_STRIDE}, got {resolution}")
    g = GraphBuilder(seed=seed, opset=opset, fold_bn=fold_bn)
    t, cin = _stem(g, 16), 16
    feats = []
    for b in DETECTOR_BLOCKS:
        t, cin = dw_block(g, b, t, cin), b.cout
        if t in DETECTOR_FEATURES:
            feats.append((t, cin))
    neck = 24
    lat = [g.conv(f"neck_lat{i}", f, g.he_weight(neck, c, 1, gain=1.0)) for i, (f, c) in enumerate(feats)]
    scales = g.initializer("neck_up2", np.array([1, 1, 2, 2], np.float32))
    empty = g.initializer("neck_roi", np.zeros(0, np.float32))
    top = lat[2]
    ups = [top]
    for i in (1, 0):   # top-down: upsample x2 (nearest) and add the lateral
        up = g.node("Resize", f"neck_up{i}", [top, empty, scales], mode="nearest")
        top = g.node("Add", f"neck_sum{i}", [lat[i], up])
        ups.append(top)
    outs = []
    for i, u in enumerate(ups):   # every level to stride 4, then concatenated
        for k in range(2 - i):
            u = g.node("Resize", f"neck_p{i}_up{k}", [u, empty, scales], mode="nearest")
        outs.append(u)
    t = g.node("Concat", "neck_cat", outs[::-1], axis=1)
    t = g.conv_bn("head_conv", t, 3 * neck, 16, 3)
    t = g.node("Relu", "head_relu", [t])
    w1 = g.rng.normal(0, np.sqrt(2.0 / (16 * 4)), (16, 8, 2, 2))
    t = g.node("ConvTranspose", "head_up1", [t, g.initializer("head_up1_W", w1)], strides=[2, 2])
    t = g.node("Relu", "head_relu2", [t])
    w2 = g.rng.normal(0, np.sqrt(1.0 / (8 * 4)), (8, 1, 2, 2))
    t = g.node("ConvTranspose", "head_up2", [t, g.initializer("head_up2_W", w2)], strides=[2, 2])
    t = g.node("Sigmoid", "head_prob", [t])
    return g.model("ocr_detector", [batch, 3, resolution, resolution], t, [batch, 1, resolution, resolution])


# --- OCR-style recognizer (CRNN-like): DW-separable backbone, sequence head -------------------
RECOGNIZER_BLOCKS = (
    Blk("r1", 32, 1, "hardswish", "pre"),
    Blk("r2", 48, 2, "hardswish", "post", form="hardsigmoid"),
    Blk("r3", 48, 1, "none", ""),                            # DW without activation
    Blk("r4", 64, 2, "relu6", "pre"),
    Blk("r5", 64, 1, "hardswish", "", se=True),
    Blk("r6", 96, 1, "hsig02", "post"),
)
RECOGNIZER_FEATURES = ("r6_pw_act",)
RECOGNIZER_OPS = ("AveragePool", "Transpose", "Softmax")


def ocr_recognizer(batch: int = 1, height: int = 32, width: int = 96, num_classes: int = 37,
                   seed: int = 0, opset: int = 14, fold_bn: bool = False) -> onnx.ModelProto:
    g = GraphBuilder(seed=seed, opset=opset, fold_bn=fold_bn)
    t, cin = _stem(g, 16), 16
    for b in RECOGNIZER_BLOCKS:
        t, cin = dw_block(g, b, t, cin), b.cout
    fh, fw = height // 8, width // 8
    t = g.node("AveragePool", "seq_pool", [t], kernel_shape=[fh, 1], strides=[fh, 1])   # N, C, 1, W
    shape = g._claim("seq_shape")   # int64: not the builder's float dtype
    g.initializers.append(numpy_helper.from_array(np.array([batch, cin, fw], np.int64), shape))
    t = g.node("Reshape", "seq_reshape", [t, shape])                                  # N, C, W
    t = g.node("Transpose", "seq_transpose", [t], perm=[0, 2, 1])                     # N, W, C
    w = g.initializer("fc_W", g.rng.normal(0, np.sqrt(1.0 / cin), (cin, num_classes)))
    t = g.node("MatMul", "fc", [t, w])
    t = g.node("Add", "fc_bias", [t, g.initializer("fc_B", g.rng.normal(0, 0.1, num_classes))])
    t = g.node("Softmax", "prob", [t], axis=2)
    return g.model("ocr_recognizer", [batch, 3, height, width], t, [batch, fw, num_classes])


# --- classifier with MaxPool and SE -------------------------------------------------------
CLASSIFIER_BLOCKS = (
    Blk("c1", 24, 1, "relu", "", se=True),
    Blk("c2", 40, 2, "hardswish", "pre", form="clip"),
    Blk("c3", 40, 1, "hardswish", "", se=True, kernel=5),
    Blk("c4", 80, 2, "relu6", "post"),
    Blk("c5", 80, 1, "hsig02", "pre"),
)
CLASSIFIER_INPUT = "stem_pool"
CLASSIFIER_FEATURES = ("c5_pw_act",)
CLASSIFIER_OPS = ("MaxPool",)


def se_classifier(batch: int = 1, resolution: int = 64, num_classes: int = 10, seed: int = 0,
                  opset: int = 14, fold_bn: bool = False) -> onnx.ModelProto:
    g = GraphBuilder(seed=seed, opset=opset, fold_bn=fold_bn)
    t, cin = _stem(g, 16), 16
    t = g.node("MaxPool", CLASSIFIER_INPUT, [t], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    for b in CLASSIFIER_BLOCKS:
        t, cin = dw_block(g, b, t, cin), b.cout
    t = g.node("GlobalAveragePool", "pool", [t])
    t = g.node("Flatten", "flatten", [t], axis=1)
    t = g.gemm("fc", t, cin, num_classes)
    return g.model("se_classifier", [batch, 3, resolution, resolution], t, [batch, num_classes])
