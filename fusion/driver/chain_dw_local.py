"""A 310P two-phase member's GEMM after its own DW phase on each core: a pipe barrier, not a
SyncAll (issue 30, item 4: dependencies finer than an all-core barrier). MODELED.

On 310P one AI core runs both phases of a two-phase kernel. Where every core's GEMM tiles read
only DW results the same core wrote -- all channel blocks of whole rows of DW tiles -- it waits
for no other core: the kernel orders its two phases with PipeBarrier<PIPE_ALL> (its MTE3 writes
land before its MTE2 reads) instead of the soft SyncAll (448 cycles, derived) and the wait for
the slowest core's DW.

Pattern: a two-phase member on a SoC whose cores run both phases, with a DW phase right before
its GEMM (not gemm_only, no SE or norm phase).
Legality (schedules/local_handoff.dw_local_ok, also asked by the kernel emitter): the program's
own assignments -- DW units dealt by row of tiles (every column and ci-block of a row on one
core), GEMM M tiles in bands of the same rows (loops.by_band) -- compared core by core; a member
whose next member is a GEMM stage that follows it locally (chain_local.py) keeps that legal.
Rewrite: candidate tiles -- rows of tiles that give the cores whole bands, the band's rows split
into M tiles; or (tile_m, where no local stage follows) the member's own tile shape or one near it
with an M tile per DW tile, its pixels gathered by tile row -- each marked local_dw; the member
takes the fastest where its body in the chain beats its plan as it was (whose body includes its
SyncAll).
"""

from __future__ import annotations

from dataclasses import replace

from schedules.local_handoff import dw_local_ok, local_ok
from schedules.plan import KernelPlan, make_plan
from schedules.workload import ceil_div

ROWS_KEPT = 3     # tile heights tried per member (module doc: _heights)
GEMM_ROWS = 512   # M-tile rows tried up to (make_plan holds a tile's rows to what L0A / L0C hold)


def _heights(plan: KernelPlan) -> list[int]:
    """Tile heights whose rows of tiles (bands) spread best over the cores -- the busiest core's
    bands against the average -- then tallest (less halo): ROWS_KEPT of them, and the plan's own."""
    wl, cores = plan.workload, plan.soc.vector_cores
    oh = wl.out_height

    def spread(h: int) -> float:
        bands = wl.batch * ceil_div(oh, h)
        return ceil_div(bands, cores) * min(cores, bands) / bands * (cores / min(cores, bands))

    hs = sorted({ceil_div(oh, k) for k in range(1, oh + 1)}, key=lambda h: (spread(h), -h))
    return list(dict.fromkeys(hs[:ROWS_KEPT] + [plan.th]))


def _widths(plan: KernelPlan) -> list[int]:
    ow = plan.workload.out_width
    return sorted({ceil_div(ow, k) for k in (1, 2, 4, 8)} | {plan.tw}, reverse=True)


def _band_rows(plan: KernelPlan, th: int) -> list[int]:
    """GEMM rows (multiples of 16) that split a band of th x OW rows into whole M tiles, largest
    first, two of them (none: no candidate of that height)."""
    band = th * plan.workload.out_width
    return sorted((r for r in range(16, min(band, GEMM_ROWS) + 1, 16) if band % r == 0), reverse=True)[:2]


def _with_tile(plan: KernelPlan, tile, **fields) -> KernelPlan:
    """The plan with this tile, its chain fields kept, `fields` set."""
    keep = dict(gemm_only=plan.gemm_only, x_max=plan.x_max, local_in=plan.local_in, prefetch=plan.prefetch,
                prefetch_to=plan.prefetch_to, w_pw_warm=plan.w_pw_warm)
    return replace(make_plan(plan.workload, tile, plan.soc), **{**keep, **fields})


def with_band(stage: KernelPlan, producer: KernelPlan) -> KernelPlan | None:
    """A local_in GEMM stage re-tiled to follow a local_dw producer: its GEMM rows the producer's,
    its M tiles dealt in the producer's bands; None where it does not fit or is not local."""
    bm = producer.gemm_rows
    p = _with_tile(stage, replace(stage.tile, gemm_bm=bm), local_in=True,
                   m_band=producer.th * producer.workload.out_width // bm)
    if not p.fits() or p.gemm_rows != bm or (p.co_steps > 1 and p.b_resident) or not local_ok(producer, p):
        return None
    return p


def _shapes(plan: KernelPlan, local_next: bool):
    """(th, tw, GEMM rows to try, tile_m) of the candidates: bands (module doc), then -- where no
    local stage follows, which reads the member's output by image rows -- an M tile per DW tile of
    the member's own shape or one near it."""
    for th in _heights(plan):
        for tw in _widths(plan):
            yield th, tw, _band_rows(plan, th), False
    if local_next:
        return
    frac = plan.soc.cube_fractal[0]
    for th in dict.fromkeys((plan.th, ceil_div(plan.th, 2))):
        for tw in dict.fromkeys((plan.tw, ceil_div(plan.tw, 2), 2 * plan.tw)):
            bm = ceil_div(th * tw, frac) * frac
            if bm <= GEMM_ROWS and tw <= plan.workload.out_width:
                yield th, tw, (bm,), True


def candidates(plan: KernelPlan, stage: KernelPlan | None = None):
    """(member, next) plan pairs: the member marked local_dw, passing dw_local_ok (module doc) --
    banded, then (no local stage after it) tile_m; next: the member after it where that is a GEMM
    stage that follows it locally (re-tiled by with_band), else None."""
    if not plan.two_phase or not plan.soc.coupled or plan.gemm_only or plan.workload.se or plan.norm_phase:
        return
    local_next = stage is not None and stage.local_in
    co1 = plan.workload.co1
    seen = set()
    for th, tw, rows, tile_m in _shapes(plan, local_next):
        for cib in dict.fromkeys((plan.tile.cib, 1)):
            for cob, stream in dict.fromkeys(((plan.cob, plan.tile.b_stream or plan.cob < co1), (co1, False))):
                for bm in rows:
                    tile = replace(plan.tile, th=th, tw=tw, cib=cib, cob=cob, b_stream=stream, gemm_bm=bm)
                    if (tile, tile_m) in seen:
                        continue
                    seen.add((tile, tile_m))
                    p = _with_tile(plan, tile, local_dw=True, tile_m=tile_m)
                    if not p.fits() or p.a_keep or dw_local_ok(p) is not None:
                        continue
                    if not local_next:
                        yield p, None
                    elif (q := with_band(stage, p)) is not None:
                        yield p, q


def local_dw_members(chain, plans: dict, body) -> dict:
    """`plans` with each member whose fastest local_dw candidate (with the GEMM stage after it
    where that follows it locally) beats its plan's body in the chain (body(name, plan), µs)
    replaced by it."""
    out = dict(plans)
    for k, n in enumerate(chain.blocks):
        nxt = chain.blocks[k + 1] if k + 1 < len(chain.blocks) else None
        stage = out[nxt] if nxt is not None else None
        best = (out[n], None)
        best_t = body(n, out[n]) + (body(nxt, stage) if stage is not None and stage.local_in else 0.0)
        for p, q in candidates(out[n], stage):
            t = body(n, p) + (body(nxt, q) if q is not None else 0.0)
            if t < best_t:
                best, best_t = (p, q), t
        out[n] = best[0]
        if best[1] is not None:
            out[nxt] = best[1]
    return out
