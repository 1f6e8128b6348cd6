"""The typed steps of a lowered kernel program (schedules/program.py, program_twophase.py): what
one iteration of a loop does, each step naming the plan buffer it reads or writes."""

from __future__ import annotations

from dataclasses import dataclass

from schedules.isa import VecWork


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


@dataclass(frozen=True)
class Move:
    """An on-chip transfer: UB->L1, L1->L0A, L1->L0B (cube side), L0C->UB (to the epilogue)."""

    path: str
    src: str
    dst: str
    nbytes: int


@dataclass(frozen=True)
class CubeOp:
    fractals: int
    a: str
    b: str
    c: str


@dataclass(frozen=True)
class Handoff:
    """A cross-core flag: the producer's GM slot of this tile is ready for the other side."""

    flag: str        # dw_ready (AIV -> AIC) | pre_ready (AIC -> AIV)
    slot: str        # GM slot: dw_slot | pre_slot


Step = Copy | VectorOp | Move | CubeOp | Handoff
Iteration = tuple  # tuple[Step, ...]


def total_work(ops) -> VecWork:
    """The vector work of a sequence of VectorOps, summed."""
    w = VecWork()
    for op in ops:
        w += op.work
    return w
