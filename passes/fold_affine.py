"""Fold constant per-channel scale/shift nodes (Mul/Add/Sub/Div by a constant, leftover BN) into
the neighbouring convolutions, as exporters write them around DW/PW convs.

Pattern: y = s * x + t per channel, from Mul/Add/Sub/Div with one constant operand that
broadcasts along the channel axis only (scalar, [C,1,1], [1,C,1,1]), or an inference BN.
Rewrites, tried in this order (each exact in real arithmetic):
  backward   Conv -> affine: w'[o] = s[o] w[o], b' = s b + t. Legal when the conv output has no
             other use.
  forward    affine -> Conv: w'[o, j] = w[o, j] s[in(o, j)], b'[o] = b[o] + sum_j,k w[o, j, k] t[in(o, j)].
             Legal when the affine output feeds only that conv and, if t != 0, the conv has no
             padding (a padded border would see 0, not t).
  past relu  Conv -> Relu -> Mul(s): relu(z) s = relu(s z) only for s > 0, so a scale with every
             entry positive and no shift moves into the conv before the Relu. Any other
             activation (Relu6 clips at 6, HardSwish is not homogeneous) does not commute.
Every affine node left next to a Conv gets a Refusal saying which rewrite failed and why.
"""

from __future__ import annotations

import numpy as np

from fusion.core.ir import Graph, Node, TensorType
from passes.records import Refusal

AFFINE_OPS = ("Mul", "Add", "Sub", "Div", "BatchNormalization")
MAX_ROUNDS = 64


def per_channel(g: Graph, n: Node) -> tuple[str, np.ndarray, np.ndarray] | None:
    """(data input, scale[C], shift[C]) when `n` is y = scale * x + shift per channel, else None."""
    if n.op_type == "BatchNormalization":
        if not all(g.is_constant(t) for t in n.inputs[1:5]) or len(g.types[n.inputs[0]].shape) != 4:
            return None
        gamma, beta, mean, var = (np.asarray(g.constants[t], np.float64) for t in n.inputs[1:5])
        s = gamma / np.sqrt(var + n.attr("epsilon", 1e-5))
        return n.inputs[0], s, beta - mean * s
    if n.op_type not in AFFINE_OPS or len(n.inputs) != 2:
        return None
    a, b = n.inputs
    if g.is_constant(a) == g.is_constant(b):
        return None
    x, c = (b, a) if g.is_constant(a) else (a, b)
    shape = g.types[x].shape
    arr = np.asarray(g.constants[c], np.float64)
    if len(shape) != 4 or arr.ndim > 4 or g.types[n.outputs[0]].shape != shape:
        return None
    full = (1,) * (4 - arr.ndim) + arr.shape
    if full[0] != 1 or full[2] != 1 or full[3] != 1 or full[1] not in (1, shape[1]):
        return None   # varies along batch/H/W (or a [C] vector, which ONNX broadcasts along W)
    v = np.broadcast_to(arr.reshape(full[1]), (shape[1],)).astype(np.float64)
    ones, zeros = np.ones_like(v), np.zeros_like(v)
    if n.op_type == "Mul":
        return x, v, zeros
    if n.op_type == "Add":
        return x, ones, v
    if n.op_type == "Sub":
        return (x, ones, -v) if x == a else (x, -ones, v)
    if x != a or np.any(v == 0):   # c / x is not affine; x / 0 is not finite
        return None
    return x, 1.0 / v, zeros


def _conv_params(g: Graph, conv: Node) -> tuple[np.ndarray, np.ndarray] | None:
    if conv.op_type != "Conv" or not g.is_constant(conv.inputs[1]):
        return None
    bias_t = conv.inputs[2] if len(conv.inputs) > 2 and conv.inputs[2] else None
    if bias_t is not None and not g.is_constant(bias_t):
        return None
    w = np.asarray(g.constants[conv.inputs[1]], np.float64)
    b = np.asarray(g.constants[bias_t], np.float64) if bias_t else np.zeros(w.shape[0])
    return w, b


def _with_params(g: Graph, conv: Node, w, b, consts, types, inputs0: str, output: str, tag: str) -> Node:
    dt = g.constants[conv.inputs[1]].dtype
    names = (f"{conv.name}__w_{tag}", f"{conv.name}__b_{tag}")
    for name, arr in zip(names, (w, b)):
        consts[name] = np.asarray(arr).astype(dt)
        types[name] = TensorType(consts[name].shape, str(dt))
    return Node(conv.name, "Conv", (inputs0, *names), (output,), conv.attrs)


def _backward(g: Graph, n: Node, x: str, s, t, consts, types) -> tuple[Node, str | None]:
    conv = g.producer(x)
    if conv is None or conv.op_type != "Conv":
        return None, "input is not a Conv output"
    if g.uses(x) != 1:
        return None, f"Conv '{conv.name}' output has {g.uses(x)} uses"
    p = _conv_params(g, conv)
    if p is None:
        return None, f"Conv '{conv.name}' weights are not constant"
    w, b = p
    new = _with_params(g, conv, w * s.reshape(-1, 1, 1, 1), b * s + t, consts, types, conv.inputs[0],
                       n.outputs[0], f"aff{len(consts)}")
    return new, None


