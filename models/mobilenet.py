"""MobileNetV1 / MobileNetV2 reference models and the name -> builder registry."""

from __future__ import annotations

import functools
from typing import Callable

import onnx

from .common import GraphBuilder, make_divisible
from .convnets import resnet
from .dwsep import MOBILENET_V1_BLOCKS, ODD_BLOCKS, WIDE_BLOCKS, dwsep_block
from .ocr import ocr_detector, ocr_recognizer, se_classifier

# (out channels, stride) of the 13 DW-separable blocks (Howard et al. 2017, Table 1).
_V1_BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
              (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]

# (expansion t, out channels c, repeats n, first stride s) (Sandler et al. 2018, Table 2).
_V2_SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def _stem(g: GraphBuilder, cout: int, act: str) -> str:
    t = g.conv_bn("stem", "x", 3, cout, 3, stride=2)
    return g.activation("stem_act", t, act)


def _head(g: GraphBuilder, x: str, channels: int, num_classes: int) -> str:
    t = g.node("GlobalAveragePool", "pool", [x])
    t = g.node("Flatten", "flatten", [t], axis=1)
    return g.gemm("fc", t, channels, num_classes)


def mobilenet_v1(batch: int = 1, resolution: int = 224, width: float = 1.0, fold_bn: bool = False,
                 num_classes: int = 1000, opset: int = 13, seed: int = 0) -> onnx.ModelProto:
    """MobileNetV1 with plain Relu: stem conv, 13 DW-separable blocks ``b1``..``b13``, classifier."""
    g = GraphBuilder(seed=seed, opset=opset, fold_bn=fold_bn)
    cin = make_divisible(32 * width)
    t = _stem(g, cin, "relu")
    for i, (c, stride) in enumerate(_V1_BLOCKS, start=1):
        cout = make_divisible(c * width)
        t = g.conv_bn(f"b{i}_dw", t, cin, cin, 3, group=cin, stride=stride)
        t = g.activation(f"b{i}_dw_act", t, "relu")
        t = g.conv_bn(f"b{i}_pw", t, cin, cout)
        t = g.activation(f"b{i}_pw_act", t, "relu")
        cin = cout
    t = _head(g, t, cin, num_classes)
    return g.model("mobilenet_v1", [batch, 3, resolution, resolution], t, [batch, num_classes])


def mobilenet_v2(batch: int = 1, resolution: int = 224, width: float = 1.0, fold_bn: bool = False,
                 num_classes: int = 1000, opset: int = 13, seed: int = 0) -> onnx.ModelProto:
    """MobileNetV2 with ReLU6 as Clip: stem, 17 inverted-residual blocks ``b1``..``b17``
    (``_exp`` expansion when t != 1, ``_dw``, linear ``_pw`` projection, ``_add``), head, classifier."""
    g = GraphBuilder(seed=seed, opset=opset, fold_bn=fold_bn)
    cin = make_divisible(32 * width)
    t = _stem(g, cin, "relu6")
    i = 0
    for expand, c, repeats, first_stride in _V2_SETTINGS:
        cout = make_divisible(c * width)
        for r in range(repeats):
            i += 1
            stride = first_stride if r == 0 else 1
            block_in = t
            hidden = round(cin * expand)
            if expand != 1:
                t = g.conv_bn(f"b{i}_exp", t, cin, hidden)
                t = g.activation(f"b{i}_exp_act", t, "relu6")
            t = g.conv_bn(f"b{i}_dw", t, hidden, hidden, 3, group=hidden, stride=stride)
            t = g.activation(f"b{i}_dw_act", t, "relu6")
            t = g.conv_bn(f"b{i}_pw", t, hidden, cout, gain=1.0)
            if stride == 1 and cin == cout:
                t = g.node("Add", f"b{i}_add", [block_in, t])
            cin = cout
    last = make_divisible(1280 * max(1.0, width))
    t = g.conv_bn("head", t, cin, last)
    t = g.activation("head_act", t, "relu6")
    t = _head(g, t, last, num_classes)
    return g.model("mobilenet_v2", [batch, 3, resolution, resolution], t, [batch, num_classes])


def _preset(spec: dict) -> Callable[..., onnx.ModelProto]:
    kwargs = {k: v for k, v in spec.items() if k != "name"}
    return functools.partial(dwsep_block, **kwargs)


REGISTRY: dict[str, Callable[..., onnx.ModelProto]] = {
    "dwsep": dwsep_block,
    "mobilenet_v1": mobilenet_v1,
    "mobilenet_v2": mobilenet_v2,
    # larger ResNets / VGG (the fidelity suite's networks): models.convnets.resnet(depth) / vgg(depth)
    "resnet18": functools.partial(resnet, 18),
    "ocr_detector": ocr_detector,
    "ocr_recognizer": ocr_recognizer,
    "se_classifier": se_classifier,
    **{spec["name"]: _preset(spec) for spec in MOBILENET_V1_BLOCKS + ODD_BLOCKS + WIDE_BLOCKS},
}


def build(name: str, **overrides) -> onnx.ModelProto:
    """Build registry model ``name``; ``overrides`` are passed to its builder."""
    if name not in REGISTRY:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[name](**overrides)
