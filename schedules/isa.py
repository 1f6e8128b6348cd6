"""Instruction counts of the vector and cube units: what one operation of the program issues.

One vector repeat is 256 B of the widest operand (64 fp32 / 128 fp16 lanes); one instruction
covers one contiguous row of up to max_repeat repeats. One cube fractal is a 16x16x16 MAC block.
The lowered program (schedules/program.py) states every operation with these counts; the cost
model turns them into time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fusion.ir import C0
from schedules.activations import VECTOR_INSTRS
from schedules.workload import ceil_div

ACC_BYTES = 4  # fp32 accumulators and biases
# vector instructions per element-wise pass of each activation, as the Ascend C body issues them
# (one table: schedules/activations)
ACT_OPS = VECTOR_INSTRS


@lru_cache(maxsize=64)
def itemsize(dtype: str) -> int:
    return np.dtype(dtype).itemsize


@dataclass(frozen=True)
class VecWork:
    instrs: int = 0
    repeats: int = 0

    def __add__(self, other: "VecWork") -> "VecWork":
        return VecWork(self.instrs + other.instrs, self.repeats + other.repeats)

    def __mul__(self, k: int) -> "VecWork":
        return VecWork(self.instrs * k, self.repeats * k)

    def cycles(self, soc) -> float:
        return self.instrs * soc.vector_instr_cycles + self.repeats / soc.vector_repeats_per_cycle


def vec_op(soc, row_elems: int, elem_bytes: int, rows: int = 1) -> VecWork:
    """One vector op over `rows` contiguous rows of `row_elems` elements of the widest operand."""
    if rows <= 0 or row_elems <= 0:
        return VecWork()
    rep_row = ceil_div(row_elems * elem_bytes, soc.vector_repeat_bytes)
    return VecWork(rows * ceil_div(rep_row, soc.max_repeat), rows * rep_row)


def count_form(soc, elems: int, elem_bytes: int, calls: int = 1) -> VecWork:
    """`calls` count-form ops (Op(dst, src..., count)) of `elems` elements of the widest operand:
    one instruction each (the vector mask in counter mode), its repeats the 256 B the count spans."""
    if calls <= 0 or elems <= 0:
        return VecWork()
    return VecWork(calls, calls * ceil_div(elems * elem_bytes, soc.vector_repeat_bytes))


def ragged_rows(soc, row_elems: int, elem_bytes: int, rows: int) -> VecWork:
    """A masked multiply-add per row (the DW taps: strided source, broadcast taps, so no count
    form): the whole repeats in one instruction (up to max_repeat), a ragged last repeat in a
    second one, because a continuous mask applies to every repeat."""
    lanes = soc.vector_repeat_bytes // elem_bytes
    full, rem = divmod(row_elems, lanes)
    instrs = ceil_div(full, soc.max_repeat) + (1 if rem else 0)
    return VecWork(rows * instrs, rows * (full + (1 if rem else 0)))


def tap_scratch_rows(th: int, tw: int):
    """Rows of the 2002 DW scratch (tap_prod, tap_wide): the whole tile when a row fits one
    16-bit repeat (tw <= 8), else one row (NumPy arrays welcome)."""
    return np.where(np.asarray(tw) <= 8, th, 1) if np.ndim(tw) or np.ndim(th) else (th if tw <= 8 else 1)


def has_muladddst(soc) -> bool:
    """Arch 2201 (910B) has MulAddDst (dst += src0 * src1 with a broadcast DataBlock); arch 2002
    (310P) has not, so a DW tap with per-channel weights is one masked scalar Axpy per channel."""
    return soc.arch == "2201"


def dw_taps(soc, th: int, tw: int, src_bytes: int, cb: int) -> VecWork:
    """One DW tap over cb channel blocks of a th x tw tile into the fp32 accumulator, as the fused
    kernel issues it (fusion/ascendc/templates/tap_*.h):
      2201, 16-bit source: per output row one MulAddDst covering 4 pixels per repeat, plus one for
                           a ragged last repeat (ragged_rows); when a row fits one repeat
                           (tw <= 4) one MulAddDst over every row (repeat r reads input row r*sh);
      2201, fp32 source:   the same per channel half (8 channels = one DataBlock), 8 pixels per
                           repeat: two instructions per row plus two for a ragged repeat;
      2002, 16-bit source: a Mul by the tap's broadcast DataBlock into tap_prod (8 pixels per
                           repeat), a Cast to fp32 into tap_wide and an Add into the accumulator
                           (4 pixels a repeat), a ragged last repeat apart: when a row fits one
                           repeat (tw <= 8) over the whole tile at once (the Mul's repeat stride
                           steps to the next input row), else row by row;
      2002, fp32 source:   one masked Axpy per channel lane (C0 of them) per row instruction of
                           the 16-bit MulAddDst form: C0 x ragged_rows."""
    if has_muladddst(soc):
        if src_bytes == 2:
            if tw <= 4:
                return VecWork(ceil_div(th, soc.max_repeat), th) * cb
            return ragged_rows(soc, tw * C0, ACC_BYTES, cb * th)
        return _per_row(soc, tw, 8) * (2 * cb * th)
    if src_bytes == 2:
        if tw <= 8:
            return (VecWork(ceil_div(th, soc.max_repeat), th) + ragged_rows(soc, th * tw * C0, ACC_BYTES, 1) * 2) * cb
        return (_per_row(soc, tw, 8) + ragged_rows(soc, tw * C0, ACC_BYTES, 1) * 2) * (cb * th)
    return ragged_rows(soc, tw * C0, ACC_BYTES, cb * th) * C0


def _per_row(soc, tw: int, px_per_repeat: int) -> VecWork:
    """One op over a row of tw pixels, px_per_repeat a repeat, a ragged last repeat apart."""
    full, rem = divmod(tw, px_per_repeat)
    return VecWork(ceil_div(full, soc.max_repeat) + (1 if rem else 0), full + (1 if rem else 0))


def cube_fractals(soc, m: int, k_blocks: int, n_blocks: int) -> int:
    return ceil_div(m, soc.cube_fractal[0]) * k_blocks * n_blocks


def cube_cycles(soc, fractals: int, dtype: str) -> float:
    return fractals * (soc.cube_fp32_cycles_per_fractal if itemsize(dtype) == 4 else 1.0)


def act_work(soc, act: str, elems: int) -> VecWork:
    """An activation over `elems` fp32 elements in place: ACT_OPS[act] passes."""
    return vec_op(soc, elems, ACC_BYTES) * ACT_OPS[act]


__all__ = ["ACC_BYTES", "ACT_OPS", "C0", "VecWork", "act_work", "count_form", "cube_cycles", "cube_fractals",
           "dw_taps", "has_muladddst", "tap_scratch_rows", "itemsize", "ragged_rows", "vec_op"]
