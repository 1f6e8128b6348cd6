"""Graph passes. The pipeline is one readable function of named steps."""

from __future__ import annotations

from fusion.ir import Graph
from fusion.soc import SocSpec
from passes.canonicalize import canonicalize
from passes.fold_bn import fold_bn
from passes.fuse_dwsep import fuse_dwsep
from passes.layout import insert_layout_conversions
from passes.records import Refusal


def optimize(g: Graph, soc: SocSpec, dtype: str | None = None, fuse: bool = True) -> tuple[Graph, list[Refusal]]:
    refusals: list[Refusal] = []
    g = canonicalize(g)
    g, why = fold_bn(g)
    refusals += why
    if fuse:
        g, why = fuse_dwsep(g, soc, dtype)
        refusals += why
    g = insert_layout_conversions(g)
    return g, refusals
