"""The vendor-like baseline kernels' programs (schedules/baseline_program.py) on the step simulator
(fusion/cost/pipes.py), with the fused kernels' hardware facts: every iteration is one simulated
step whose pipe times come from fusion/cost/steps.iteration_us (copies by dma_us, on-chip moves on
their MOVE_PIPE, vector ops and Mmads by their counts). MODELED.

An iteration's stages run MTE2 -> cube -> vector -> MTE3 in order, each handing its buffer to the
next (double-buffered: two copies, L0C as many base blocks as it holds); the first K step of a
GEMM base block waits until L0C has a free block (the epilogue `l0c_slots` blocks earlier has
drained it). A long run of equal units is simulated until its period is steady, and the rest of
the run advances the core's state by that period per unit (exact for a periodic steady state;
tests/cost/test_baseline_program.py checks it against the full simulation).

L2: a kernel's re-reads hit L2 (hit fraction 1 - unique HBM bytes / DMA bytes read), its writes
are absorbed when they fit (schedules/l2.write_hit) -- the rule of the fused kernels' model.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from fusion.core.soc import SocSpec, cube_side
from fusion.cost.pipes import CoreRun, _sim
from fusion.cost.primitives import PIPES, dma_us
from fusion.cost.results import _Acc, l2_floor_us
from fusion.cost.steps import iteration_us, stages_of
from schedules.baseline_program import BaselineProgram
from schedules.l2 import write_hit
from schedules.steps import Copy, CubeOp, count_steps

BASE_PIPES = PIPES   # MTE1 among them (the L1 -> L0A / L0B loads, soc.MOVE_PIPE)
STEADY_UNITS = 6      # units of a run simulated before its period is checked for steadiness
MAX_UNITS = 64        # a run that is not steady by then is simulated in full


def launch_us(soc: SocSpec, cores: int) -> float:
    return soc.launch_base_us + soc.launch_per_core_us * cores


@dataclass(frozen=True)
class VendorKernel:
    name: str
    kind: str
    members: tuple[str, ...]
    cores: int
    launch_us: float
    mte2_us: float
    cube_us: float
    vector_us: float
    mte3_us: float
    fill_us: float          # time on the busiest core's critical path not hidden behind its busiest pipe
    time_us: float
    split: tuple[int, int] = (1, 1)
    engine: str = ""
    mte1_us: float = 0.0    # L1 -> L0A/L0B loads (the cube's operand pipe)
    counts: dict = field(default_factory=dict, compare=False)
    hbm_bytes: float = 0.0  # what reaches HBM: the unique reads and the writes L2 does not absorb

    @property
    def gm_bytes(self) -> int:
        """Bytes the kernel's DMAs move (MTE2 + MTE3), L2 hits included."""
        return int(self.counts.get("gm_read_bytes", 0) + self.counts.get("gm_write_bytes", 0))

    @property
    def body_us(self) -> float:
        return self.time_us - self.launch_us


def _hits(soc: SocSpec, prog: BaselineProgram) -> tuple[float, float]:
    read = sum(st.nbytes * n for st, n in prog.steps() if type(st) is Copy and st.direction == "in")
    hit_in = max(0.0, 1.0 - prog.hbm_in_bytes / read) if read else 0.0
    return hit_in, write_hit(soc, prog.out_bytes)


class _Timer:
    def __init__(self, soc: SocSpec, prog: BaselineProgram):
        self.soc, self.prog = soc, prog
        self.side = cube_side(soc) if prog.side == "aic" else soc
        self.active = prog.cores
        self.hit_in, self.hit_out = _hits(soc, prog)
        self.acc = _Acc()
        self.cache: dict = {}

    def copy_us(self, c: Copy) -> float:
        hit = self.hit_in if c.direction == "in" else self.hit_out
        return dma_us(self.side, c.nbytes, c.bursts, c.direction, self.active, hit)

    def stages(self, it) -> tuple:
        """The compiled stages of one iteration (fusion/cost/pipes.CStage tuples): the program's
        pipeline (BaselineProgram.pipeline) by the rule every timer uses (steps.stages_of); the
        L1 -> L0A/L0B loads run on their own pipe (MTE1) beside the Mmads, double-buffered."""
        got = self.cache.get(it)
        if got is None:
            times = iteration_us(self.soc, self.prog.dtype, self.acc, it, 1, self.copy_us)
            got = self.cache[it] = stages_of(self.prog.pipeline, it, times)
        return got


