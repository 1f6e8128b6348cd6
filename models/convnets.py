"""ResNet and VGG reference networks (torchvision layouts) as layer specs and ONNX builders.

The vendor's model-zoo publishes 310P3 batch-1 throughput for these; the calibration suite
(benchmarks/fidelity/) fits the simulated target on them. `*_spec` is the one description of a
network: the ONNX builder walks it, and the fidelity model reads it directly (a VGG-16 ONNX file
with random weights is 550 MB, too large to build in a test).

A spec is a list of ops:
  ("conv", name, src, cin, cout, k, stride, pad, act, residual_of)
        src: the op whose output it reads (None: the previous op); residual_of: the op whose
        output is added before the act (None: no residual)
  ("maxpool", name, k, stride, pad) | ("gap", name) | ("fc", name, cin, cout, act)
Every conv is followed by BatchNorm (ResNet) or carries a bias (VGG) -- both fold into one kernel.
"""

from __future__ import annotations

import onnx

from .common import GraphBuilder

# (blocks per stage, bottleneck?) -- He et al. 2016, Table 1
_RESNET = {18: ((2, 2, 2, 2), False), 34: ((3, 4, 6, 3), False), 50: ((3, 4, 6, 3), True),
           101: ((3, 4, 23, 3), True), 152: ((3, 8, 36, 3), True)}
# conv widths per stage, "M" = 2x2/2 max pool -- Simonyan & Zisserman 2015, Table 1 (D, E)
_VGG = {16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),
        19: (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
             512, 512, 512, 512, "M")}


def resnet_spec(depth: int = 18, width_per_group: int = 64, num_classes: int = 1000) -> list[tuple]:
    """torchvision ResNet-`depth` (Wide ResNet-50-2: depth 50, width_per_group 128)."""
    if depth not in _RESNET:
        raise ValueError(f"depth must be one of {sorted(_RESNET)}, got {depth}")
    blocks, bottleneck = _RESNET[depth]
    ops: list[tuple] = [("conv", "stem", None, 3, 64, 7, 2, 3, "relu", None), ("maxpool", "pool0", 3, 2, 1)]
    x, cin, expansion = "pool0", 64, 4 if bottleneck else 1
    for s, n in enumerate(blocks):
        planes = 64 * 2 ** s
        width = planes * width_per_group // 64
        for b in range(n):
            stride = 2 if s > 0 and b == 0 else 1
            p, cout = f"l{s + 1}_{b}", planes * expansion
            short = x
            if stride != 1 or cin != cout:
                ops.append(("conv", f"{p}_down", x, cin, cout, 1, stride, 0, "none", None))
                short = f"{p}_down"
            if bottleneck:
                ops += [("conv", f"{p}_c1", x, cin, width, 1, 1, 0, "relu", None),
                        ("conv", f"{p}_c2", None, width, width, 3, stride, 1, "relu", None),
                        ("conv", f"{p}_c3", None, width, cout, 1, 1, 0, "relu", short)]
                x = f"{p}_c3"
            else:
                ops += [("conv", f"{p}_c1", x, cin, cout, 3, stride, 1, "relu", None),
                        ("conv", f"{p}_c2", None, cout, cout, 3, 1, 1, "relu", short)]
                x = f"{p}_c2"
            cin = cout
    return ops + [("gap", "gap"), ("fc", "fc", cin, num_classes, "none")]


def vgg_spec(depth: int = 16, num_classes: int = 1000) -> list[tuple]:
    if depth not in _VGG:
        raise ValueError(f"depth must be one of {sorted(_VGG)}, got {depth}")
    ops: list[tuple] = []
    cin, i = 3, 0
    for v in _VGG[depth]:
        if v == "M":
            ops.append(("maxpool", f"pool{len(ops)}", 2, 2, 0))
        else:
            i += 1
            ops.append(("conv", f"conv{i}", None, cin, v, 3, 1, 1, "relu", None))
            cin = v
    return ops + [("fc", "fc1", 512 * 7 * 7, 4096, "relu"), ("fc", "fc2", 4096, 4096, "relu"),
                  ("fc", "fc3", 4096, num_classes, "none")]


def build_from_spec(spec: list[tuple], graph_name: str, batch: int = 1, resolution: int = 224,
                    fold_bn: bool = False, opset: int = 13, seed: int = 0) -> onnx.ModelProto:
    g = GraphBuilder(seed=seed, opset=opset, fold_bn=fold_bn)
    t, flat, out_c = "x", False, 3
    named: dict[str, str] = {}          # spec name -> the tensor that op's output ends in
    for op in spec:
        if op[0] == "conv":
            _, name, src, cin, cout, k, stride, pad, act, res = op
            t = g.conv_bn(name, named[src] if src else t, cin, cout, k, stride=stride, pads=(pad,) * 4)
            if res is not None:
                t = g.node("Add", f"{name}_add", [named[res], t])
            t = g.activation(f"{name}_act", t, act)
            out_c = cout
        elif op[0] == "maxpool":
            _, name, k, stride, pad = op
            t = g.node("MaxPool", name, [t], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        elif op[0] == "gap":
            t = g.node("GlobalAveragePool", op[1], [t])
        elif op[0] == "fc":
            _, name, cin, cout, act = op
            if not flat:
                t, flat = g.node("Flatten", f"{name}_flatten", [t], axis=1), True
            t = g.activation(f"{name}_act", g.gemm(name, t, cin, cout), act)
            out_c = cout
        named[op[1]] = t
    return g.model(graph_name, [batch, 3, resolution, resolution], t, [batch, out_c])


def resnet(depth: int = 18, batch: int = 1, resolution: int = 224, width_per_group: int = 64,
           num_classes: int = 1000, **kw) -> onnx.ModelProto:
    return build_from_spec(resnet_spec(depth, width_per_group, num_classes), f"resnet{depth}",
                           batch, resolution, **kw)


def vgg(depth: int = 16, batch: int = 1, resolution: int = 224, num_classes: int = 1000, **kw) -> onnx.ModelProto:
    return build_from_spec(vgg_spec(depth, num_classes), f"vgg{depth}", batch, resolution, **kw)
