"""Canonicalize: drop Identity, Clip(0,6) → Relu6, Clip(0,inf) → Relu, the HardSwish
spellings x·HardSigmoid(x), x·Clip(x+3,0,6)/6 and x·(Clip(x+3,0,6)/6) → HardSwish, and GELU
written out (erf or tanh form, passes/act_forms.py) → Gelu.

Each rewrite is pattern + legality (constants and single use of the inner tensors) + rewrite.
"""

from __future__ import annotations

import math

import numpy as np

from fusion.core.ir import Graph, Node, make_node
from passes.act_forms import collapse_gelu


def canonicalize(g: Graph, collapse: bool = True) -> Graph:
    """collapse=False (--opt-level 0): only the renames, every operator stays a kernel of its own."""
    steps = (_remove_identity, _clip_to_relu) + ((_hardsigmoid_hardswish, _clip_hardswish, _gate_hardswish, collapse_gelu)
                                                  if collapse else ())
    for step in steps:
        g = step(g)
    return g


def _scalar(g: Graph, tensor: str) -> float | None:
    """The value of a constant tensor holding one repeated number, else None."""
    arr = g.constants.get(tensor)
    if arr is None or arr.size == 0:
        return None
    flat = np.asarray(arr, dtype=np.float64).ravel()
    return float(flat[0]) if np.all(flat == flat[0]) else None


def _rename_inputs(nodes, old: str, new: str):
    return [n if old not in n.inputs else
            Node(n.name, n.op_type, tuple(new if t == old else t for t in n.inputs), n.outputs, n.attrs)
            for n in nodes]


def _remove_identity(g: Graph) -> Graph:
    nodes = list(g.nodes)
    changed = False
    for name in [n.name for n in g.nodes if n.op_type == "Identity"]:
        n = next(m for m in nodes if m.name == name)  # current form: an earlier removal renames inputs
        if n.outputs[0] in g.outputs:
            continue  # an Identity producing a graph output keeps the output's name: stays a copy
        nodes = [m for m in nodes if m.name != name]
        nodes = _rename_inputs(nodes, n.outputs[0], n.inputs[0])
        changed = True
    return g.rewrite(nodes) if changed else g


def _clip_to_relu(g: Graph) -> Graph:
    nodes, changed = [], False
    for n in g.nodes:
        if n.op_type == "Clip" and n.attr("min") == 0.0 and n.attr("max") in (6.0, math.inf):
            op = "Relu6" if n.attr("max") == 6.0 else "Relu"
            n = Node(n.name, op, n.inputs[:1], n.outputs)
            changed = True
        nodes.append(n)
    return g.rewrite(nodes) if changed else g


def _single_use(g: Graph, tensor: str) -> bool:
    return g.uses(tensor) == 1


def _other_input(n: Node, tensor: str) -> str | None:
    if len(n.inputs) != 2 or tensor not in n.inputs:
        return None
    a, b = n.inputs
    return b if a == tensor else a


def _hardsigmoid_hardswish(g: Graph) -> Graph:
    """Mul(x, HardSigmoid(x; alpha=1/6, beta=1/2)) → HardSwish(x)."""
    for hs in g.nodes:
        if hs.op_type != "HardSigmoid":
            continue
        if not (math.isclose(hs.attr("alpha", 0.2), 1 / 6, rel_tol=1e-6)
                and math.isclose(hs.attr("beta", 0.5), 0.5, rel_tol=1e-6)):
            continue
        x, s = hs.inputs[0], hs.outputs[0]
        if not _single_use(g, s):
            continue
        mul = g.consumers_of(s)[0] if g.consumers_of(s) else None
        if mul is None or mul.op_type != "Mul" or _other_input(mul, s) != x:
            continue
        new = make_node(mul.name, "HardSwish", [x], mul.outputs)
        nodes = [new if n is mul else n for n in g.nodes if n is not hs]
        return _hardsigmoid_hardswish(g.rewrite(nodes))
    return g


def _relu6_of_x_plus_3(g: Graph, add) -> tuple[str, object] | None:
    """(x, the Relu6 node) when `add` is Add(x, 3) feeding only a Relu6 that has one consumer."""
    if add.op_type != "Add" or len(add.inputs) != 2:
        return None
    consts = [t for t in add.inputs if _scalar(g, t) == 3.0]
    x = _other_input(add, consts[0]) if consts else None
    if x is None or g.is_constant(x) or not _single_use(g, add.outputs[0]):
        return None
    r6 = g.consumers_of(add.outputs[0])[0]
    if r6.op_type != "Relu6" or not _single_use(g, r6.outputs[0]):
        return None
    return x, r6


def _divides_by_6(g: Graph, node, tensor: str) -> bool:
    """`node` is Div(tensor, 6) or Mul(tensor, 1/6)."""
    k = _scalar(g, _other_input(node, tensor) or "")
    return ((node.op_type == "Div" and node.inputs[0] == tensor and k == 6.0)
            or (node.op_type == "Mul" and k is not None and math.isclose(k, 1 / 6, rel_tol=1e-6)))


def _clip_hardswish(g: Graph) -> Graph:
    """Div(Mul(x, Relu6(Add(x, 3))), 6) and Mul(Mul(x, Relu6(Add(x, 3))), 1/6) → HardSwish(x)."""
    for add in g.nodes:
        found = _relu6_of_x_plus_3(g, add)
        if found is None:
            continue
        x, r6 = found
        mul = g.consumers_of(r6.outputs[0])[0]
        if mul.op_type != "Mul" or _other_input(mul, r6.outputs[0]) != x or not _single_use(g, mul.outputs[0]):
            continue
        last = g.consumers_of(mul.outputs[0])[0]
        if not _divides_by_6(g, last, mul.outputs[0]):
            continue
        new = make_node(last.name, "HardSwish", [x], last.outputs)
        dead = {add.name, r6.name, mul.name}
        nodes = [new if n is last else n for n in g.nodes if n.name not in dead]
        return _clip_hardswish(g.rewrite(nodes))
    return g


def _gate_hardswish(g: Graph) -> Graph:
    """Mul(x, Div(Relu6(Add(x, 3)), 6)) and Mul(x, Mul(Relu6(Add(x, 3)), 1/6)) → HardSwish(x):
    the gate relu6(x + 3) / 6 computed before the product (PyTorch's hardsigmoid written out)."""
    for add in g.nodes:
        found = _relu6_of_x_plus_3(g, add)
        if found is None:
            continue
        x, r6 = found
        scale = g.consumers_of(r6.outputs[0])[0]
        if not _divides_by_6(g, scale, r6.outputs[0]) or not _single_use(g, scale.outputs[0]):
            continue
        mul = g.consumers_of(scale.outputs[0])[0]
        if mul.op_type != "Mul" or _other_input(mul, scale.outputs[0]) != x:
            continue
        new = make_node(mul.name, "HardSwish", [x], mul.outputs)
        dead = {add.name, r6.name, scale.name}
        nodes = [new if n is mul else n for n in g.nodes if n.name not in dead]
        return _gate_hardswish(g.rewrite(nodes))
    return g
