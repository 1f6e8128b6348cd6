"""reparam: parallel conv branches summed by Add fold into one conv (structural re-parameterization,
what MobileOne's and RepViT's own `reparameterize` do), so their training-form exports fuse.

Pattern: a tree of Adds (inner Add outputs read only by the tree; `Add(t, 0)`, Python's 0 for an
absent branch, counts as one) whose leaves all read one tensor x:
  - Conv leaves (constant weights, output read only by the tree, BN already folded by fold_bn) of
    one group and channel count: depthwise k x k and 1x1 (MobileOne's DW blocks, RepViT's RepVggDw),
    1x1 group 1 (MobileOne's PW blocks), or dense k x k (a stem);
  - x itself (an identity branch), or BatchNormalization(x) with constant statistics (an identity
    BN: a centre tap of gamma / sqrt(var + eps) and a bias of beta - mean * that).
Legality: at least one Conv leaf; one group and channel count; one stride, dilation 1; every smaller kernel centred in the
largest (its pads are the largest's less half the size difference, on every side); an identity
branch needs stride 1 and an output the shape of x. A tree that has the pattern's leaves but breaks a
rule is left as it is with a Refusal saying which rule.
Rewrite: one Conv of the largest kernel: the branches' weights zero-padded to it and summed, the
identity as its centre tap, the biases summed; it writes the root Add's output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fusion.core.ir import Graph, Node, TensorType
from passes.records import Refusal

PASS = "reparam"


@dataclass(frozen=True)
class Branches:
    root: Node                  # the Add whose output the merged conv writes
    adds: tuple[Node, ...]      # every Add of the tree, the root included
    x: str                      # the tensor every branch reads
    convs: tuple[Node, ...]
    identities: tuple[Node | None, ...]   # None: x itself; a BatchNormalization node: BN(x)

    @property
    def members(self) -> tuple[Node, ...]:
        return (*self.adds, *self.convs, *(n for n in self.identities if n is not None))


# --- pattern ------------------------------------------------------------------------------
def _branch_input(g: Graph, t: str) -> tuple[str, Node | None, str]:
    """(tensor the leaf reads, its node, kind conv | bn | identity) of one Add leaf."""
    p = g.producer(t)
    if p is not None and g.uses(t) == 1:
        if p.op_type == "Conv" and g.is_constant(p.inputs[1]):
            return p.inputs[0], p, "conv"
        if p.op_type == "BatchNormalization" and all(g.is_constant(i) for i in p.inputs[1:5]):
            return p.inputs[0], p, "bn"
    return t, None, "identity"


def _zero(g: Graph, t: str) -> bool:
    return g.is_constant(t) and not np.any(np.asarray(g.constants[t]))


def find_trees(g: Graph) -> list[Branches]:
    """Maximal Add trees whose leaves are branches of one tensor (bottom-up over the Adds). An
    `Add(t, 0)` (Python's 0 for an absent branch) is part of a tree with the one leaf t."""
    found: dict[str, Branches] = {}   # Add name -> its tree
    for n in g.nodes:
        if n.op_type != "Add" or len(n.inputs) != 2:
            continue
        ins = [t for t in n.inputs if not _zero(g, t)]
        if not ins or any(g.is_constant(t) for t in ins) or g.types[ins[0]].shape != g.types[n.outputs[0]].shape:
            continue
        adds, leaves = [n], []
        for t in ins:
            p = g.producer(t)
            if p is not None and p.name in found and g.uses(t) == 1:
                sub = found[p.name]
                adds += sub.adds
                leaves += [(sub.x, c, "conv") for c in sub.convs]
                leaves += [(sub.x, b, "bn" if b is not None else "identity") for b in sub.identities]
            else:
                leaves.append(_branch_input(g, t))
        xs = {x for x, _, _ in leaves}
        if len(xs) != 1:
            continue
        convs = tuple(node for _, node, kind in leaves if kind == "conv")
        ids = tuple(node for _, node, kind in leaves if kind != "conv")
        found[n.name] = Branches(n, tuple(adds), xs.pop(), convs, ids)
    inner = {a.name for b in found.values() for a in b.adds if a is not b.root}
    # a tree of identities alone (x + BN(x)) has no conv to merge into
    return [b for name, b in found.items() if name not in inner and b.convs]


# --- legality -----------------------------------------------------------------------------
def legality(g: Graph, b: Branches) -> str | None:
    groups = {(c.attr("group", 1), g.constants[c.inputs[1]].shape[:2]) for c in b.convs}
    if len(groups) != 1:
        return f"branches differ in group or channels {sorted(groups)}"
    strides = {tuple(c.attr("strides", (1, 1))) for c in b.convs}
    if len(strides) != 1:
        return f"branches have different strides {sorted(strides)}"
    if any(tuple(c.attr("dilations", (1, 1))) != (1, 1) for c in b.convs):
        return "a branch is dilated"
    big = _largest(b)
    kh, kw = big.attr("kernel")
    pt, pl, pb, pr = big.attr("pads", (0, 0, 0, 0))
    for c in b.convs:
        h, w = c.attr("kernel")
        dh, dw = kh - h, kw - w
        if dh < 0 or dw < 0 or dh % 2 or dw % 2:
            return f"kernel {h}x{w} of '{c.name}' does not centre in {kh}x{kw}"
        want = (pt - dh // 2, pl - dw // 2, pb - dh // 2, pr - dw // 2)
        if tuple(c.attr("pads", (0, 0, 0, 0))) != want:
            return f"pads {c.attr('pads')} of '{c.name}' do not align it with '{big.name}' (want {want})"
    if b.identities:
        if strides != {(1, 1)} or g.types[b.root.outputs[0]].shape != g.types[b.x].shape:
            return "an identity branch with a strided or shape-changing conv"
        if not (0 <= pt < kh and 0 <= pl < kw):
            return f"pads {big.attr('pads')} put the identity tap outside the {kh}x{kw} kernel"
    if any(g.types[c.outputs[0]].shape != g.types[b.root.outputs[0]].shape for c in b.convs):
        return "branch outputs differ in shape"
    return None


def _largest(b: Branches) -> Node:
    return max(b.convs, key=lambda c: tuple(c.attr("kernel")))


# --- rewrite ------------------------------------------------------------------------------
def merged_weights(g: Graph, b: Branches) -> tuple[np.ndarray, np.ndarray]:
    """The one conv's weight and bias (float64): padded branch weights + identity taps."""
    big = _largest(b)
    kh, kw = big.attr("kernel")
    pt, pl = big.attr("pads", (0, 0, 0, 0))[:2]
    w0 = np.asarray(g.constants[big.inputs[1]])
    cout, cin_g = w0.shape[:2]
    w = np.zeros((cout, cin_g, kh, kw))
    bias = np.zeros(cout)
    for c in b.convs:
        wc = np.asarray(g.constants[c.inputs[1]], np.float64)
        oh, ow = (kh - wc.shape[2]) // 2, (kw - wc.shape[3]) // 2
        w[:, :, oh:oh + wc.shape[2], ow:ow + wc.shape[3]] += wc
        if len(c.inputs) > 2 and c.inputs[2]:
            bias += np.asarray(g.constants[c.inputs[2]], np.float64)
    per_group = cin_g   # identity: output channel c reads input c, index c mod cin_g in its group
    for bn in b.identities:
        scale, shift = np.ones(cout), np.zeros(cout)
        if bn is not None:
            gamma, beta, mean, var = (np.asarray(g.constants[t], np.float64) for t in bn.inputs[1:5])
            scale = gamma / np.sqrt(var + bn.attr("epsilon", 1e-5))
            shift = beta - mean * scale
        ch = np.arange(cout)
        w[ch, ch % per_group, pt, pl] += scale
        bias += shift
    return w, bias


def reparam(g: Graph) -> tuple[Graph, list[Refusal]]:
    refusals: list[Refusal] = []
    consts, types = dict(g.constants), dict(g.types)
    replaced: dict[str, Node] = {}
    removed: set[str] = set()
    for b in find_trees(g):
        why = legality(g, b)
        if why:
            refusals.append(Refusal(PASS, tuple(n.name for n in b.members), why))
            continue
        w, bias = merged_weights(g, b)
        big = _largest(b)
        dt = np.promote_types(g.constants[big.inputs[1]].dtype, np.float32)
        wn, bn = f"{big.name}__w_reparam", f"{big.name}__b_reparam"
        consts[wn], consts[bn] = w.astype(dt), bias.astype(dt)
        types[wn], types[bn] = TensorType(w.shape, str(dt)), TensorType(bias.shape, str(dt))
        replaced[b.root.name] = replace(big, inputs=(b.x, wn, bn), outputs=b.root.outputs)
        removed.update(n.name for n in b.members)
    if not replaced:
        return g, refusals
    nodes = [replaced.get(n.name, n) for n in g.nodes if n.name not in removed or n.name in replaced]
    return g.rewrite(nodes, constants=consts, types=types), refusals
