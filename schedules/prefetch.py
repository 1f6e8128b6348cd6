"""Reading a later chain member's PW weights ahead into L2 (KernelPlan.prefetch, KernelPlan.w_pw_warm).

A chain is one kernel, so a member whose DW phase leaves its cores' MTE2 idle (the vector-bound DW
of a high-resolution block at batch 1) can read bytes a later, weight-bound member needs -- on
310P3 the 1 MB PW weights of MobileNetV1's b12, read from 168 GB/s of HBM -- so that member's first
read of them hits L2 (MODELING ASSUMPTION, schedules/l2.py: a read allocates in L2, the chain's
distinct bytes between the two reads fitting in it: fusion/driver/chain_prefetch.py). There is no
L2 prefetch instruction in Ascend C: the bytes are read with DataCopy into one L1 scratch of
PF_PIECE bytes that nothing reads (twophase_prefetch.h).

The reads are pieces of PF_PIECE bytes (the last ragged), dealt over the DW phase's cores with
units as its units are (UNITS_OF / UNIT_AT over those cores), and a core's pieces spread evenly over its
units, half a period in (loops.PIECE_FIRST, PIECES_AFTER). So the program (this module) and
the kernel evaluate the same formulas, and the soft SyncAll that ends the phase, polling through
the core's in-order MTE2 queue, waits for the last piece."""

from __future__ import annotations

from schedules.loops import block_len, piece_first, pieces_after, unit_at, units_of
from schedules.plan import PF_PIECE
from schedules.program import Copy
from schedules.workload import ceil_div

PF_ALIGN = 32          # a read's bytes: whole 32 B blocks (DataCopy's unit)


def pieces(nbytes: int) -> int:
    return ceil_div(nbytes, PF_PIECE)


def prefetch_steps(plan, assignment: tuple[tuple[int, ...], ...]) -> tuple:
    """Per core of the DW phase (its `assignment`), per unit position k: the reads it issues after
    that unit (Copy steps into the L1 scratch, kind weights, GM tensor w_pf); () without a prefetch."""
    total = plan.prefetch
    if not total:
        return ()
    d = sum(1 for core in assignment if core)   # the cores with units: the first d (round robin)
    n = pieces(total)
    out = []
    for ci, core in enumerate(assignment):
        own = units_of(ci, n, d) if core else 0
        per = []
        for k in range(len(core)):
            j0 = piece_first(k, len(core), own)
            js = range(j0, j0 + pieces_after(k, len(core), own))
            per.append(tuple(Copy("weights", "in", "pf_l1", "w_pf", block_len(unit_at(ci, j, d), PF_PIECE, total), 1)
                             for j in js))
        out.append(tuple(per))
    return tuple(out)


def prefetch_ok(plan) -> str | None:
    """Why `plan` cannot read ahead (None: it can): whole 32 B blocks, a DW phase, and the 310P core
    kernel (the reads ride in the DW loop of twophase_core.h; on 910B the vendor's own npu_prefetch
    does this for its kernels: fusion/driver/chain_prefetch.py)."""
    if plan.prefetch % PF_ALIGN:
        return f"{plan.prefetch} bytes are not whole {PF_ALIGN} B blocks"
    if plan.gemm_only:
        return "a gemm_only plan has no DW phase"
    if not plan.two_phase:
        return "only a two-phase plan's DW phase reads ahead"
    if not plan.soc.coupled:
        return "reads ahead run in the 310P core kernel only"
    return None


def prefetch_ranges(plans: list) -> list[tuple[int, int, int, int]]:
    """(host, consumer, first byte of the consumer's w_pw, bytes) of every read ahead in the chain
    whose members run `plans` (in order): each consumer's hosts in chain order, their ranges one
    after another from the start of its w_pw. The one layout the chain kernel and its check read."""
    at: dict[int, int] = {}
    out = []
    for h, p in enumerate(plans):
        if p.prefetch:
            c = h + p.prefetch_to
            out.append((h, c, at.get(c, 0), p.prefetch))
            at[c] = at.get(c, 0) + p.prefetch
    return out
