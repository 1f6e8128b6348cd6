"""The GEMM tile of a chain's gemm_only GEMM stage, chosen in the chain (issue 30: a stage's body
against the vendor's conv it replaces). MODELED.

A stage's plan comes from the two-phase search (fusion/driver/tile_policy.two_phase_plan), which
times it with its identity-copy phase; inside a chain most stages read their boundary input
directly (gemm_only: fusion/driver/chain.direct_stage_reads), so only the GEMM's knobs are left:
the N tile (cob), the rows of an M tile (TileConfig.gemm_bm, which the two-phase search leaves to
its rule) and whether the PW weights stream. With the search's pick MobileNetV2's 14 x 14 and 7 x 7
expansions on 910B2 at batch 1 ran one M tile on 18-20 AICs, each loading all of A (b12: 0.63 us
against the vendor-like conv's 0.49); split in M as well they take 0.43 (0.44 for b15 against 0.55).

Pattern: a gemm_only stage of a chain, not following its producer on the same cores (the local
pass, fusion/driver/chain_local.py, weighs each local pair against the stage on its fastest tile
with the SyncAll before it). A stage's tile is
never forced (chain_stage.GemmStage.tile_source).
Legality: the plan fits (make_plan's buffers, L0C and the bias table).
Rewrite: the candidate with the shortest body in the chain, where shorter than the stage's own --
cob over the balanced splits of Cout, gemm_bm over the M-tile counts that split the fractal rows
evenly (up to two tiles per GEMM core), the weights resident or streamed.
"""

from __future__ import annotations

from dataclasses import replace

from schedules.plan import KernelPlan, balanced_sizes, make_plan
from schedules.twophase import gemm_m
from schedules.workload import ceil_div


def gemm_candidates(plan: KernelPlan):
    """The stage's plan with each (cob, gemm_bm, b_stream) that fits, its chain fields kept."""
    wl, soc = plan.workload, plan.soc
    frac = soc.cube_fractal[0]
    rows = ceil_div(gemm_m(wl), frac)
    bms = sorted({frac * ceil_div(rows, t) for t in range(1, min(rows, 2 * soc.cube_cores) + 1)}, reverse=True)
    for cob in balanced_sizes(wl.co1):
        for bm in bms:
            for stream in (False, True):
                q = make_plan(wl, replace(plan.tile, cob=cob, gemm_bm=bm, b_stream=stream), soc)
                q = replace(q, gemm_only=plan.gemm_only, x_max=plan.x_max, local_in=plan.local_in)
                if q.fits():
                    yield q


def fastest_gemm_tile(plan: KernelPlan, body) -> KernelPlan:
    """The gemm_only stage's plan on its fastest GEMM tile (itself where none is faster, or where
    it follows its producer on the same cores). body(plan): its modeled body in the chain."""
    if not plan.gemm_only or plan.local_in:
        return plan
    best = min(gemm_candidates(plan), key=body, default=plan)
    return best if body(best) < body(plan) else plan


def stage_tiles(chain, plans: dict, tune) -> dict:
    """`plans` with every stage of the chain through tune(name, plan) (fastest_gemm_tile with the
    member's body in the chain)."""
    return {**plans, **{n: tune(n, plans[n]) for n in chain.stages}}
