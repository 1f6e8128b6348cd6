"""The typed steps of a lowered kernel program (schedules/program.py, program_twophase.py): what
one iteration of a loop does, each step naming the plan buffer it reads or writes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fusion.core.ir import ceil_div
from fusion.core.soc import MOVE_PIPE, SocSpec, move_rate
from schedules.isa import VecWork, cube_cycles


@dataclass(frozen=True)
class Copy:
    """A DMA between GM and an on-chip buffer (MTE2 in, MTE3 / Fixpipe out)."""

    kind: str        # traffic kind: input | weights | residual | output | handoff
    direction: str   # in (GM -> chip) | out (chip -> GM)
    buffer: str      # the plan buffer at the on-chip end
    gm: str          # the GM tensor: x, w_dw, b_dw, w_pw, b_pw, s_dw, s_pw, res, y, dw_slot, pre_slot
    nbytes: int
    bursts: int
    slots: int = 1   # queue depth of the buffer (2: ping/pong)

    def fold(self, v: list, soc: SocSpec, dtype: str | None) -> None:
        if self.nbytes <= 0:
            return
        bursts = max(1, self.bursts)
        inbound = self.direction == "in"
        v[IN_BYTES if inbound else OUT_BYTES] += self.nbytes
        v[IN_XFERS if inbound else OUT_XFERS] += ceil_div(bursts, soc.dma_max_bursts)
        v[(_READ if inbound else _WRITE)[self.kind]] += self.nbytes
        v[BURSTS] += bursts


@dataclass(frozen=True)
class VectorOp:
    op: str          # pad | clip_x | zero | dw_taps | widen | bias1 | act1 | cast | pw_mac | bias2 | act2 | residual
    buffer: str      # the plan buffer written
    elements: int
    instrs: int
    repeats: int

    @property
    def work(self) -> VecWork:
        return VecWork(self.instrs, self.repeats)

    def fold(self, v: list, soc: SocSpec, dtype: str | None) -> None:
        v[VEC_INSTRS] += self.instrs
        v[VEC_REPEATS] += self.repeats


@dataclass(frozen=True)
class Move:
    """An on-chip transfer: UB->L1, L1->L0A, L1->L0B (cube side), L0C->UB (to the epilogue)."""

    path: str
    src: str
    dst: str
    nbytes: int

    def fold(self, v: list, soc: SocSpec, dtype: str | None) -> None:
        v[_MOVE_FIELD[MOVE_PIPE[self.path]]] += self.nbytes / move_rate(soc, self.path)


@dataclass(frozen=True)
class CubeOp:
    fractals: int
    a: str
    b: str
    c: str

    def fold(self, v: list, soc: SocSpec, dtype: str | None) -> None:
        v[FRACTALS] += self.fractals
        if dtype is not None:
            v[CUBE_CYC] += cube_cycles(soc, self.fractals, dtype)


@dataclass(frozen=True)
class Handoff:
    """A cross-core flag: the producer's GM slot of this tile is ready for the other side."""

    flag: str        # dw_ready (AIV -> AIC) | pre_ready (AIC -> AIV)
    slot: str        # GM slot: dw_slot | pre_slot

    def fold(self, v: list, soc: SocSpec, dtype: str | None) -> None:
        pass   # a flag moves no data and issues no vector or cube work


@dataclass(frozen=True)
class Refill:
    """The iteration refills a copy of a buffer the core's earlier iterations read (a kept A panel
    for a new M tile, schedules/twophase.a_keep): its loads wait for the end of the core's step
    `back` places before it, the last that read that copy (the kernel frees the copy after that
    tile, and AllocTensor waits for the free)."""

    buffer: str
    back: int

    def fold(self, v: list, soc: SocSpec, dtype: str | None) -> None:
        pass   # an ordering: no data, no work


Step = Copy | VectorOp | Move | CubeOp | Handoff | Refill
Iteration = tuple  # tuple[Step, ...]

