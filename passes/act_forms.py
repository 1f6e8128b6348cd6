"""Activations exporters write as small elementwise subgraphs of one tensor (GELU, Mish, ...).

torch.onnx.export spells nn.GELU as `Div(x, √2) → Erf → Add(·, 1) → Mul(x, ·) → Mul(·, 0.5)`,
GELU(approximate='tanh') as `Mul(x, x) → Mul(x, ·) → Mul(·, 0.044715) → Add(x, ·) → Mul(·, √(2/π)) →
Tanh → Add(·, 1) → Mul(x, ·) → Mul(·, 0.5)` and nn.Mish as `Softplus → Tanh → Mul(x, ·)`; other
exporters reorder the operands, multiply by 1/√2 or put the 0.5 first. Instead of one pattern per
spelling:

pattern   the nodes that compute a function of `t` alone: every input is `t`, the output of another
          such node or a scalar constant, every op in ELEMENTWISE, every inner output read only
          inside; the largest such set with one output leaving it (`region`)
legality  evaluated in float64 on PROBES (both tails, zero, the knees of each curve) it equals one
          kernel activation (KINDS) to 1e-6 relative (to the rounding of fp16 constants in an fp16
          model) -- the same function, whatever the spelling
rewrite   fuse_dwsep takes the nodes as the block's act1 / act2 (their names go to `members`)
"""

from __future__ import annotations

import math

import numpy as np

from fusion.core.ir import Graph, Node, make_node
from schedules.activations import numpy_ref

ELEMENTWISE = ("Add", "Sub", "Mul", "Div", "Erf", "Tanh", "Softplus", "Sigmoid", "Exp", "Pow", "Neg", "Sqrt")
KINDS = ("gelu", "gelutanh", "mish")
MAX_NODES = 12
PROBES = np.concatenate([np.linspace(-12.0, 12.0, 97), [-60.0, -30.0, -3e-3, 1e-4, 0.5, 2.5, 30.0, 60.0]])
# the same function to the rounding of the model's constants: fp16 stores 1/sqrt 2, 0.044715 and
# sqrt(2/pi) to 2^-11 relative (the kernel then uses the exact constants; fp16 checks allow 2^-10)
RTOL = {"float16": 4e-3, "bfloat16": 3e-2}
RTOL_DEFAULT = 1e-6


def _scalar(g: Graph, t: str) -> float | None:
    v = g.constants.get(t)
    if v is None or np.size(v) != 1:
        return None
    return float(np.asarray(v, np.float64).reshape(()))


def _eval(op: str, a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if op == "Add":
            return a + b
        if op == "Sub":
            return a - b
        if op == "Mul":
            return a * b
        if op == "Div":
            return a / b
        if op == "Pow":
            return np.power(a, b)
        if op == "Erf":
            return np.vectorize(math.erf, otypes=[np.float64])(a)
        if op == "Tanh":
            return np.tanh(a)
        if op == "Softplus":
            return np.logaddexp(0.0, a)
        if op == "Sigmoid":
            return 1.0 / (1.0 + np.exp(-a))
        if op == "Exp":
            return np.exp(a)
        if op == "Neg":
            return -a
        return np.sqrt(a)


def region(g: Graph, t: str) -> list[Node]:
    """The nodes computing a function of `t` alone (module doc), in graph order."""
    known, members = {t}, []
    changed = True
    while changed and len(members) < MAX_NODES:
        changed = False
        for tensor in list(known):
            for u in g.consumers_of(tensor):
                if u in members or u.op_type not in ELEMENTWISE or len(u.outputs) != 1:
                    continue
                if all(i in known or _scalar(g, i) is not None for i in u.inputs if i):
                    members.append(u)
                    known.add(u.outputs[0])
                    changed = True
    order = {n.name: i for i, n in enumerate(g.nodes)}
    return sorted(members, key=lambda n: order[n.name])


def _values(g: Graph, t: str, nodes: list[Node]) -> dict[str, np.ndarray]:
    vals = {t: PROBES}
    for n in nodes:
        args = [vals[i] if i in vals else np.float64(_scalar(g, i)) for i in n.inputs if i]
        vals[n.outputs[0]] = _eval(n.op_type, args[0], args[1] if len(args) > 1 else None)
    return vals


def match_elementwise_act(g: Graph, t: str) -> tuple[str, tuple[Node, ...]] | None:
    """(kind, nodes) when the nodes reading `t` compute one of KINDS of it and nothing else reads
    `t` or their inner tensors; None otherwise."""
    nodes = region(g, t)
    if not nodes:
        return None
    vals = _values(g, t, nodes)
    refs = {k: numpy_ref(PROBES, k) for k in KINDS}
    rtol = RTOL.get(g.types[t].dtype if t in g.types else "", RTOL_DEFAULT)
    # the largest prefix closed under use: t read only inside, one tensor leaving it
    for end in range(len(nodes), 0, -1):
        sub = nodes[:end]
        names = {n.name for n in sub}
        outs = [n.outputs[0] for n in sub]
        if any(u.name not in names for u in g.consumers_of(t)):
            continue
        leaving = [o for o in outs if o in g.outputs or any(u.name not in names for u in g.consumers_of(o))
                   or o == outs[-1]]
        if leaving != [outs[-1]]:
            continue
        y = vals[outs[-1]]
        for kind, ref in refs.items():
            if np.all(np.isfinite(y)) and np.allclose(y, ref, rtol=rtol, atol=rtol * 1e-3):
                return kind, tuple(sub)
    return None


def collapse_gelu(g: Graph) -> Graph:
    """Every GELU written out (either form) → one Gelu node (opset-20 semantics), named and
    producing as its last node did; run before fold_affine, which would otherwise fold the
    trailing Mul(·, 0.5) into the next conv and leave 2·GELU, which is no activation."""
    nodes = list(g.nodes)
    gone: set[str] = set()
    new: dict[str, Node] = {}
    for t in [t for n in g.nodes for t in n.outputs] + list(g.inputs):
        users = g.consumers_of(t)
        if not any(u.op_type in ("Div", "Mul", "Erf", "Pow") for u in users) or any(u.name in gone for u in users):
            continue
        found = match_elementwise_act(g, t)
        if found is None or found[0] not in ("gelu", "gelutanh"):
            continue
        kind, members = found
        last = members[-1]
        new[last.name] = make_node(last.name, "Gelu", [t], last.outputs,
                                   approximate="tanh" if kind == "gelutanh" else "none")
        gone.update(n.name for n in members)
    if not new:
        return g
    return g.rewrite([new.get(n.name, n) for n in nodes if n.name not in gone or n.name in new])
