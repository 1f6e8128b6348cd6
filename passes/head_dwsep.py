"""head_dwsep: a classifier head, global average pool -> flatten -> fully connected, written as the
DW -> PW block it is, so the fuse pass takes it and a chain runs it in the network's launch.

The mean over an H x W map is a depthwise conv whose H x W taps are all 1/(H*W) (no padding, one
output pixel), and a Gemm on the pooled (N, C) vector is a 1x1 conv on the (N, C, 1, 1) map. The
vendor runs pool and classifier as two kernels; here they become one fused block (DW on the vector
unit, the GEMM on the cube) and, on the Ascend targets, a member of the chain before them -- the
whole network's tail moves into the one launch (issue 30's mega-kernel).

Pattern: GlobalAveragePool, or ReduceMean over (2, 3), of a static NCHW map; its output read only
by a Flatten(axis 1) or Reshape to (N, C) (none where ReduceMean drops the axes), read only by a
Gemm with alpha = beta = 1, transA = 0, a constant B and a constant or absent bias.
Legality: H and W at most MAX_SIDE (the largest DW kernel the fused plans are checked with).
Rewrite: Conv (depthwise, H x W taps of 1/(H*W), the pool's name) -> Conv 1x1 (B as its weight, the
Gemm's name and bias) -> Flatten (the flatten's name, or a new one) writing the Gemm's output.
A head the fuse pass then leaves unfused goes back to the original nodes (restore_unfused), so a
head runs the new way only as a fused block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fusion.core.ir import Graph, Node, TensorType, make_node

MAX_SIDE = 8   # largest pooled side taken: the DW kernels are checked up to 7x7 (tests/passes)
HEAD_SUFFIX = "__1x1"   # the classifier's (N, M, 1, 1) output, before the Flatten to the model's tensor


@dataclass(frozen=True)
class Head:
    pool: Node
    flatten: Node | None
    gemm: Node
    dw_name: str      # the rewritten depthwise conv's node name (the pool's)


def _sole_reader(g: Graph, t: str) -> Node | None:
    users = g.consumers_of(t)
    return users[0] if len(users) == 1 and t not in g.outputs else None


def _is_pool(n: Node) -> bool:
    if n.op_type == "GlobalAveragePool":
        return True
    return n.op_type == "ReduceMean" and tuple(n.attr("axes", ())) == (2, 3)


def find_heads(g: Graph) -> list[Head]:
    heads = []
    for p in g.nodes:
        if not _is_pool(p) or g.is_constant(p.inputs[0]):
            continue
        x = g.types[p.inputs[0]]
        if x.layout != "NCHW" or len(x.shape) != 4 or not (1 <= x.shape[2] <= MAX_SIDE and 1 <= x.shape[3] <= MAX_SIDE):
            continue
        n, c = x.shape[:2]
        nxt = _sole_reader(g, p.outputs[0])
        flat = None
        if nxt is not None and nxt.op_type in ("Flatten", "Reshape") and g.types[nxt.outputs[0]].shape == (n, c):
            flat, nxt = nxt, _sole_reader(g, nxt.outputs[0])
        elif g.types[p.outputs[0]].shape != (n, c):
            continue
        if nxt is None or nxt.op_type != "Gemm" or nxt.inputs[0] != (flat or p).outputs[0]:
            continue
        if (nxt.attr("alpha", 1.0), nxt.attr("beta", 1.0), nxt.attr("transA", 0)) != (1.0, 1.0, 0):
            continue
        if not all(g.is_constant(t) for t in nxt.inputs[1:]):
            continue
        b = np.asarray(g.constants[nxt.inputs[1]])
        w = b.T if not nxt.attr("transB", 0) else b        # (M, C)
        if w.ndim != 2 or w.shape[1] != c:
            continue
        if len(nxt.inputs) > 2 and np.asarray(g.constants[nxt.inputs[2]]).shape != (w.shape[0],):
            continue   # a bias broadcast over rows (M,) only: the conv's bias
        heads.append(Head(p, flat, nxt, p.name))
    return heads


def head_as_dwsep(g: Graph) -> tuple[Graph, list[Head]]:
    """Every head of the pattern rewritten as DW conv -> 1x1 conv -> Flatten."""
    heads = find_heads(g)
    if not heads:
        return g, []
    consts, types = dict(g.constants), dict(g.types)
    replaced: dict[str, list[Node]] = {}
    removed: set[str] = set()
    for h in heads:
        x = g.types[h.pool.inputs[0]]
        n, c, hh, ww = x.shape
        dt = np.dtype(x.dtype)
        b = np.asarray(g.constants[h.gemm.inputs[1]])
        w = (b.T if not h.gemm.attr("transB", 0) else b).astype(dt)
        m = w.shape[0]
        wdw, bdw, wpw = (f"{h.dw_name}__w_head", f"{h.dw_name}__b_head", f"{h.gemm.name}__w_head")
        consts[wdw] = np.full((c, 1, hh, ww), 1.0 / (hh * ww), dt)
        consts[bdw] = np.zeros(c, dt)
        consts[wpw] = np.ascontiguousarray(w.reshape(m, c, 1, 1))
        for t in (wdw, bdw, wpw):
            types[t] = TensorType(consts[t].shape, str(dt))
        pooled, fc4 = h.pool.outputs[0], f"{h.gemm.outputs[0]}{HEAD_SUFFIX}"
        types[pooled] = TensorType((n, c, 1, 1), str(dt))
        types[fc4] = TensorType((n, m, 1, 1), str(dt))
        dw = make_node(h.dw_name, "Conv", (h.pool.inputs[0], wdw, bdw), (pooled,), kernel=(hh, ww),
                       strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=c, head=True)
        pw_in = (pooled, wpw, *h.gemm.inputs[2:3])
        pw = make_node(h.gemm.name, "Conv", pw_in, (fc4,), kernel=(1, 1), strides=(1, 1),
                       pads=(0, 0, 0, 0), dilations=(1, 1), group=1)
        flat_name = h.flatten.name if h.flatten is not None else f"{h.gemm.name}__flatten"
        flat = make_node(flat_name, "Flatten", (fc4,), h.gemm.outputs, axis=1)
        replaced[h.gemm.name] = [dw, pw, flat]
        removed.update(x.name for x in (h.pool, h.flatten, h.gemm) if x is not None)
    nodes = []
    for nd in g.nodes:
        if nd.name in replaced:
            nodes += replaced[nd.name]
        elif nd.name not in removed:
            nodes.append(nd)
    return g.rewrite(nodes, constants=consts, types=types), heads


def restore_unfused(g: Graph, original: Graph, heads: list[Head]) -> tuple[Graph, set[str]]:
    """`g` (after fusion) with every head whose depthwise conv is still a plain Conv back to the
    original pool -> flatten -> Gemm nodes of `original`; and the restored heads' DW names (their
    fuse refusals concern no DW conv of the model: the caller drops them)."""
    names = {nd.name: nd for nd in g.nodes}
    back = [h for h in heads if h.dw_name in names and names[h.dw_name].op_type == "Conv"]
    if not back:
        return g, set()
    drop, put = set(), {}
    for h in back:
        flat_name = h.flatten.name if h.flatten is not None else f"{h.gemm.name}__flatten"
        drop.update((h.dw_name, h.gemm.name, flat_name))
        put[h.dw_name] = [x for x in (h.pool, h.flatten, h.gemm) if x is not None]
    nodes = []
    for nd in g.nodes:
        if nd.name in put:
            nodes += put[nd.name]
        elif nd.name not in drop:
            nodes.append(nd)
    consts = {**original.constants, **g.constants}
    restored = {t for h in back for x in put[h.dw_name] for t in (*x.inputs, *x.outputs) if t}
    types = {**original.types, **g.types, **{t: original.types[t] for t in restored}}
    return g.rewrite(nodes, constants=consts, types=types), {h.dw_name for h in back}


__all__ = ["HEAD_SUFFIX", "Head", "MAX_SIDE", "find_heads", "head_as_dwsep", "restore_unfused"]