def _in_channel(conv: Node, w: np.ndarray) -> np.ndarray:
    """in(o, j): the input channel weight column j of output o reads (grouped convs)."""
    group = conv.attr("group", 1)
    cout, cpg = w.shape[0], w.shape[1]
    per_group = cout // group
    return (np.arange(cout)[:, None] // per_group) * cpg + np.arange(cpg)[None, :]


def _forward(g: Graph, n: Node, x: str, s, t, consts, types) -> tuple[Node, str | None]:
    y = n.outputs[0]
    users = g.consumers_of(y)
    if y in g.outputs or len(users) != 1:
        return None, f"output has {g.uses(y)} uses"
    conv = users[0]
    if conv.op_type != "Conv" or conv.inputs[0] != y:
        return None, f"output feeds {conv.op_type} '{conv.name}', not a Conv's data input"
    p = _conv_params(g, conv)
    if p is None:
        return None, f"Conv '{conv.name}' weights are not constant"
    if np.any(t != 0) and any(conv.attr("pads", (0, 0, 0, 0))):
        return None, (f"the shift cannot fold into Conv '{conv.name}': its padding "
                      f"{conv.attr('pads')} would see 0 where the shifted input has the shift")
    w, b = p
    idx = _in_channel(conv, w)
    w2 = w * s[idx][:, :, None, None]
    b2 = b + (w.sum(axis=(2, 3)) * t[idx]).sum(axis=1)
    return _with_params(g, conv, w2, b2, consts, types, x, conv.outputs[0], f"aff{len(consts)}"), None


def _past_relu(g: Graph, n: Node, x: str, s, t, consts, types) -> tuple[Node, Node, str | None]:
    act = g.producer(x)
    if act is None or act.op_type not in ("Relu", "Relu6", "HardSwish", "Clip", "LeakyRelu"):
        return None, None, "no activation before it"
    if act.op_type != "Relu":
        return None, None, f"a scale does not commute with {act.op_type} '{act.name}' (only Relu)"
    if np.any(t != 0):
        return None, None, "a shift does not commute with Relu"
    if np.any(s <= 0):
        return None, None, f"scale has {int(np.sum(s <= 0))} entries <= 0: relu(z)*s == relu(s*z) needs s > 0"
    if g.uses(x) != 1:
        return None, None, f"Relu '{act.name}' output has {g.uses(x)} uses"
    conv, why = _backward(g, Node(n.name, "Mul", (act.inputs[0],), (act.inputs[0],)), act.inputs[0], s,
                          np.zeros_like(s), consts, types)
    if conv is None:
        return None, None, f"behind Relu '{act.name}': {why}"
    relu = Node(act.name, "Relu", act.inputs, n.outputs, act.attrs)
    return conv, relu, None


def _touches_conv(g: Graph, n: Node, x: str) -> bool:
    near = [g.producer(x)] + g.consumers_of(n.outputs[0])
    act = g.producer(x)
    if act is not None and act.inputs:
        near.append(g.producer(act.inputs[0]))
    return any(m is not None and m.op_type == "Conv" for m in near)


def _fold_one(g: Graph) -> tuple[Graph | None, list[Refusal]]:
    refusals = []
    for n in g.nodes:
        aff = per_channel(g, n)
        if aff is None:
            continue
        x, s, t = aff
        consts, types = dict(g.constants), dict(g.types)
        conv, why_b = _backward(g, n, x, s, t, consts, types)
        if conv is not None:
            nodes = [conv if m.name == conv.name else m for m in g.nodes if m is not n]
            return g.rewrite(nodes, consts, types), []
        conv, why_f = _forward(g, n, x, s, t, consts, types)
        if conv is not None:
            nodes = [conv if m.name == conv.name else m for m in g.nodes if m is not n]
            return g.rewrite(nodes, consts, types), []
        conv, relu, why_r = _past_relu(g, n, x, s, t, consts, types)
        if conv is not None:
            nodes = [conv if m.name == conv.name else relu if m.name == relu.name else m
                     for m in g.nodes if m is not n]
            return g.rewrite(nodes, consts, types), []
        if n.op_type != "BatchNormalization" and _touches_conv(g, n, x):  # BN: fold_bn's record
            refusals.append(Refusal("fold_affine", (n.name,),
                                    f"per-channel {n.op_type} kept as a kernel: into the producer: {why_b}; "
                                    f"into the consumer: {why_f}; past the activation: {why_r}"))
    return None, refusals


def fold_affine(g: Graph) -> tuple[Graph, list[Refusal]]:
    refusals: list[Refusal] = []
    for _ in range(MAX_ROUNDS):
        new, refusals = _fold_one(g)
        if new is None:
            break
        g = new
    return g, refusals
