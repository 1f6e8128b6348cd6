"""Pattern of a squeeze-and-excitation block between the DW activation and the PW conv, as timm and
torchvision export it (torch.onnx.export, opset 13-18):

  a ─┬─ ReduceMean(axes 2,3, keepdims) | GlobalAveragePool
     │    → Conv 1x1 (+bias) → act (Relu | SiLU as Sigmoid+Mul | HardSwish | …)
     │    → Conv 1x1 (+bias) → Sigmoid | HardSigmoid(alpha, beta)
     └─ Mul(a, gate) ──▶ (the PW conv)

timm's SqueezeExcite (EfficientNet: SiLU + Sigmoid; MobileNetV3: ReLU + HardSigmoid alpha 1/6)
and torchvision's SqueezeExcitation (AdaptiveAvgPool2d -> GlobalAveragePool) both write this.
`match_se` returns the matched nodes and the logical SE weights, or why the consumers of `a` are
not one (None, None when they are not even the start of one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fusion.core.ir import Graph, Node
from schedules.activations import spell

SE_GLOBAL = ("ReduceMean", "GlobalAveragePool")


@dataclass(frozen=True)
class SeMatch:
    nodes: tuple[Node, ...]      # the mean, both convs, the act's nodes, the gate, the Mul
    act: str                     # the hidden activation (schedules/activations spelling)
    gate: str                    # "sigmoid" | "hardsigmoid(a,b)"
    w1: np.ndarray = field(compare=False)   # (R, C, 1, 1)
    b1: np.ndarray = field(compare=False)   # (R,)
    w2: np.ndarray = field(compare=False)   # (C, R, 1, 1)
    b2: np.ndarray = field(compare=False)   # (C,)

    @property
    def output(self) -> str:
        return self.nodes[-1].outputs[0]

    @property
    def mid(self) -> int:
        return int(self.w1.shape[0])


def _only_user(g: Graph, t: str) -> Node | None:
    users = g.consumers_of(t)
    return users[0] if len(users) == 1 and t not in g.outputs else None


def _conv1x1(g: Graph, n: Node | None, cin: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(weights (O, cin, 1, 1), bias (O,)) of a plain constant 1x1 conv, else None."""
    if n is None or n.op_type != "Conv" or not g.is_constant(n.inputs[1]):
        return None
    w = np.asarray(g.constants[n.inputs[1]], np.float32)
    if w.ndim != 4 or w.shape[1:] != (cin, 1, 1) or n.attr("group", 1) != 1:
        return None
    if tuple(n.attr("pads", (0, 0, 0, 0))) != (0, 0, 0, 0) or tuple(n.attr("strides", (1, 1))) != (1, 1) \
            or tuple(n.attr("dilations", (1, 1))) != (1, 1):
        return None
    if len(n.inputs) > 2 and n.inputs[2]:
        if not g.is_constant(n.inputs[2]):
            return None
        b = np.asarray(g.constants[n.inputs[2]], np.float32).reshape(-1)
    else:
        b = np.zeros(w.shape[0], np.float32)
    return w, b


def is_se_mean(n: Node) -> bool:
    return n.op_type == "GlobalAveragePool" or (n.op_type == "ReduceMean" and tuple(n.attr("axes", ())) == (2, 3)
                                                 and n.attr("keepdims", 1))


def match_se(g: Graph, a: str, activation_at) -> tuple[SeMatch | None, str | None]:
    """The SE block reading tensor `a` (N, C, H, W) and scaling it, or (None, why-not).
    activation_at: passes/fuse_dwsep.activation_at (the activations a fused kernel carries; passed
    in because fuse_dwsep imports this module)."""
    users = g.consumers_of(a)
    mean = next((u for u in users if is_se_mean(u)), None)
    mul = next((u for u in users if u.op_type == "Mul"), None)
    if mean is None:
        return None, None
    if a in g.outputs or len(users) != 2 or mul is None:
        return None, (f"the global mean '{mean.name}' is not a squeeze-and-excitation block: the tensor it "
                      f"reads has {len(users)} consumers ({', '.join(u.op_type for u in users)}), not the mean "
                      f"and one Mul")
    c = g.types[a].shape[1]
    conv1 = _only_user(g, mean.outputs[0])
    fc1 = _conv1x1(g, conv1, c)
    if fc1 is None:
        return None, f"the global mean '{mean.name}' does not feed a constant 1x1 conv (an SE reduce conv)"
    act, _ = activation_at(g, conv1.outputs[0])
    if act is None:
        hid_nodes, act_name, hid = (), "none", conv1.outputs[0]
    else:
        hid_nodes, act_name, hid = act.nodes, act.act, act.output
    conv2 = _only_user(g, hid)
    fc2 = _conv1x1(g, conv2, fc1[0].shape[0])
    if fc2 is None or fc2[0].shape[0] != c:
        return None, f"the SE reduce conv '{conv1.name}' is not followed by a 1x1 conv back to {c} channels"
    gate_node = _only_user(g, conv2.outputs[0])
    if gate_node is None or gate_node.op_type not in ("Sigmoid", "HardSigmoid"):
        return None, (f"the SE expand conv '{conv2.name}' is not followed by a Sigmoid or HardSigmoid gate "
                      f"({gate_node.op_type if gate_node else 'several consumers'})")
    gate = "sigmoid" if gate_node.op_type == "Sigmoid" else \
        spell("hardsigmoid", gate_node.attr("alpha", 0.2), gate_node.attr("beta", 0.5))
    if _only_user(g, gate_node.outputs[0]) is not mul or sorted(mul.inputs) != sorted((a, gate_node.outputs[0])):
        return None, f"the SE gate '{gate_node.name}' does not scale the tensor its mean reads (Mul '{mul.name}')"
    return SeMatch((mean, conv1, *hid_nodes, conv2, gate_node, mul), act_name, gate, *fc1, *fc2), None
