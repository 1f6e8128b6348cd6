"""The channel LayerNorm between a ConvNeXt block's DW and its first PW, as exporters write it.

pattern   from the DW output t (NCHW), each node read once:
            op form:      Transpose(0,2,3,1) → LayerNormalization(last axis) → Transpose(0,3,1,2)
                          (timm's LayerNorm2d, torch.onnx.export opset >= 17)
            spelled form: ReduceMean(C) → Sub → Pow(2) → ReduceMean(C) → Add(eps) → Sqrt → Div
                          [→ Mul(gamma) → Add(beta)], on t itself (ConvNeXt's channels_first
                          LayerNorm) or between the same two Transposes (F.layer_norm before opset 17)
legality  constant epsilon > 0, constant per-channel scale / shift (C values, or one)
rewrite   fuse_dwsep keeps the normalisation in the kernel (DwSepWorkload.ln_eps) and folds the
          scale and shift into the PW: W' = W diag(gamma), b' = b + W beta (`fold_into_pw`)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fusion.core.ir import Graph, Node

TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)


@dataclass(frozen=True)
class ChannelNorm:
    nodes: tuple[Node, ...]
    eps: float
    gamma: np.ndarray = field(compare=False)   # (C,) fp64
    beta: np.ndarray = field(compare=False)    # (C,) fp64

    @property
    def output(self) -> str:
        return self.nodes[-1].outputs[0]


def _sole(g: Graph, t: str, op: str | tuple[str, ...]) -> Node | None:
    users = g.consumers_of(t)
    ops = (op,) if isinstance(op, str) else op
    if len(users) != 1 or t in g.outputs or users[0].op_type not in ops:
        return None
    return users[0]


def _vector(g: Graph, t: str, c: int) -> np.ndarray | None:
    """A constant holding one value per channel (any shape with c or 1 elements)."""
    v = g.constants.get(t)
    if v is None or np.size(v) not in (1, c):
        return None
    if np.size(v) == c and max(np.shape(v), default=1) != c:
        return None
    return np.broadcast_to(np.asarray(v, np.float64).reshape(-1), (c,)).copy()


def _scalar(g: Graph, t: str) -> float | None:
    v = g.constants.get(t)
    return float(np.asarray(v).reshape(())) if v is not None and np.size(v) == 1 else None


def _other(n: Node, t: str) -> str | None:
    if len(n.inputs) != 2 or t not in n.inputs:
        return None
    return n.inputs[1] if n.inputs[0] == t else n.inputs[0]


def _spelled(g: Graph, t: str, axis: int, c: int) -> ChannelNorm | None:
    users = g.consumers_of(t)
    if len(users) != 2 or t in g.outputs:
        return None
    mean = next((u for u in users if u.op_type == "ReduceMean"), None)
    sub = next((u for u in users if u.op_type == "Sub"), None)
    if mean is None or sub is None or tuple(mean.attr("axes", ())) != (axis,) or not mean.attr("keepdims", 1):
        return None
    if tuple(sub.inputs) != (t, mean.outputs[0]) or g.uses(mean.outputs[0]) != 1:
        return None
    d = sub.outputs[0]
    du = g.consumers_of(d)
    pw = next((u for u in du if u.op_type == "Pow"), None)
    div = next((u for u in du if u.op_type == "Div"), None)
    if len(du) != 2 or d in g.outputs or pw is None or div is None or pw.inputs[0] != d \
            or _scalar(g, pw.inputs[1]) != 2.0 or div.inputs[0] != d:
        return None
    var = _sole(g, pw.outputs[0], "ReduceMean")
    if var is None or tuple(var.attr("axes", ())) != (axis,) or not var.attr("keepdims", 1):
        return None
    add = _sole(g, var.outputs[0], "Add")
    eps = _scalar(g, _other(add, var.outputs[0]) or "") if add is not None else None
    sqrt = _sole(g, add.outputs[0], "Sqrt") if add is not None else None
    if eps is None or not eps > 0 or sqrt is None or div.inputs[1] != sqrt.outputs[0] or g.uses(sqrt.outputs[0]) != 1:
        return None
    nodes = [mean, sub, pw, var, add, sqrt, div]
    gamma, beta = np.ones(c), np.zeros(c)
    mul = _sole(g, div.outputs[0], "Mul")
    if mul is not None and _vector(g, _other(mul, div.outputs[0]) or "", c) is not None:
        gamma = _vector(g, _other(mul, div.outputs[0]), c)
        nodes.append(mul)
        shift = _sole(g, mul.outputs[0], "Add")
        if shift is not None and _vector(g, _other(shift, mul.outputs[0]) or "", c) is not None:
            beta = _vector(g, _other(shift, mul.outputs[0]), c)
            nodes.append(shift)
    return ChannelNorm(tuple(nodes), eps, gamma, beta)


def match_channel_norm(g: Graph, t: str) -> ChannelNorm | None:
    """The channel LayerNorm applied to the NCHW tensor `t` (module doc), or None."""
    shape = g.types[t].shape
    if len(shape) != 4:
        return None
    c = shape[1]
    direct = _spelled(g, t, 1, c)
    if direct is not None:
        return direct
    tr = _sole(g, t, "Transpose")
    if tr is None or tuple(tr.attr("perm", ())) != TO_NHWC:
        return None
    inner = _sole(g, tr.outputs[0], "LayerNormalization")
    if inner is not None:
        if tuple(inner.attr("axes", ())) != (3,):
            return None
        gamma = _vector(g, inner.inputs[1], c)
        beta = _vector(g, inner.inputs[2], c) if len(inner.inputs) > 2 else np.zeros(c)
        eps = float(inner.attr("epsilon", 1e-5))
        if gamma is None or beta is None or not eps > 0:
            return None
        norm = ChannelNorm((inner,), eps, gamma, beta)
    else:
        norm = _spelled(g, tr.outputs[0], 3, c)
        if norm is None:
            return None
    back = _sole(g, norm.output, "Transpose")
    if back is None or tuple(back.attr("perm", ())) != TO_NCHW:
        return None
    return ChannelNorm((tr, *norm.nodes, back), norm.eps, norm.gamma, norm.beta)


def fold_into_pw(norm: ChannelNorm, w_pw: np.ndarray, b_pw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PW(gamma * n + beta) = (W diag(gamma)) n + (b + W beta), in float64, back to the weights' dtype."""
    w = np.asarray(w_pw, np.float64)
    w2 = w[:, :, 0, 0]
    return ((w * norm.gamma[None, :, None, None]).astype(w_pw.dtype),
            (np.asarray(b_pw, np.float64) + w2 @ norm.beta).astype(np.float32))
