"""The fused blocks' KernelPlans of a model, chosen by the tile policy `compile` uses (fusion.driver.tile_policy) but without
building the LLVM kernels (the vendor check and the sweep need only the plans)."""

from __future__ import annotations

from fusion.frontend.onnx_import import load_graph
from schedules.targets import parse_target
from fusion.driver.tile_policy import TileOverride, choose_tile
from passes import optimize
from passes.fuse_dwsep import FUSED_OP, fused_workload
from schedules.plan import KernelPlan, check_budget


def block_plans(model, target="npuir", dtype: str | None = None, tile: TileOverride | None = None,
                tuned_tiles=None, input_shapes=None) -> list[KernelPlan]:
    tgt = parse_target(target)
    g = load_graph(model, input_shapes)
    dtype = dtype or (g.types[g.inputs[0]].dtype if g.inputs else "float32")
    g, _refusals = optimize(g, tgt.soc, dtype, fuse=True)
    plans = []
    for n in g.nodes:
        if n.op_type == FUSED_OP:
            wl = fused_workload(g, n, dtype)
            choice = choose_tile(wl, tgt, tile, tuned_tiles(wl, tgt) if tuned_tiles else None)
            plans.append(check_budget(choice.plan))
    return plans
