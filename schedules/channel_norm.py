"""The channel LayerNorm of a ConvNeXt block inside the fused kernel (DwSepWorkload.ln_eps).

After the DW (+ bias) of every input-channel block of a tile (the plan holds all of C1: the norm
is per pixel over all channels), each pixel's channels are normalised, (x - mean) / sqrt(var + eps);
the norm's scale and shift are folded into the PW (passes/channel_norm.fold_into_pw). The TE
compute (schedules/dwsep_te.channel_norm) runs on llvm and sim; the NumPy reference is
schedules/reference.reference_block.

Ascend C and AscendNPU IR do not emit it yet (`norm_refusal`: such a block stays unfused there with
that reason). `ln_ops` is the MODELED vector work the sim cost model charges, written as the
vector-PW kernel would issue it on the (C1, th*tw, C0) fp32 accumulator, with lane masks for a
ragged last block: Add of the C1 blocks, a per-pixel lane sum (one repeat a pixel, as a repeat-form
WholeReduceSum), Muls 1/C; Sub of the mean broadcast per pixel (a Brcb per tile, then one op a
block); Mul (square), C1 Adds, lane sum, Muls 1/C, Adds eps, Sqrt, Reciprocal; Mul per block.
"""

from __future__ import annotations

from fusion.core.ir import C0, ceil_div
from schedules.isa import ACC_BYTES, VecWork, count_form
from schedules.steps import VectorOp


def norm_refusal(kind: str) -> str:
    return (f"channel LayerNorm between DW and PW (ConvNeXt) is fused on llvm and sim only: the {kind} "
            f"kernel has no per-pixel cross-lane reduction over channel blocks yet")


def ln_ops(plan) -> tuple[VectorOp, ...]:
    """MODELED: the norm of one tile (module doc), after the ci loop's last block."""
    soc, wl = plan.soc, plan.workload
    thw, c1 = plan.th * plan.tw, wl.c1
    blk = thw * C0
    per_px = VecWork(ceil_div(thw, soc.max_repeat), thw)
    small = count_form(soc, thw, ACC_BYTES)
    blocks = count_form(soc, blk, ACC_BYTES, c1)
    sum_blocks = count_form(soc, blk, ACC_BYTES, c1 - 1)
    mean = sum_blocks + per_px + small                    # block sum, lane sum, / C
    centre = per_px + blocks                              # broadcast, Sub per block
    var = blocks + sum_blocks + per_px + small * 4        # square, block sum, lane sum, / C, + eps, sqrt, 1/x
    scale = per_px + blocks                               # broadcast, Mul per block
    out = []
    for name, w in (("ln_mean", mean), ("ln_centre", centre), ("ln_var", var), ("ln_scale", scale)):
        out.append(VectorOp(name, "dw_acc", c1 * blk, w.instrs, w.repeats))
    return tuple(out)
