"""A chain member's GEMM tile chosen in the chain (issue 30: bodies against the vendor-like kernels
they replace). MODELED.

A member's two-phase plan comes from the two-phase search (fusion/driver/tile_policy.two_phase_plan),
which varies the DW tile, the N tile (cob), cib and cores but leaves the GEMM's M-tile rows to their
rule, and times a GEMM stage with the identity-copy phase it then does not run inside a chain
(gemm_only: fusion/driver/chain.direct_stage_reads). In the chain each member's GEMM knobs are
searched again by its body: the N tile, the rows of an M tile (TileConfig.gemm_bm) and whether the
PW weights stream, its DW knobs kept. MobileNetV2 b1 on 910B2: the 14 x 14 expansions ran one M
tile on 18 AICs, each loading all of A (0.63 us against the vendor-like conv's 0.49), split in M as
well 0.43; MobileNetV1 b1 on 310P3: b2-b11's GEMM phases on taller M tiles, 7.7 us of bodies less.

Pattern: a two-phase chain member that does not follow its producer on the same cores nor is the
producer of one (fusion/driver/chain_local.py: the local pass weighs each local pair against both
members on their fastest tiles with the SyncAll between), and whose tile is not forced.
Legality: the plan fits (make_plan's buffers, L0C and the bias table).
Rewrite: the candidate with the shortest body in the chain where shorter than the member's own --
cob over the balanced splits of Cout, gemm_bm over the M-tile counts that split the fractal rows
evenly (up to two tiles per GEMM core), the weights resident or streamed.
"""

from __future__ import annotations

from fusion.driver.chain_local import with_tile
from schedules.plan import KernelPlan, balanced_sizes
from schedules.twophase import gemm_m
from schedules.workload import ceil_div


def same_program(plan: KernelPlan) -> tuple:
    """What a candidate's lowered program depends on beyond its DW knobs: the knobs as the plan
    applies them (rows held to what L0 holds, weights streamed where they cannot stay resident)
    and its buffers. Two candidates with the same key lower to the same program, so the search
    times one of them (MobileNetV1 / V2 b1, both SoCs: 7,820 candidates, 5,483 distinct keys, the
    bodies within a key equal to the bit)."""
    return (plan.cob, plan.gemm_rows, plan.b_resident, plan.a_keep, plan.bias_in_cube, plan.gemm_cap,
            tuple(plan.buffers))


def gemm_candidates(plan: KernelPlan):
    """The plan with each (cob, gemm_bm, b_stream) that fits and lowers to a program not yielded
    before (same_program), its other knobs and chain fields kept."""
    wl, soc = plan.workload, plan.soc
    frac = soc.cube_fractal[0]
    rows = ceil_div(gemm_m(wl), frac)
    bms = sorted({frac * ceil_div(rows, t) for t in range(1, min(rows, 2 * soc.cube_cores) + 1)}, reverse=True)
    seen = set()
    for cob in balanced_sizes(wl.co1):
        for bm in bms:
            for stream in (False, True):
                q = with_tile(plan, cob=cob, gemm_bm=bm, b_stream=stream)
                if q is not None and (key := same_program(q)) not in seen:
                    seen.add(key)
                    yield q


def fastest_gemm_tile(plan: KernelPlan, body) -> KernelPlan:
    """The two-phase plan on its fastest GEMM tile (itself where none is faster, or where it follows
    its producer on the same cores). body(plan): its modeled body in the chain."""
    if not plan.two_phase or plan.local_in:
        return plan
    best = min(gemm_candidates(plan), key=body, default=plan)
    return best if body(best) < body(plan) else plan


def member_tiles(chain, plans: dict, tune) -> dict:
    """`plans` with every member through tune(name, plan) (fastest_gemm_tile with the member's body
    in the chain), except the producers of members that follow them on the same cores (their GEMM
    rows are their local stage's)."""
    keep = {chain.blocks[k - 1] for k in range(1, len(chain.blocks)) if plans[chain.blocks[k]].local_in}
    return {n: p if n in keep else tune(n, p) for n, p in plans.items()}
