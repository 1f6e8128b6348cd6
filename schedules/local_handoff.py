"""The legality of a local hand-off: cores that read only rows they wrote themselves, so a pipe
barrier on the core orders the two instead of a SyncAll. Read from the lowered programs' tile
assignments, one predicate each for the pass that marks it and the emitter that refuses it:
- local_ok: a chain's GEMM stage after the member before (fusion/driver/chain_local.py);
- dw_local_ok: a 310P two-phase plan's GEMM phase after its own DW phase (plan.local_dw,
  fusion/driver/chain_dw_local.py)."""

from __future__ import annotations

from dataclasses import replace

from schedules.loops import tile_col, tile_image, tile_row, unit_inner, unit_outer
from schedules.lowering import build_program
from schedules.plan import KernelPlan
from schedules.program import tile_axes
from schedules.program_twophase import gemm_tile, phase, tile_m_tile
from schedules.twophase import fixpipe, gemm_m
from schedules.workload import ceil_div


def _rows_by_core(plan: KernelPlan, prog=None) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Per GEMM core, the (first row, real rows) of its tiles, in the program's assignment
    (tile_m: the runs of its tiles' DW tiles)."""
    prog = prog or build_program(plan)
    gemm = phase(prog, "gemm")
    if plan.tile_m:
        return tuple(tuple(sorted({r for u in core for r in _tile_runs(plan, tile_m_tile(plan, u)[0])}))
                     for core in gemm.assignment)
    m = gemm_m(plan.workload)
    frac = plan.soc.cube_fractal[0]
    m_al = ceil_div(m, frac) * frac
    return tuple(tuple(sorted({gemm_tile(plan, u, prog.bm, m_al, m)[:3:2] for u in core}))
                 for core in gemm.assignment)


def _covered(read: tuple[tuple[int, int], ...], wrote: tuple[tuple[int, int], ...]) -> bool:
    """Every row of the `read` runs lies in the union of the `wrote` runs."""
    merged: list[list[int]] = []
    for w0, wn in sorted(wrote):
        if merged and w0 <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], w0 + wn)
        else:
            merged.append([w0, w0 + wn])
    return all(any(a <= r0 and r0 + n <= b for a, b in merged) for r0, n in read if n)


def _dw_rows_by_core(plan: KernelPlan, prog) -> list[tuple[tuple[int, int], ...]]:
    """Per DW core, the GEMM-row runs of the DW tiles whose every ci-block it ran (one run per
    output row of a tile: GEMM row = (image x OH + oh) x OW + ow)."""
    out = []
    for core in phase(prog, "dw").assignment:
        blocks: dict[int, set[int]] = {}
        for u in core:
            blocks.setdefault(unit_outer(u, plan.ci_steps), set()).add(unit_inner(u, plan.ci_steps))
        out.append(tuple(r for t, qs in blocks.items() if len(qs) == plan.ci_steps for r in _tile_runs(plan, t)))
    return out


def _tile_runs(plan: KernelPlan, t: int) -> list[tuple[int, int]]:
    """GEMM-row runs (first row, rows) of DW tile t's output pixels: one per output row."""
    wl = plan.workload
    rows, cols = tile_axes(wl, plan.th, plan.tw)
    n, i, j = tile_image(t, plan.tiles_h, plan.tiles_w), tile_row(t, plan.tiles_h, plan.tiles_w), tile_col(t, plan.tiles_w)
    oh0, ow0 = i * plan.th, j * plan.tw
    return [((n * wl.out_height + oh0 + r) * wl.out_width + ow0, cols[j][0]) for r in range(rows[i][0])]


def dw_local_ok(plan: KernelPlan) -> str | None:
    """Why the plan's GEMM phase cannot follow its own DW phase on each core with a pipe barrier
    (plan.local_dw; None: it can): one core must run both phases (310P), the DW phase right before
    the GEMM (no SE or norm phase, not gemm_only), the GEMM's tiles dealt by M tile (no A panel
    kept in contiguous ranges), and per core the rows of its GEMM tiles must lie in DW tiles whose
    every ci-block that core ran (tile_m: its GEMM tile's DW tile, whose pixels its M tile holds)."""
    if not plan.two_phase or not plan.soc.coupled:
        return "the two phases run on different cores (910B: AIVs, then AICs)"
    if plan.gemm_only or plan.workload.se or plan.norm_phase:
        return "its GEMM does not follow a DW phase"
    if plan.a_keep:
        return "its GEMM tiles run in contiguous ranges (A panel kept)"
    if plan.tile_m and plan.gemm_rows < ceil_div(plan.th * plan.tw, plan.soc.cube_fractal[0]) * plan.soc.cube_fractal[0]:
        return f"its GEMM tiles of {plan.gemm_rows} rows do not hold a {plan.th} x {plan.tw} DW tile"
    marked = replace(plan, local_dw=True)
    prog = build_program(marked)
    wrote, read = _dw_rows_by_core(marked, prog), _rows_by_core(marked, prog)
    for c, r in enumerate(read):
        if not _covered(r, wrote[c] if c < len(wrote) else ()):
            return f"GEMM core {c} reads rows other cores' DW units write"
    return None


def local_ok(producer: KernelPlan, stage: KernelPlan) -> bool:
    """The stage (a gemm_only two-phase plan) reads only what its cores wrote in the producer: the
    producer's output leaves from the core that ran its GEMM (910B: a Fixpipe epilogue on the AIC --
    an AIV epilogue writes from the AIVs; 310P: the AI core's own vector epilogue), each of its GEMM
    tiles holds all of its output channels, and per core the rows of the stage's tiles lie in rows
    of the producer's tiles on that core."""
    soc = producer.soc
    if not (producer.two_phase and stage.two_phase and stage.gemm_only and soc == stage.soc):
        return False
    if not soc.coupled and not fixpipe(producer.workload, soc):
        return False
    if producer.co_steps != 1:
        return False
    wrote, read = _rows_by_core(producer), _rows_by_core(stage)
    return all(_covered(r, wrote[c] if c < len(wrote) else ()) for c, r in enumerate(read))
