"""The kernels a vendor graph compiler (ATC) would launch for a network, as frozen records.

ATC's fusion rules that matter for latency at batch 1: a convolution keeps its BatchNorm, a
residual Add and the activation in one kernel (UB fusion / Fixpipe epilogue); a depthwise
convolution is its own kernel with its activation fused; pooling, a classifier GEMM and any
element-wise op left over are one kernel each; Flatten/Reshape are free (views); the input is
converted from NCHW to the 5-D NC1HWC0 format by a TransData kernel, and a 5-D output is
converted back by another. `layers_from_graph` derives that kernel list from an ONNX graph;
network builders that are too large to build as ONNX in a test (VGG, ResNet-152) give the same
records from their layer specs (fusion/cost/fidelity.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fusion.core.ir import Graph, Node

ACT_OPS = {"Relu": "relu", "Clip": "relu6", "Relu6": "relu6", "HardSwish": "hardswish", "Sigmoid": "sigmoid",
           "LeakyRelu": "relu", "PRelu": "relu"}
LAYOUT_OPS = {"ToNC1HWC0", "ToNCHW"}   # megafuse's format conversions: the vendor's TransData
BN_VECTOR_OPS = 2    # a BatchNormalization on its own: a scale and a shift per element
SOFTMAX_VECTOR_OPS = 5   # max, subtract, exp, sum, divide per element
FREE_OPS = {"Flatten", "Reshape", "Identity", "Squeeze", "Unsqueeze", "Dropout"}
POOL_OPS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}


@dataclass(frozen=True)
class Layer:
    """One vendor kernel. Spatial sizes are the input's; `out_h`/`out_w` the output's."""
    kind: str                 # conv | dwconv | pool | gemm | eltwise | resize | concat | transdata
    name: str
    batch: int
    cin: int
    cout: int
    h: int
    w: int
    out_h: int
    out_w: int
    kh: int = 1
    kw: int = 1
    stride: int = 1
    act: str = "none"
    residual: bool = False    # a residual Add fused into the kernel (one more input read)
    members: tuple[str, ...] = ()   # the ONNX nodes the kernel covers
    ops: int = 0              # eltwise / resize: vector ops per output element when not an activation's

    @property
    def macs(self) -> int:
        if self.kind == "conv":
            return self.batch * self.out_h * self.out_w * self.cout * self.cin * self.kh * self.kw
        if self.kind == "dwconv":
            return self.batch * self.out_h * self.out_w * self.cout * self.kh * self.kw
        if self.kind == "gemm":
            return self.batch * self.cin * self.cout
        return 0


def conv_layer(name, batch, cin, cout, h, w, k, stride, pad, act="none", residual=False,
               group=1, members=()) -> Layer:
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    kind = "dwconv" if group > 1 and group == cin == cout else "conv"
    return Layer(kind, name, batch, cin, cout, h, w, oh, ow, k, k, stride, act, residual,
                 members or (name,))


def _shape(g: Graph, t: str) -> tuple[int, ...]:
    return tuple(int(d) for d in g.types[t].shape)


def _single_consumer(g: Graph, t: str) -> Node | None:
    cons = g.consumers_of(t)
    return cons[0] if len(cons) == 1 and t not in g.outputs else None


def _absorb(g: Graph, n: Node, done: set[str]) -> tuple[str, bool, list[str], str]:
    """Follow conv -> [BN] -> [Add] -> [act]: what ATC keeps in the conv kernel."""
    t, act, residual, members = n.outputs[0], "none", False, [n.name]
    while True:
        c = _single_consumer(g, t)
        if c is None:
            break
        if c.op_type == "BatchNormalization" and act == "none" and not residual:
            pass
        elif c.op_type == "Add" and not residual and act == "none":
            other = [i for i in c.inputs if i != t]
            if len(other) != 1 or g.is_constant(other[0]):
                break
            residual = True
        elif c.op_type in ACT_OPS and act == "none":
            act = ACT_OPS[c.op_type]
        else:
            break
        members.append(c.name)
        done.add(c.name)
        t = c.outputs[0]
    return t, residual, members, act


# vector ops per output element of a Resize: nearest copies the source pixel; linear blends the
# four neighbours (a multiply per axis weight and an add per blend: 2 x 2)
RESIZE_OPS = {"nearest": 1, "linear": 4, "cubic": 16}


def _nchw(shape) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a logical shape (a 5-D NC1HWC0 shape: C = C1 * C0; fewer dims: ones)."""
    s = [int(d) for d in shape]
    if len(s) == 5:
        return s[0], s[1] * s[4], s[2], s[3]
    s = (s + [1, 1, 1, 1])[:4] if len(s) < 4 else s[:3] + [int(np.prod(s[3:]))]
    return s[0], s[1], s[2], s[3]


