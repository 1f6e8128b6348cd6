"""The DW of one unit as vector instructions, in its three forms (what the Ascend C templates
issue; schedules/program.py's dw_ops picks the plan's):

  per-block, fp32 post-ops  per channel block a Duplicate zeroing its accumulator and the kh*kw
                            taps (isa.dw_taps; 16-bit: accumulated in the storage dtype in dw_out,
                            then one Cast widening the blocks into dw_acc), + b_dw in two channel
                            halves, act1, the cast back (templates/compute_dw.h) -- the one-phase
                            kernels, whose PW reads the fp32 result, and fp32 storage;
  per-block, fp16 post-ops  the same taps (the first a Mul: no zeroing), then per block one Add
                            of the bias in the storage dtype (its DataBlock read by every pixel)
                            and act1 in the storage dtype over the unit
                            (templates/dw_post_half.h) -- the two-phase kernel's phase 1 and the
                            310P cube kernel (plan.dw_post16: the result goes on in the storage
                            dtype anyway, as the vendor's vector depthwise computes it); stride 1:
                            its taps may walk the tile as wide rows (wide_taps, plan.dw_wide);
  grouped                   a repeat spans the same pixel of up to 8 channel blocks, one Mul /
                            MulAddDst per tap and group, bias and act1 in the storage dtype
                            (templates/compute_dw_grouped.h; schedules/twophase.dw_grouped).
"""

from __future__ import annotations

from functools import lru_cache

from fusion.core.ir import C0
from schedules.isa import (ACC_BYTES, ACT_OPS, VecWork, bias_halves, bias_block16, count_form, dw_taps,
                           grouped_ops, itemsize, wide_pixels)
from schedules.loops import halvings, window_span
from schedules.steps import VectorOp, total_work
from schedules.workload import DwSepWorkload


def _tap_ops(soc, b: int, th: int, tw: int, cb: int, kernel: tuple[int, int], sh: int, iw: int,
             post16: bool = False, wide: bool = False) -> list[VectorOp]:
    """Zero the accumulators, the taps, and (16-bit with fp32 post-ops: the taps accumulate in
    the storage dtype into dw_out) the Cast widening the cb blocks into the fp32 dw_acc. post16
    (the fp16 post-ops form): no zeroing (its first tap is a Mul) and no widening; `wide`: its
    taps over wide rows (wide_taps)."""
    n = th * tw * C0
    acc = "dw_out" if b != ACC_BYTES else "dw_acc"
    ops = []
    if not post16:
        w = count_form(soc, n, b, cb)
        ops.append(VectorOp("zero", acc, cb * n, w.instrs, w.repeats))
    w = dw_taps(soc, th, tw, b, cb, sh, iw, wide) * (kernel[0] * kernel[1])
    ops.append(VectorOp("dw_taps", acc, cb * n * kernel[0] * kernel[1], w.instrs, w.repeats))
    if b != ACC_BYTES and not post16:
        w = count_form(soc, cb * n, ACC_BYTES)
        ops.append(VectorOp("widen", "dw_acc", cb * n, w.instrs, w.repeats))
    return ops


def block_form_ops(soc, wl: DwSepWorkload, th: int, tw: int, cb: int, iw: int, act_work,
                   post16: bool = False, wide: bool = False) -> list[VectorOp]:
    """The per-block DW form after the padding (module doc). fp32 post-ops: per block + b_dw
    (isa.bias_halves), act1 (`act_work(elements)`), the cast to the storage dtype; post16: per
    block + b_dw16 (isa.bias_block16), act1's ops in count form over the unit -- `wide` (the
    taps over wide rows: the blocks th x iw apart in dw_out) over the wide rows' pixels."""
    b = itemsize(wl.dtype)
    n = th * tw * C0
    ops = _tap_ops(soc, b, th, tw, cb, wl.kernel, wl.stride[0], iw, post16, wide)
    if post16:
        w = bias_block16(soc, wide_pixels(th, tw, iw) if wide else th * tw) * cb
        ops.append(VectorOp("bias1", "dw_out", cb * n, w.instrs, w.repeats))
        if ACT_OPS[wl.act1]:
            w = count_form(soc, cb * th * (iw if wide else tw) * C0, b) * ACT_OPS[wl.act1]
            ops.append(VectorOp("act1", "dw_out", cb * n, w.instrs, w.repeats))
        return ops
    w = bias_halves(soc, th * tw) * cb
    ops.append(VectorOp("bias1", "dw_acc", cb * n, w.instrs, w.repeats))
    if ACT_OPS[wl.act1]:
        w = act_work(cb * n)
        ops.append(VectorOp("act1", "dw_acc", cb * n, w.instrs, w.repeats))
    if b != ACC_BYTES:
        w = count_form(soc, cb * n, ACC_BYTES)
        ops.append(VectorOp("cast", "dw_out", cb * n, w.instrs, w.repeats))
    return ops


