"""The time one iteration of a lowered program (schedules/program.py) takes on each pipe. MODELED.

The one place both fused-kernel timers (fused.py: one-phase variants, twophase.py) turn a list of
program steps into (MTE2, cube, vector, MTE3) busy time; they differ only in how a copy is timed
(its L2 hit fraction, the AIC's own MTE2), which they pass in.
"""

from __future__ import annotations

from collections.abc import Callable

from fusion.cost.primitives import VecWork, cycles_to_us
from fusion.core.soc import MOVE_PIPE, move_rate
from schedules.program import Copy, CubeOp, Move, VectorOp


def iteration_us(soc, dtype: str, acc, it, times: int, copy_us: Callable[[Copy], float]
                 ) -> tuple[float, float, float, float]:
    """(MTE2, cube, vector, MTE3) µs of one program iteration `it`; its counts go to acc x times
    (`copy_us(copy)` times one Copy and counts it). On-chip moves busy their MOVE_PIPE (the cube
    side; the 310P epilogue's L0C -> UB the vector side, its UB -> L1 MTE3)."""
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
            cyc = s.nbytes / move_rate(soc, s.path)
            pipe = MOVE_PIPE[s.path]
            if pipe == "vector":
                l0c_cyc += cyc
            elif pipe == "MTE3":
                mte3 += cycles_to_us(soc, cyc)
            else:
                cube_cyc += cyc
        elif isinstance(s, CubeOp):
            fractals += s.fractals
    t_cube = cycles_to_us(soc, cube_cyc) + (acc.cube(soc, fractals, dtype, times) if fractals else 0.0)
    t_vec = cycles_to_us(soc, l0c_cyc) + acc.vec(soc, work, times)
    return mte2, t_cube, t_vec, mte3
