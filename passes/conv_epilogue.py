"""Fold a convolution's activation and residual Add into the convolution (its kernel's epilogue).

An inference runtime runs conv + bias + activation (+ residual Add) as one kernel; the unfused
llvm baseline should too, or every activation costs a full read and write of the tensor. This
pass runs for the llvm target only, after fusion: a Conv that is not part of a fused block
absorbs
  - the activation on its output (its sole consumer: Relu, Relu6, Clip, HardSwish, ...; the
    same recogniser as the fuser's, passes.fuse_dwsep.activation_at), then
  - an Add of its (activated) output and another computed tensor of the same shape and layout,
    produced before the conv (so the merged node cannot close a cycle).
The merged node keeps the conv's name and attributes, and says what it absorbed in
`epilogue_act` (an activation string of schedules.activations) and `residual` (the Add's other
operand becomes input 3; an absent bias is written as ""). Intermediate tensors that become
internal to the kernel must have no other use (graph outputs included).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from fusion.core.ir import Graph, Node
from passes.fuse_dwsep import activation_at

log = logging.getLogger("megafuse.epilogue")


def _sole_user(g: Graph, t: str) -> Node | None:
    users = g.consumers_of(t)
    return users[0] if len(users) == 1 and t not in g.outputs else None


def _residual(g: Graph, t: str, order: dict[str, int], conv: Node) -> tuple[Node, str] | None:
    """(Add node, other operand) when `t`'s sole use is an Add with a computed tensor of t's type."""
    add = _sole_user(g, t)
    if add is None or add.op_type != "Add" or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
        return None
    other = add.inputs[1] if add.inputs[0] == t else add.inputs[0]
    if g.is_constant(other) or g.types[other] != g.types[t] or g.types[add.outputs[0]] != g.types[t]:
        return None
    prod = g.producer(other)
    if prod is not None and order[prod.name] >= order[conv.name]:
        return None
    return add, other


def fold_conv_epilogues(g: Graph) -> Graph:
    order = {n.name: i for i, n in enumerate(g.nodes)}
    absorbed: set[str] = set()
    merged: dict[str, Node] = {}
    for n in g.nodes:
        if n.op_type != "Conv" or n.name in absorbed or n.attr("epilogue_act") is not None:
            continue
        out, act_kind, eaten = n.outputs[0], "none", []
        act, _ = activation_at(g, out)
        if act is not None:
            act_kind, eaten = act.act, list(act.nodes)
            out = act.output
        res = _residual(g, out, order, n)
        inputs = list(n.inputs) + [""] * (3 - len(n.inputs))
        if res is not None:
            eaten.append(res[0])
            inputs.append(res[1])
            out = res[0].outputs[0]
        if not eaten:
            continue
        absorbed.update(m.name for m in eaten)
        log.info("conv '%s' runs %s in its epilogue", n.name, " + ".join(m.op_type for m in eaten))
        merged[n.name] = replace(n.with_attrs(epilogue_act=act_kind, residual=res is not None),
                                 inputs=tuple(inputs), outputs=(out,))
    if not merged:
        return g
    return g.rewrite(merged.get(n.name, n) for n in g.nodes if n.name not in absorbed)
