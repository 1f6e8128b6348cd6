"""The time one iteration of a lowered program (schedules/program.py) takes on each pipe. MODELED.

The one place every timer -- the fused kernels' (fused.py: one-phase variants, twophase.py) and
the vendor-like baseline's (baseline.py) -- turns a list of program steps into (MTE2, MTE1, cube,
vector, MTE3) busy time; they differ only in how a copy is timed (its L2 hit fraction, the AIC's
own MTE2), which they pass in. And the one place an iteration becomes simulated stages
(stages_of), from its program's pipeline: so the cube's operand loads are one rule too -- MTE1 is a
pipe of its own (an MTE1 StageSpec filling the L0 ring, schedules/steps.L0_RING), overlapping the
Mmads as far as the kernel's L0 queues (schedules/steps.l0_copies) allow.
"""

from __future__ import annotations

from collections.abc import Callable

from fusion.cost.pipes import _st
from fusion.cost.primitives import VecWork, cycles_to_us
from schedules.program import Copy
from schedules.steps import (CUBE_CYC, FRACTALS, MTE1_MOVE, MTE3_MOVE, PIPE_ORDER, VEC_INSTRS, VEC_MOVE, VEC_REPEATS,
                             Refill, fold_steps)


def iteration_us(soc, dtype: str, acc, it, times: int, copy_us: Callable[[Copy], float]
                 ) -> tuple[float, float, float, float, float]:
    """(MTE2, MTE1, cube, vector, MTE3) µs of one program iteration `it`; its counts go to acc x
    times (`copy_us(copy)` times one Copy and counts it). The on-chip steps' sums are
    schedules/steps.fold_steps' (the one walker the counts use too): moves busy their MOVE_PIPE
    (L1 -> L0A / L0B MTE1; the 310P epilogue's L0C -> UB the vector side, its UB -> L1 MTE3; the
    constant fills the cube), vector ops and Mmads by their counts."""
    mte2 = mte3 = 0.0
    rest = []
    for s in it:
        if type(s) is Copy:
            t = copy_us(s)
            if s.direction == "in":
                mte2 += t
            else:
                mte3 += t
        else:
            rest.append(s)
    v = fold_steps(soc, None, rest).tolist()   # plain floats (timelines, JSON)
    fractals = int(v[FRACTALS])
    t_cube = cycles_to_us(soc, v[CUBE_CYC]) + (acc.cube(soc, fractals, dtype, times) if fractals else 0.0)
    t_vec = cycles_to_us(soc, v[VEC_MOVE]) + acc.vec(soc, VecWork(int(v[VEC_INSTRS]), int(v[VEC_REPEATS])), times)
    return mte2, cycles_to_us(soc, v[MTE1_MOVE]), t_cube, t_vec, mte3 + cycles_to_us(soc, v[MTE3_MOVE])


def stages_of(pipeline, it, times: tuple, q: int = 0, gate: int | None = None) -> tuple:
    """The compiled stages (fusion/cost/pipes.CStage) of one iteration `it` of a program whose
    iterations run as `pipeline` (schedules/steps.StageSpec, in issue order), each pipe's stage
    taking that pipe's time in `times` ((MTE2, MTE1, cube, vector, MTE3), iteration_us). The one
    rule every timer uses: a stage fills its ring (a when_out ring only in an iteration that
    writes out), labels take {q} (the iteration's index), a gated stage waits for the step `gate`
    places back, an optional stage with no work is left out; an iteration with a Refill step starts
    its first stage after the core's step it names (the copy it refills is free then)."""
    t = dict(zip(PIPE_ORDER, times))
    out = any(type(s) is Copy and s.direction == "out" for s in it)
    refill = next((-s.back for s in it if type(s) is Refill), None)
    kept = [s for s in pipeline if t[s.pipe] or not s.optional]
    return tuple(_st(s.pipe, t[s.pipe], s.label.format(q=q), s.ring if out or not s.when_out else None, s.depth,
                     gate if s.gated else (refill if k == 0 else None))
                 for k, s in enumerate(kept))
