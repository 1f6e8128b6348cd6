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

from fusion.core.ir import C0
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


def _tap_rows(soc, th: int, tw: int) -> VecWork:
    """A tap row by row: per output row one op over its tw pixels, 8 a repeat."""
    return _per_row(soc, tw, 8) * th


def _tap_columns(soc, th: int, tw: int) -> VecWork:
    """A tap by column groups: per group of 8 output columns one op whose repeats walk the rows
    (repeat r reads input row r*sh), a ragged last group masked."""
    groups = ceil_div(tw, 8)
    return VecWork(groups * ceil_div(th, soc.max_repeat), groups * th)


TAP_ROWS, TAP_COLS, TAP_WIDE = 0, 1, 2   # the tap forms (the kernel's tiling field tapForm)


def wide_pixels(th: int, tw: int, iw: int) -> int:
    """Pixels a wide-row op walks: th rows at the input tile's pitch iw, the last cut at tw."""
    return (th - 1) * iw + tw


def _tap_wide(soc, th: int, tw: int, iw: int) -> VecWork:
    """A tap over the tile as wide rows (stride 1: output pixel p and its source lie p DataBlocks
    from their bases, rows iw pixels apart): one op of wide_pixels, 8 a repeat, a ragged last
    repeat apart; the iw - tw columns past each row are computed and never read."""
    return _per_row(soc, wide_pixels(th, tw, iw), 8)


def tap_columns(soc, th: int, tw: int, sh: int, iw: int, src_bytes: int) -> bool:
    """Whether the fused kernel issues a DW tap by column groups (fewer instructions than row by
    row, and the repeat strides -- tw output pixels, sh input rows of iw pixels -- fit the 8-bit
    repeat stride). The kernel reads this choice from its tiling (tapCols)."""
    blocks = 1 if src_bytes == 2 else 2   # DataBlocks per pixel in the lanes of one op
    if tw * blocks > 255 or sh * iw * blocks > 255:
        return False
    return _tap_columns(soc, th, tw).instrs <= _tap_rows(soc, th, tw).instrs


def tap_form(soc, th: int, tw: int, sh: int, iw: int, src_bytes: int, wide: bool = False) -> int:
    """The form a DW tap is issued in: TAP_WIDE where the caller chose wide rows (`wide`:
    schedules/dw_forms.wide_taps), else by column groups or row by row (tap_columns)."""
    if wide:
        return TAP_WIDE
    return TAP_COLS if tap_columns(soc, th, tw, sh, iw, src_bytes) else TAP_ROWS


def dw_taps(soc, th: int, tw: int, src_bytes: int, cb: int, sh: int = 1, iw: int = 0,
            wide: bool = False) -> VecWork:
    """One DW tap over cb channel blocks of a th x tw tile (input rows sh apart, iw pixels wide),
    as the fused kernel issues it (fusion/codegen/ascendc/templates/tap_mad16.h, tap_mad_float.h). Both
    arches' AI cores have MulAddDst (dst += src0 * src1; the vendor's API reference lists Atlas
    A2/A3 and the Atlas inference-series AI Core, half and float):
      16-bit source: the taps accumulate in the storage dtype (as the vendor's vector depthwise
                     does), one pixel a DataBlock, 8 pixels a repeat, the tap's 16 weights one
                     DataBlock read by every pixel;
      fp32 source:   the same per channel half (8 channels = one DataBlock, 8 pixels a repeat);
    by column groups when tap_columns says so (a tile of rows <= 8 pixels is one op), else row by
    row; or (`wide`, 16-bit stride 1) as one op over the tile's wide rows (_tap_wide); a ragged
    last repeat masked."""
    iw = iw or tw
    form = tap_form(soc, th, tw, sh, iw, src_bytes, wide)
    if form == TAP_WIDE:
        return _tap_wide(soc, th, tw, iw) * cb
    work = _tap_columns(soc, th, tw) if form == TAP_COLS else _tap_rows(soc, th, tw)
    return work * (cb * (1 if src_bytes == 2 else 2))


GROUP_BLOCKS = 8   # channel blocks one 16-bit repeat spans in the grouped DW form (8 DataBlocks)


def grouped_reps(th: int, tw: int, iw: int) -> int:
    """Repeats of one grouped-form op: the tile's pixels as wide rows (row pitch = the input
    tile's iw, so every tap's source is one stride-1 walk), the last row cut at tw."""
    return (th - 1) * iw + tw


def grouped_ops(soc, th: int, tw: int, iw: int, cb: int) -> VecWork:
    """One op of the grouped DW form over cb channel blocks (fusion/codegen/ascendc/templates/
    compute_dw_grouped.h): per group of up to 8 blocks one instruction whose repeat covers the same
    pixel of each block (block stride = the channel-block pitch) and whose repeats walk the pixels;
    a short last group masked."""
    groups = ceil_div(cb, GROUP_BLOCKS)
    reps = grouped_reps(th, tw, iw)
    return VecWork(groups * ceil_div(reps, soc.max_repeat), groups * reps)


def bias_halves(soc, px: int) -> VecWork:
    """+ a 16-channel fp32 bias over px pixels in two channel halves (templates/prelude.h
    AddBiasHalves): 8 pixels a repeat, a ragged last group in its own instruction."""
    groups, rem = divmod(px, 8)
    return (VecWork(ceil_div(groups, soc.max_repeat), groups) + (VecWork(1, 1) if rem else VecWork())) * 2


def bias_block16(soc, px: int) -> VecWork:
    """+ a 16-channel bias in the storage dtype (16-bit) over px pixels of one channel block
    (templates/dw_post_half.h): one DataBlock a pixel, 8 pixels a repeat, the bias DataBlock
    read by each, a ragged last group in its own instruction."""
    return _per_row(soc, px, 8)


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


__all__ = ["ACC_BYTES", "ACT_OPS", "C0", "GROUP_BLOCKS", "VecWork", "act_work", "bias_block16", "bias_halves",
           "count_form",
           "cube_cycles", "cube_fractals", "dw_taps", "grouped_ops", "grouped_reps", "itemsize", "vec_op"]