# the pipes an iteration's steps busy, in the order the kernel's loop body issues them: GM -> chip
# copies on MTE2, L1 -> L0A / L0B moves on MTE1, Mmads on the cube, vector ops, chip -> GM on MTE3
PIPE_ORDER = ("MTE2", "MTE1", "cube", "vector", "MTE3")

# the ring of the L0A / L0B operand buffers: filled by MTE1, freed by the Mmad
L0_RING = "l0"


@dataclass(frozen=True)
class StageSpec:
    """How every iteration of a phase runs on one pipe (the kernel's loop body, pipe by pipe): the
    stage's label, and the queue it fills for the next stage of the iteration -- the next stage
    frees a copy when it ends, so a stage waits while all `depth` copies are taken (TQue
    AllocTensor / FreeTensor; depth 2 = ping-pong). Every timer turns an iteration into simulated
    stages from these alone (fusion/cost/steps.stages_of), so a new phase kind or loop needs no
    simulator code."""

    pipe: str                  # one of PIPE_ORDER
    label: str
    ring: str | None = None    # the plan buffer (queue) this stage fills; None: no queue to the next stage
    depth: int = 1             # the queue's copies
    when_out: bool = False     # the ring is held only by iterations that write out (the L0C accumulator:
                               # read out by a tile's last K step; the K steps before accumulate)
    gated: bool = False        # one-phase 310P cube kernel: waits for the tile's DW, issued some steps
                               # earlier on the core (the simulator knows how far: its pipelining order)
    optional: bool = False     # present only in iterations with work on the pipe


def l0_copies(plan) -> int:
    """Depth of the kernel's L0 operand queues: the copies its plan gives a_l0a and b_l0b (the
    emitted TQue<A2 / B2, depth>'s; fusion/codegen/ascendc), the shallower of the two."""
    return min(plan.buffer("a_l0a").copies, plan.buffer("b_l0b").copies)


def total_work(ops) -> VecWork:
    """The vector work of a sequence of VectorOps, summed."""
    w = VecWork()
    for op in ops:
        w += op.work
    return w


KINDS = ("input", "weights", "residual", "output", "handoff")
FIELDS = ("in_bytes", "in_transfers", "out_bytes", "out_transfers", "dma_bursts",
          "vector_instrs", "vector_repeats", "vector_move_cycles", "cube_fractals", "cube_cycles",
          "mte3_move_cycles", *(f"read:{k}" for k in KINDS), *(f"write:{k}" for k in KINDS), "mte1_move_cycles")
F = {name: i for i, name in enumerate(FIELDS)}
(IN_BYTES, IN_XFERS, OUT_BYTES, OUT_XFERS, BURSTS, VEC_INSTRS, VEC_REPEATS, VEC_MOVE, FRACTALS,
 CUBE_CYC, MTE3_MOVE) = range(11)

MTE1_MOVE = F["mte1_move_cycles"]
_MOVE_FIELD = {"vector": VEC_MOVE, "MTE3": MTE3_MOVE, "cube": CUBE_CYC, "MTE1": MTE1_MOVE}   # a move's cycles, by MOVE_PIPE
_READ = {k: F[f"read:{k}"] for k in KINDS}
_WRITE = {k: F[f"write:{k}"] for k in KINDS}


def fold_steps(soc: SocSpec, dtype: str | None, steps) -> np.ndarray:
    """The FIELDS of `steps` (program steps), summed: the one walker that counts a program (KernelProgram.counts
    via count_steps, the tuner's program totals, the timers' on-chip sums: fusion/cost/steps.iteration_us).
    Each step kind adds its own contribution (its `fold`), so a new kind is its class alone. dtype None:
    cube cycles are not needed (left 0)."""
    v = [0.0] * len(FIELDS)
    for s in steps:
        s.fold(v, soc, dtype)
    return np.array(v)


