"""The legality of a local hand-off in a chain (fusion/driver/chain_local.py): a GEMM stage whose
cores read only rows they wrote themselves in the member before, so a pipe barrier on the core
orders the two instead of a SyncAll. One predicate for the chain pass and the chain emitter, read
from the two members' lowered programs (their GEMM phases' tile assignments)."""

from __future__ import annotations

from schedules.lowering import build_program
from schedules.plan import KernelPlan
from schedules.program_twophase import gemm_tile
from schedules.twophase import fixpipe, gemm_m
from schedules.workload import ceil_div


def _rows_by_core(plan: KernelPlan) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Per GEMM core, the (first row, real rows) of its tiles, in the program's assignment."""
    prog = build_program(plan)
    gemm = next(ph for ph in prog.phases if ph.name == "gemm")
    m = gemm_m(plan.workload)
    frac = plan.soc.cube_fractal[0]
    m_al = ceil_div(m, frac) * frac
    return tuple(tuple(sorted({gemm_tile(plan, u, prog.bm, m_al, m)[:3:2] for u in core}))
                 for core in gemm.assignment)


def _covered(read: tuple[tuple[int, int], ...], wrote: tuple[tuple[int, int], ...]) -> bool:
    """Every row of the `read` runs lies in a `wrote` run."""
    return all(any(w0 <= r0 and r0 + n <= w0 + wn for w0, wn in wrote) for r0, n in read if n)


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
