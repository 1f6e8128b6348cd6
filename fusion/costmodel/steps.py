"""The time one iteration of a lowered program (schedules/program.py) takes on each pipe. MODELED.

The one place both fused-kernel timers (fused.py: one-phase variants, twophase.py) turn a list of
program steps into (MTE2, cube, vector, MTE3) busy time; they differ only in how a copy is timed
(its L2 hit fraction, the AIC's own MTE2), which they pass in.
"""

from __future__ import annotations

from collections.abc import Callable

from fusion.costmodel.primitives import VecWork, cycles_to_us
from fusion.program_totals import MOVE_RATE
from schedules.program import Copy, CubeOp, Move, VectorOp


def iteration_us(soc, dtype: str, acc, it, times: int, copy_us: Callable[[Copy], float]
                 ) -> tuple[float, float, float, float]:
    """(MTE2, cube, vector, MTE3) µs of one program iteration `it`; its counts go to acc x times
    (`copy_us(copy)` times one Copy and counts it). On-chip moves run on the cube side, but the
    L0C -> UB landing of the 310P epilogue on the vector side and UB -> L1 on MTE3."""
    mte2 = mte3 = cube_cyc = l0c_cyc = 0.0
    fractals = 0
    work = VecWork()
    for s in it:
        if isinstance(s, Copy):
            t = copy_us(s)
            if s.direction == "in":
                mte2 += t
            else:
                mte3 += t
        elif isinstance(s, VectorOp):
            work += s.work
        elif isinstance(s, Move):
            if s.path == "L0C->UB":
                l0c_cyc += s.nbytes / soc.l0c_to_ub_bytes_per_cycle
            elif s.path == "UB->L1":   # 310P: MTE3
                mte3 += cycles_to_us(soc, s.nbytes / MOVE_RATE[s.path](soc))
            else:
                cube_cyc += s.nbytes / MOVE_RATE[s.path](soc)
        elif isinstance(s, CubeOp):
            fractals += s.fractals
    t_cube = cycles_to_us(soc, cube_cyc) + (acc.cube(soc, fractals, dtype, times) if fractals else 0.0)
    t_vec = cycles_to_us(soc, l0c_cyc) + acc.vec(soc, work, times)
    return mte2, t_cube, t_vec, mte3