def count_steps(soc: SocSpec, steps, times: int = 1, into: Counter | None = None) -> Counter:
    """Add the counts of `steps` (times over): the cost model's counts keys, plus GM bytes
    (gm_read_bytes, gm_write_bytes) and per traffic kind (read:KIND, write:KIND); fold_steps' sums."""
    out = Counter() if into is None else into
    v = fold_steps(soc, None, steps)
    keys = (("dma_transfers", v[IN_XFERS] + v[OUT_XFERS]), ("dma_bursts", v[BURSTS]),
            ("gm_read_bytes", v[IN_BYTES]), ("gm_write_bytes", v[OUT_BYTES]),
            *((f"read:{k}", v[F[f"read:{k}"]]) for k in KINDS), *((f"write:{k}", v[F[f"write:{k}"]]) for k in KINDS),
            ("vector_instrs", v[VEC_INSTRS]), ("vector_repeats", v[VEC_REPEATS]), ("cube_fractals", v[FRACTALS]))
    for key, x in keys:
        if x:
            out[key] += int(x) * times
    return out


Unit = tuple   # tuple[Iteration, ...]: one work unit's iterations, each a tuple of steps


@dataclass(frozen=True)
class Phase:
    """One phase of a multi-phase kernel program (schedules/program_twophase.py): its units, the
    cores they run on, and how each iteration runs on the pipes (`pipeline`). A phase kind is its
    builder: the simulator, the counts and the kernel's Process() skeleton read only these fields."""

    name: str                          # dw | se | norm | gemm | epi (the kernel's <Name>Phase function)
    role: str                          # aiv | aic | core
    units: tuple[Unit, ...]
    assignment: tuple[tuple[int, ...], ...]   # per core of the phase: its unit indices, in order
    prologue: tuple                    # resident loads (Copy) of every core of the phase before its first
                                       # unit, and the grouped DW's bias Cast (VectorOp)
    preload: tuple = ()                # per core of the phase: loads issued while the phase before runs
                                       # (the resident PW weights, plan.b_resident); () = none
    gate: str = "sync"                 # what starts the phase: "sync" (a SyncAll after the phase before),
                                       # "local" (a pipe barrier on the core: it reads only what the core
                                       # wrote) or "flags" (per unit, a cross-core flag of its producer unit)
    deps: tuple[int, ...] = ()         # gate "flags": per unit, the unit of the phase before it finishes
    pipeline: tuple[StageSpec, ...] = ()   # every iteration's stages, in issue order
    prefetch: tuple = ()               # per core, per unit position: reads ahead into L2 after that unit
                                       # (schedules/prefetch.py); () = none

    @cached_property
    def iterations(self) -> Counter:
        """Each distinct iteration of the units the cores run -> how many times they run it, in the
        order the cores first reach them (the timers' and the counts' one tally). A program builder
        gives units of the same shape one tuple, so each distinct unit's iterations are hashed once."""
        units: dict[int, list] = {}   # id of a distinct unit tuple -> [the unit, its runs]
        for u, n in Counter(u for core in self.assignment for u in core).items():
            unit = self.units[u]
            units.setdefault(id(unit), [unit, 0])[1] += n
        out: Counter = Counter()
        for unit, n in units.values():
            for it in unit:
                out[it] += n
        return out


def stages(plan, *specs: tuple) -> tuple[StageSpec, ...]:
    """A phase's pipeline from (pipe, label[, ring[, when_out]]) tuples: each ring's depth is the
    copies the plan gives that buffer (the emitted TQue's depth; L0_RING: the L0 operand queues'),
    a ring the plan does not hold is no queue (its stage has no work in that plan)."""
    copies = {b.name: b.copies for b in plan.buffers}
    out = []
    for pipe, label, *rest in specs:
        ring = rest[0] if rest else None
        when_out = bool(rest[1]) if len(rest) > 1 else False
        if ring == L0_RING:
            depth = l0_copies(plan)
        elif ring in copies:
            depth = copies[ring]
        else:
            ring, depth = None, 1
        out.append(StageSpec(pipe, label, ring, depth, when_out))
    return tuple(out)