def node_layer(g: Graph, node: Node) -> Layer:
    """The vendor kernel that runs one ONNX node on its own (NCHW or megafuse's NC1HWC0 graph)."""
    op, name = node.op_type, node.name
    out = g.types[node.outputs[0]].shape
    n, cin, h, w = _nchw(g.types[node.inputs[0]].shape)
    on, cout, oh, ow = _nchw(out)
    if op in ("Conv", "ConvTranspose"):
        ws = [int(d) for d in g.types[node.inputs[1]].shape]
        group = int(node.attr("group", 1))
        kh, kw = (ws[2], ws[3]) if len(ws) == 4 else (1, 1)
        if op == "ConvTranspose":   # a GEMM per input pixel: Cin -> (Cout / g) x kh x kw, scattered
            return Layer("conv", name, n, cin, ws[1] * kh * kw * group, h, w, h, w, members=(name,))
        stride = int((node.attr("strides") or (1, 1))[0])
        if group > 1 and group == cin == cout:
            return Layer("dwconv", name, n, cin, cout, h, w, oh, ow, kh, kw, stride, members=(name,))
        return Layer("conv", name, n, max(1, cin // group), cout, h, w, oh, ow, kh, kw, stride, members=(name,))
    if op in ("Gemm", "MatMul"):
        a = [int(d) for d in g.types[node.inputs[0]].shape]
        k = a[0] if node.attr("transA", 0) else a[-1]
        return Layer("gemm", name, int(np.prod(a)) // k, k, int(out[-1]), 1, 1, 1, 1, members=(name,))
    if op in POOL_OPS:
        k = node.attr("kernel_shape") or (h, w)
        s = int((node.attr("strides") or (1, 1))[0]) if "Global" not in op else 1
        return Layer("pool", name, n, cout, cout, h, w, oh, ow, int(k[0]), int(k[-1]), s, members=(name,))
    if op == "Resize":
        mode = node.attr("mode", "nearest")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        return Layer("resize", name, on, cin, cout, h, w, oh, ow, members=(name,), ops=RESIZE_OPS.get(mode, 4))
    if op in LAYOUT_OPS:   # NCHW <-> NC1HWC0 of the 4-D side's shape
        n4, c4, h4, w4 = _nchw(g.types[node.inputs[0] if op == "ToNC1HWC0" else node.outputs[0]].shape)
        return Layer("transdata", name, n4, c4, c4, h4, w4, h4, w4, members=(name,))
    inputs = [i for i in node.inputs if i and not g.is_constant(i)]
    if op in ("BatchNormalization", "Softmax"):
        ops = BN_VECTOR_OPS if op == "BatchNormalization" else SOFTMAX_VECTOR_OPS
        return Layer("eltwise", name, on, cout, cout, oh * ow, 1, oh * ow, 1, members=(name,), ops=ops)
    if op == "Concat":   # each input's rows copied once into the output
        return Layer("concat", name, on, cout, cout, oh, ow, oh, ow, members=(name,))
    return Layer("eltwise", name, on, cout, cout, oh * ow, 1, oh * ow, 1, act=ACT_OPS.get(op, "none"),
                 residual=len(inputs) > 1, members=(name,))


def layers_from_graph(g: Graph) -> list[Layer]:
    """The vendor kernel list of an imported ONNX graph (NCHW, before megafuse's passes)."""
    layers: list[Layer] = []
    done: set[str] = set()
    x = g.inputs[0]
    shp = _shape(g, x)
    if len(shp) == 4:
        n, c, h, w = shp
        layers.append(Layer("transdata", "transdata_in", n, c, c, h, w, h, w, members=()))
    for node in g.nodes:
        if node.name in done or node.op_type in FREE_OPS:
            continue
        done.add(node.name)
        out = node.outputs[0]
        if node.op_type == "Conv":
            n, cin, h, w = _shape(g, node.inputs[0])
            cout, _cpg, kh, kw = _shape(g, node.inputs[1])
            group = int(node.attr("group", 1))
            stride = int((node.attr("strides") or (1, 1))[0])
            _t, residual, members, act = _absorb(g, node, done)
            _n, _c, oh, ow = _shape(g, node.outputs[0])
            kind = "dwconv" if group > 1 and group == cin else "conv"
            layers.append(Layer(kind, node.name, n, cin, cout, h, w, oh, ow, kh, kw, stride, act,
                                residual, tuple(members)))
        elif node.op_type in ("Gemm", "MatMul"):
            a = _shape(g, node.inputs[0])
            o = _shape(g, out)
            m = int(np.prod(a[:-1]))
            _t, _res, members, act = _absorb(g, node, done)
            layers.append(Layer("gemm", node.name, m, a[-1], o[-1], 1, 1, 1, 1, act=act,
                                members=tuple(members)))
        elif node.op_type == "ConvTranspose":
            _t, _res, members, act = _absorb(g, node, done)
            layers.append(replace(node_layer(g, node), act=act, members=tuple(members)))
        elif node.op_type in POOL_OPS:
            n, c, h, w = _shape(g, node.inputs[0])
            _n, _c, oh, ow = _shape(g, out)
            k = int((node.attr("kernel_shape") or (h,))[0]) if "Global" not in node.op_type else h
            kw = int((node.attr("kernel_shape") or (w, w))[1]) if "Global" not in node.op_type else w
            s = int((node.attr("strides") or (1, 1))[0])
            layers.append(Layer("pool", node.name, n, c, c, h, w, oh, ow, k, kw, s, members=(node.name,)))
        elif node.inputs:   # Resize, Concat, a BatchNorm or activation left over, Add, ...: on its own
            layers.append(node_layer(g, node))
        else:
            o = _shape(g, out)
            n = o[0] if o else 1
            c = o[1] if len(o) > 1 else 1
            h = int(np.prod(o[2:])) if len(o) > 2 else 1
            layers.append(Layer("eltwise", node.name, n, c, c, h, 1, h, 1,
                                act=ACT_OPS.get(node.op_type, "none"),
                                residual=len([i for i in node.inputs if i and not g.is_constant(i)]) > 1,
                                members=(node.name,)))
    last = g.outputs[0]
    if len(_shape(g, last)) == 4:
        n, c, h, w = _shape(g, last)
        layers.append(Layer("transdata", "transdata_out", n, c, c, h, w, h, w))
    return layers


def layers_from_spec(spec, batch: int = 1, resolution: int = 224) -> list[Layer]:
    """The vendor kernel list of a models/convnets.py layer spec (same fusion rules)."""
    dims: dict = {}
    c, h, w, prev = 3, resolution, resolution, None
    layers = [Layer("transdata", "transdata_in", batch, 3, 3, h, h, h, h)]
    for op in spec:
        if op[0] == "conv":
            _, name, src, cin, cout, k, stride, pad, act, res = op
            _c, h, w = dims[src] if src else (c, h, w)
            L = conv_layer(name, batch, cin, cout, h, w, k, stride, pad, act, res is not None)
            c, h, w = cout, L.out_h, L.out_w
        elif op[0] == "maxpool":
            _, name, k, stride, pad = op
            oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
            L = Layer("pool", name, batch, c, c, h, w, oh, ow, k, k, stride, members=(name,))
            h, w = oh, ow
        elif op[0] == "gap":
            L = Layer("pool", op[1], batch, c, c, h, w, 1, 1, h, w, 1, members=(op[1],))
            h = w = 1
        else:
            _, name, cin, cout, act = op
            L = Layer("gemm", name, batch, cin, cout, 1, 1, 1, 1, act=act, members=(name,))
            c, h, w = cout, 1, 1
        dims[op[1]] = (c, h, w)
        layers.append(L)
    return layers