def _gate(stages: tuple, after: int) -> tuple:
    """The cube stage of a GEMM block's first K step waits for the step `after` places back."""
    return tuple((p, us, lab, buf, cp, after if p == "cube" else a) for p, us, lab, buf, cp, a in stages)


def _shift(run: CoreRun, dt: float, steps: int) -> None:
    """Advance a core's state by dt (a steady run's skipped units)."""
    for p in run.pipe_free:
        run.pipe_free[p] += dt
    for ring in run.rings.values():
        ring[:] = [t + dt for t in ring]
    run.step_end[-steps:] = [t + dt for t in run.step_end[-steps:]]
    run.last_end += dt
    run.end = run.last_end


def simulate_seq(t: _Timer, runs: tuple, full: bool = False) -> CoreRun:
    """One core's runs through the pipes; full=True simulates every unit (the reference)."""
    run = CoreRun(0.0, dict.fromkeys(BASE_PIPES, 0.0), [], [], dict.fromkeys(BASE_PIPES, 0.0), {}, 0.0)
    blocks_end: list[int] = []       # step indices of the steps that drained a base block
    n_steps = 0
    block_open = False
    slots = t.prog.l0c_slots

    def one_unit(unit) -> CoreRun:
        nonlocal run, n_steps, block_open
        seq = []
        for it in unit:
            st = t.stages(it)
            has_cube = any(type(s) is CubeOp for s in it)
            drains = st[1][3] == "l0c"
            if has_cube and not block_open:
                block_open = True
                if not drains and len(blocks_end) >= slots:
                    st = _gate(st, blocks_end[-slots] - n_steps)
            if drains:
                block_open = False
                blocks_end.append(n_steps)
                del blocks_end[:-slots]
            seq.append(st)
            n_steps += 1
        run = _sim(((0, 0.0, tuple(seq)),), True, run, record_tiles=0)
        return run

    for unit, times in runs:
        if full or times <= STEADY_UNITS:
            for _ in range(times):
                one_unit(unit)
            continue
        ends = []
        done = 0
        while done < times:
            before = dict(run.busy)
            one_unit(unit)
            done += 1
            ends.append(run.end)
            if done >= STEADY_UNITS and done < times:
                p1, p2 = ends[-1] - ends[-2], ends[-2] - ends[-3]
                if abs(p1 - p2) <= 1e-9 * max(1.0, ends[-1]) or done >= MAX_UNITS:
                    if abs(p1 - p2) > 1e-9 * max(1.0, ends[-1]):
                        continue   # not steady: simulate the rest in full
                    busy0 = {p: run.busy[p] - before[p] for p in BASE_PIPES}
                    left = times - done
                    _shift(run, p1 * left, 2 * len(unit))   # the step ends a gate may still read
                    for p in BASE_PIPES:
                        run.busy[p] += busy0[p] * left
                    done = times
    return run


def counts(soc: SocSpec, prog: BaselineProgram) -> Counter:
    """The program's counts (the cost model's counts keys; schedules/steps.count_steps)."""
    out: Counter = Counter()
    for s in prog.seqs:
        for unit, times in s.runs:
            for it in unit:
                count_steps(soc, it, s.cores * times, out)
    return out


def time_program(soc: SocSpec, prog: BaselineProgram, init_us: float = 0.0, full: bool = False) -> VendorKernel:
    """The kernel's modeled time: launch + the busiest core's simulated end (+ a scalar head), at
    least its DMA bytes at the shared L2 bandwidth (results.l2_floor_us, the fused kernels' floor)."""
    t = _Timer(soc, prog)
    runs = {}
    for s in prog.seqs:
        if s.runs not in runs:
            runs[s.runs] = simulate_seq(t, s.runs, full)
    crit = max(runs.values(), key=lambda r: r.end)
    c = counts(soc, prog)
    body = max(crit.end + init_us, l2_floor_us(soc, c["gm_read_bytes"] + c["gm_write_bytes"]))
    busy = crit.busy
    fill = body - max(busy.values())
    launch = launch_us(soc, prog.cores)
    # what reaches HBM: never more than the DMAs read (hbm_in_bytes counts whole passes of B)
    hbm = min(prog.hbm_in_bytes, c["gm_read_bytes"]) + prog.out_bytes * (1.0 - t.hit_out)
    return VendorKernel(prog.name, prog.kind, prog.members, prog.cores, launch, busy["MTE2"], busy["cube"],
                        busy["vector"], busy["MTE3"], fill, launch + body, prog.split, prog.engine,
                        busy["MTE1"], dict(c), hbm)
