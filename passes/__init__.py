"""Graph passes. The pipeline is one readable function of named steps."""

from __future__ import annotations

from fusion.core.ir import Graph
from fusion.core.soc import SocSpec
from passes.canonicalize import canonicalize
from passes.fold_affine import fold_affine
from passes.fold_bn import fold_bn
from passes.fuse_dwsep import fuse_dwsep
from passes.grouped_pw import split_concat_to_grouped
from passes.guards import check_new_constants
from passes.head_dwsep import head_as_dwsep, restore_unfused
from passes.layout import insert_layout_conversions
from passes.records import Refusal
from passes.reparam import reparam


def prepare(g: Graph, fold: bool = True) -> tuple[Graph, list[Refusal]]:
    """The steps before fusion: canonical activations, BN into the convs, re-parameterizable branches
    into one conv, constant scale/shift into the convs; every step's result checked (_checked).
    fold=False (--opt-level 0): only the renames of canonicalize; nothing folds."""
    if not fold:
        return _checked("canonicalize", g, canonicalize(g, collapse=False)), []
    g = _checked("canonicalize", g, canonicalize(g))
    g1, why_bn = fold_bn(g)
    g = _checked("fold_bn", g, g1)
    g = _checked("grouped_pw", g, split_concat_to_grouped(g))   # Slice ×g → Conv 1×1 ×g → Concat
    merged, why_rep = reparam(g)   # parallel conv branches (BN folded into each) into one conv
    if merged is not g:   # a BN after the merged branches (RepViT's RepVggDw) folds into it now
        merged, why_bn = fold_bn(merged)
    g, why_bn = _checked("reparam", g, merged), why_bn + why_rep
    g1, why = fold_affine(g)   # scale/shift nodes, and BNs fold_bn could not fold, into neighbour convs
    g = _checked("fold_affine", g, g1)
    names = {n.name for n in g.nodes}
    return g, [r for r in why_bn if r.nodes[0] in names] + why


def optimize(g: Graph, soc: SocSpec, dtype: str | None = None, fuse: bool = True,
             gate=None, per_channel: bool = False, fold: bool = True,
             heads: bool = False) -> tuple[Graph, list[Refusal]]:
    """heads: classifier heads (pool -> Gemm) as DW -> PW blocks where they fuse (the Ascend targets:
    there a fused head joins the network's chain; passes/head_dwsep.py)."""
    g, refusals = prepare(g, fold)
    if fuse:
        g0, found = head_as_dwsep(g) if heads else (g, [])
        g1, why = fuse_dwsep(g0, soc, dtype, gate, per_channel)
        g1, back = restore_unfused(g1, g, found)
        g = _checked("fuse_dwsep", g, g1)
        refusals += [r for r in why if r.nodes[0] not in back]   # a head left as pool + Gemm: no DW of the model
    g = _checked("layout", g, insert_layout_conversions(g))
    return g, refusals


def _checked(step: str, before: Graph, after: Graph) -> Graph:
    check_new_constants(step, before, after)
    return after
