"""Grouped pointwise convs: the `Slice ×g → Conv 1×1 ×g → Concat` spelling (how some exporters write
a grouped 1×1; the importer turns Split into Slices) becomes one grouped Conv, and the fuse pass
takes a grouped PW as the dense block-diagonal GEMM its kernel runs -- where that costs little.

pattern   Concat(axis 1) of g Conv 1×1 outputs (one use each), Conv i reading Slice i of one tensor x
          (axis 1, step 1, consecutive equal ranges covering x), constant weights, one shape
legality  stride 1, no pads, no group of their own (else left as it is)
rewrite   one Conv with group g, the weights concatenated along Cout, the biases too

The fused kernel's PW is one dense GEMM over all Cin (the plan has no per-group K range), so a
grouped PW runs with its weights expanded to a block-diagonal (Cout, Cin) matrix: g times the
multiply-adds of the grouped conv. `dense_refusal` allows that up to MAX_GROUPS (the waste at most
doubles the PW's work) and names the factor above it.
"""

from __future__ import annotations

import numpy as np

from fusion.core.ir import Graph, Node, TensorType, make_node

MAX_GROUPS = 2


def dense_refusal(groups: int, cin: int, cout: int) -> str | None:
    """Why a grouped PW of `groups` groups is not fused (None: fused as a block-diagonal GEMM)."""
    if groups <= MAX_GROUPS:
        return None
    return (f"pointwise conv has {groups} groups ({cin // groups} -> {cout // groups} channels each): the fused "
            f"kernel's PW is one dense GEMM over all {cin} input channels (the plan has no per-group K "
            f"range), so the block-diagonal weights would cost {groups}x the grouped conv's multiply-adds; "
            f"fused up to {MAX_GROUPS} groups")


def dense_weights(w: np.ndarray, groups: int) -> np.ndarray:
    """(Cout, Cin/g, 1, 1) grouped weights → (Cout, Cin, 1, 1), zero outside each group's block."""
    cout, cig = w.shape[:2]
    cog = cout // groups
    out = np.zeros((cout, cig * groups, *w.shape[2:]), w.dtype)
    for i in range(groups):
        out[i * cog:(i + 1) * cog, i * cig:(i + 1) * cig] = w[i * cog:(i + 1) * cog]
    return out


def _branch(g: Graph, t: str) -> tuple[Node, Node] | None:
    """(Slice, Conv) when `t` is a plain 1×1 conv of a channel slice, read once."""
    conv = g.producer(t)
    if conv is None or conv.op_type != "Conv" or g.uses(t) != 1 or not g.is_constant(conv.inputs[1]):
        return None
    if (conv.attr("kernel") != (1, 1) or conv.attr("group", 1) != 1 or conv.attr("strides", (1, 1)) != (1, 1)
            or conv.attr("pads", (0, 0, 0, 0)) != (0, 0, 0, 0) or conv.attr("dilations", (1, 1)) != (1, 1)):
        return None
    if len(conv.inputs) > 2 and conv.inputs[2] and not g.is_constant(conv.inputs[2]):
        return None
    sl = g.producer(conv.inputs[0])
    if sl is None or sl.op_type != "Slice" or g.uses(conv.inputs[0]) != 1:
        return None
    return sl, conv


def split_concat_to_grouped(g: Graph) -> Graph:
    nodes = list(g.nodes)
    consts, types = dict(g.constants), dict(g.types)
    changed = False
    for cat in g.nodes:
        if cat.op_type != "Concat" or cat.attr("axis") != 1 or len(cat.inputs) < 2:
            continue
        parts = [_branch(g, t) for t in cat.inputs]
        if any(p is None for p in parts):
            continue
        x = parts[0][0].inputs[0]
        xs = g.types[x].shape
        if len(xs) != 4 or any(s.inputs[0] != x for s, _ in parts):
            continue
        width = xs[1] // len(parts)
        ok = width * len(parts) == xs[1]
        for i, (s, c) in enumerate(parts):
            st = s.attr("starts")
            shape = g.types[s.outputs[0]].shape
            ok = ok and tuple(st) == (0, i * width, 0, 0) and tuple(s.attr("steps")) == (1, 1, 1, 1) \
                and tuple(shape) == (xs[0], width, *xs[2:]) \
                and g.constants[c.inputs[1]].shape == g.constants[parts[0][1].inputs[1]].shape
        if not ok:
            continue
        ws = [np.asarray(g.constants[c.inputs[1]]) for _, c in parts]
        bs = [np.asarray(g.constants[c.inputs[2]]) if len(c.inputs) > 2 and c.inputs[2]
              else np.zeros(w.shape[0], w.dtype) for (_, c), w in zip(parts, ws)]
        wname, bname = f"{cat.name}__w_grouped", f"{cat.name}__b_grouped"
        consts[wname], consts[bname] = np.concatenate(ws), np.concatenate(bs).astype(ws[0].dtype)
        for k in (wname, bname):
            types[k] = TensorType(consts[k].shape, str(consts[k].dtype))
        conv = make_node(cat.name, "Conv", [x, wname, bname], cat.outputs, kernel=(1, 1), strides=(1, 1),
                         pads=(0, 0, 0, 0), dilations=(1, 1), group=len(parts))
        drop = {n.name for p in parts for n in p}
        nodes = [conv if n.name == cat.name else n for n in nodes if n.name not in drop]
        changed = True
    return g.rewrite(nodes, constants=consts, types=types) if changed else g
