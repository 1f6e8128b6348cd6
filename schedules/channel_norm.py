"""The channel LayerNorm of a ConvNeXt block inside the fused kernel (DwSepWorkload.ln_eps).

After the DW (+ bias) of every input-channel block of a tile (the plan holds all of C1: the norm
is per pixel over all channels), each pixel's channels are normalised, (x - mean) / sqrt(var + eps);
the norm's scale and shift are folded into the PW (passes/channel_norm.fold_into_pw). The TE
compute (schedules/dwsep_te.channel_norm) runs on llvm and sim; the NumPy reference is
schedules/reference.reference_block; the Ascend C is fusion/codegen/ascendc/templates/ln_norm.h,
in the vector-PW and two-phase kernels (the variants a norm block is planned on). A two-phase plan
may instead run the norm in a phase of its own over the GM workspace, its DW tile then free of the
norm (TileConfig.norm_phase, schedules/norm_phase.py); the tile policy weighs both by the simulator.

`ln_ops` counts exactly the instructions ln_norm.h issues on the (C1, th*tw, C0) fp32 DW result
(`check -t ascend` compares them with the emulator's counters): count-form Adds of the C1 blocks
into ln_blk, a WholeReduceSum of each pixel's 16 lanes (a repeat a pixel, LN_PX pixels an
instruction) into ln_stat, Muls 1/Cin; a Brcb fills each pixel's value into a DataBlock (8 pixels
a repeat; on 310P the devkit issues it as a vadds and a v4dtrans a repeat); per channel block and
8-lane half one repeat-form Sub (8 pixels a repeat, the ragged group of pixels one more
instruction, the lanes past Cin masked off; a ragged block's empty half skipped); then Mul and
C1 - 1 MulAddDst of the squares, the lane sum, Muls, Adds eps, Sqrt, the fill, and the Divs.
"""

from __future__ import annotations

import numpy as np

from fusion.core.ir import C0, ceil_div
from schedules.isa import ACC_BYTES, VecWork, count_form
from schedules.steps import VectorOp


LN_PX = 248   # pixels a WholeReduceSum: the repeat limit 255 rounded down to 8 (32 B aligned results)


def norm_refusal(kind: str) -> str:
    return (f"channel LayerNorm between DW and PW (ConvNeXt) is fused on llvm, sim and ascend only: the {kind} "
            f"kernel has no per-pixel cross-lane reduction over channel blocks yet")


def ln_blk_elems(thw):
    """fp32 elements of ln_blk: a channel block's thw x C0, or the fill of thw rounded up to 8
    pixels (8 fp32 a pixel), whichever is larger (NumPy arrays of thw too)."""
    return np.maximum(thw * C0, -(-thw // 8) * 64)


def ln_stat_elems(thw):
    """fp32 elements of ln_stat: one a pixel, rounded up to 8 (a Brcb repeat reads 8)."""
    return -(-thw // 8) * 8


def _lane_sum(thw: int) -> VecWork:
    return VecWork(ceil_div(thw, LN_PX), thw)


def _fill(soc, thw: int) -> VecWork:
    reps = ceil_div(thw, 8)
    if soc.coupled:   # 310P: the devkit's Brcb is a vadds and a v4dtrans a repeat (ln_reduce.h)
        return VecWork(2 * reps, 2 * reps)
    return VecWork(ceil_div(reps, soc.max_repeat), reps)


def _halves(soc, thw: int, cin: int, c1: int) -> VecWork:
    """One Sub (or Div) pass over every block: per block and 8-lane half with lanes inside Cin,
    the 8-pixel groups (255 a instruction) and a ragged group."""
    groups, rem = divmod(thw, 8)
    one = VecWork(ceil_div(groups, soc.max_repeat) + (rem > 0), groups + (rem > 0))
    last = cin - (c1 - 1) * C0
    halves = 2 * (c1 - 1) + (1 if last <= 8 else 2)
    return one * halves


def ln_ops(plan) -> tuple[VectorOp, ...]:
    """The norm of one tile (module doc), after the ci loop's last block."""
    return ln_ops_px(plan.soc, plan.workload, plan.th * plan.tw, "dw_acc")


def ln_ops_px(soc, wl, thw: int, buffer: str) -> tuple[VectorOp, ...]:
    """The norm of thw pixels x all C1 blocks of fp32 in `buffer` (a DW unit's dw_acc, or a norm
    phase unit's ln_x: schedules/norm_phase.py), as LayerNormPixels issues it."""
    c1 = wl.c1
    n = thw * C0
    small = count_form(soc, thw, ACC_BYTES)
    lane, fill, halves = _lane_sum(thw), _fill(soc, thw), _halves(soc, thw, wl.cin, c1)
    mean = count_form(soc, n, ACC_BYTES, c1 - 1) + lane + small     # block sum, lane sum, / Cin
    centre = fill + halves                                           # fill, Sub per block half
    var = count_form(soc, n, ACC_BYTES, c1) + lane + small * 3       # squares, lane sum, / Cin, + eps, sqrt
    scale = fill + halves                                            # fill, Div per block half
    out = []
    for name, w in (("ln_mean", mean), ("ln_centre", centre), ("ln_var", var), ("ln_scale", scale)):
        out.append(VectorOp(name, buffer, c1 * n, w.instrs, w.repeats))
    return tuple(out)


def add_ln_buffers(add, th: int, tw: int, kernel_px: int | None = None) -> None:
    """The norm's UB buffers of a th x tw tile, declared through a plan's `add` (schedules/plan.py,
    schedules/twophase.py): the TE's per-pixel sums (the LLVM build), the Ascend C kernel's ln_blk /
    ln_stat -- of the tile's pixels, or of kernel_px where a norm phase holds them (schedules/norm_phase.py)."""
    px = th * tw if kernel_px is None else kernel_px
    add("ln_sum", "UB", (th, tw), "float32", 1, "channel LayerNorm: each pixel's sum over Cin", in_kernel=False)
    add("ln_sqdev", "UB", (th, tw), "float32", 1, "channel LayerNorm: each pixel's squared deviations",
        in_kernel=False)
    add("ln_blk", "UB", (ln_blk_elems(px),), "float32", 1,
        "channel LayerNorm: block sums, per-pixel fills, squares", in_tir=False)
    add("ln_stat", "UB", (ln_stat_elems(px),), "float32", 1,
        "channel LayerNorm: one mean / deviation a pixel", in_tir=False)
