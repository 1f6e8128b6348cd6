"""The time one iteration of a lowered program (schedules/program.py) takes on each pipe. MODELED.

The one place every timer -- the fused kernels' (fused.py: one-phase variants, twophase.py) and
the vendor-like baseline's (baseline.py) -- turns a list of program steps into (MTE2, MTE1, cube,
vector, MTE3) busy time; they differ only in how a copy is timed (its L2 hit fraction, the AIC's
own MTE2), which they pass in. And the one rule for the cube's operand loads (mte1_stage): MTE1
is a pipe of its own, overlapping the Mmads as far as the kernel's L0 queues allow.
"""

from __future__ import annotations

from collections.abc import Callable

from fusion.cost.pipes import CStage, _st
from fusion.cost.primitives import VecWork, cycles_to_us
from fusion.core.soc import MOVE_PIPE, move_rate
from schedules.program import Copy, CubeOp, Move, VectorOp
from schedules.steps import L0_RING, l0_copies  # noqa: F401,F811  (l0_copies: the timers import it from here)


def iteration_us(soc, dtype: str, acc, it, times: int, copy_us: Callable[[Copy], float]
                 ) -> tuple[float, float, float, float, float]:
    """(MTE2, MTE1, cube, vector, MTE3) µs of one program iteration `it`; its counts go to acc x
    times (`copy_us(copy)` times one Copy and counts it). On-chip moves busy their MOVE_PIPE (L1 ->
    L0A / L0B MTE1; the 310P epilogue's L0C -> UB the vector side, its UB -> L1 MTE3; the constant
    fills the cube)."""
    mte2 = mte3 = cube_cyc = l0c_cyc = mte1_cyc = 0.0
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
            elif pipe == "MTE1":
                mte1_cyc += cyc
            else:
                cube_cyc += cyc
        elif isinstance(s, CubeOp):
            fractals += s.fractals
    t_cube = cycles_to_us(soc, cube_cyc) + (acc.cube(soc, fractals, dtype, times) if fractals else 0.0)
    t_vec = cycles_to_us(soc, l0c_cyc) + acc.vec(soc, work, times)
    return mte2, cycles_to_us(soc, mte1_cyc), t_cube, t_vec, mte3


def mte1_stage(us: float, l0_copies: int, label: str = "L1->L0A/B", after: int | None = None) -> CStage:
    """The L1 -> L0A / L0B loads of one iteration as a simulated stage (fusion/cost/pipes.py), between
    the step's MTE2 stage and its Mmad: on MTE1, filling the L0 operand ring that the Mmad frees.
    l0_copies: the depth of the kernel's A2 / B2 queues -- 2: the loads of step k + 1 run while
    the Mmad of step k does (the vendor-like GEMM; the fused two-phase GEMM loop); 1: each load
    waits for the Mmad before it to free L0, so loads and Mmads run one after the other."""
    return _st("MTE1", us, label, L0_RING, l0_copies, after)