def pool_form(wl: DwSepWorkload, th: int, tw: int) -> bool:
    """A head block's DW (passes/head_dwsep.py: a global average pool written as a DW whose taps
    are all 1 / (kh kw)) on a 1 x 1 tile over its whole unpadded input: the grouped form sums the
    window in halves instead of one MulAdd per tap (templates/compute_dw_pool.h; a halving's
    pixels are one instruction's repeats, at most 255)."""
    return (wl.head and (th, tw) == (1, 1) and (wl.out_height, wl.out_width) == (1, 1) and wl.stride == (1, 1)
            and tuple(wl.pads) == (0, 0, 0, 0) and (wl.height, wl.width) == tuple(wl.kernel)
            and wl.kernel[0] * wl.kernel[1] <= 510)


def grouped_dw_ops(soc, wl: DwSepWorkload, th: int, tw: int, cb: int) -> list[VectorOp]:
    """The grouped DW form (schedules/twophase.dw_grouped; templates/compute_dw_grouped.h) after
    the padding: per group of up to 8 channel blocks and per tap one Mul (the first tap) or
    MulAddDst over the wide rows, then one Add of the fp16 bias and act1's ops
    (ACT_OPS: Relu | Maxs + Mins), each one instruction per group (isa.grouped_ops). The pool
    form (pool_form) instead: per group one Add per halving of the window (its pixels the
    repeats) and one Muls by 1 / (kh kw) into dw_out."""
    kh, kw = wl.kernel
    n = th * tw * C0
    one = grouped_ops(soc, th, tw, tw + kw - 1, cb)
    if pool_form(wl, th, tw):
        groups, halves = one.instrs, halvings(kh * kw)
        w = VecWork(groups * len(halves), groups * sum(halves))
        ops = [VectorOp("dw_sum", "x_tile", cb * C0 * kh * kw, w.instrs, w.repeats),
               VectorOp("dw_scale", "dw_out", cb * n, one.instrs, one.repeats)]
    else:
        w = one * (kh * kw)
        ops = [VectorOp("dw_taps", "dw_out", cb * n * kh * kw, w.instrs, w.repeats)]
    ops.append(VectorOp("bias1", "dw_out", cb * n, one.instrs, one.repeats))
    if ACT_OPS[wl.act1]:
        w = one * ACT_OPS[wl.act1]
        ops.append(VectorOp("act1", "dw_out", cb * n, w.instrs, w.repeats))
    return ops


def wide_legal(wl: DwSepWorkload) -> bool:
    """Taps over wide rows are legal for 16-bit stride-1 DW: output pixel p's source is p
    DataBlocks from the tap's base."""
    return itemsize(wl.dtype) == 2 and wl.stride == (1, 1)


@lru_cache(maxsize=4096)
def wide_taps(soc, wl: DwSepWorkload, th: int, tw: int) -> bool:
    """The per-block form with fp16 post-ops issues its taps over wide rows (isa._tap_wide): per
    block and tap ONE op over the whole tile at the input tile's pitch instead of one per column
    group or row; bias and act1 then run over the wide rows too (the iw - tw extra columns of
    each row are computed and never read: the hand-off and the cube's staging copy the valid
    pixels). Where wide_legal; chosen where one block's taps and post-ops issue fewer cycles so."""
    if not wide_legal(wl):
        return False
    iw = tw + wl.kernel[1] - 1
    one = [total_work(block_form_ops(soc, wl, th, tw, 1, iw, None, True, w)).cycles(soc) for w in (True, False)]
    return one[0] < one[1]


def dw_form_work(soc, wl: DwSepWorkload, th: int, tw: int, cb: int, grouped: bool) -> VecWork:
    """The vector work in which the two-phase kernel's DW forms of a unit of cb blocks differ
    (taps and post-ops; padding and input clip are the same): grouped, or per-block with fp16
    post-ops (both need an act1 the storage dtype takes: schedules/twophase.GROUPED_ACTS). What
    schedules/twophase.dw_grouped compares."""
    if grouped:
        return total_work(grouped_dw_ops(soc, wl, th, tw, cb))
    iw = window_span(tw, wl.stride[1], wl.kernel[1])
    return total_work(block_form_ops(soc, wl, th, tw, cb, iw, None, True, wide_taps(soc, wl, th, tw)))
