"""The norm phase of a ConvNeXt block's two-phase kernel (TileConfig.norm_phase): the channel
LayerNorm in a phase of its own, so that it no longer constrains the DW tile.

The in-unit norm (schedules/channel_norm.py) makes a DW unit hold all C1 blocks of its pixels; in
the late stages (8x8 and 4x4 pixels, 160-320 channels) that leaves units of 1-3 pixels, each
DW tap instruction covering a few dozen elements, ~1000 instructions a unit. With a norm phase:

  phase 1   the DW (+ bias) over ordinary (tile, ci-block) units, as a block without a norm, the
            result (not yet normalised) to the GM workspace (C1, M padded to 16, C0)
  SyncAll
  norm      per unit of px pixels (ln_px: as many as spread the M pixels over the DW cores, at
            most what NORM_PHASE_UB_BYTES holds) x all C1 blocks: the unit's pixels of every block
            from the workspace (one strided copy, a burst a block), fp16: widened to fp32 (one
            Cast), the per-pixel norm of ln_norm.h (channel_norm.ln_ops_px counts it), fp16: cast
            back, and the pixels written back in place
  SyncAll
  GEMM      reads the normalised A operand as without a norm.

The workspace is L2-resident at these sizes, so the phase's traffic is L2's (fusion/cost/twophase.py
times it as the other phases). The TE compute (llvm, sim numerics) is the same math either way.
"""

from __future__ import annotations

from fusion.core.ir import C0
from schedules.channel_norm import add_ln_buffers, ln_ops_px
from schedules.isa import ACC_BYTES, count_form, itemsize
from schedules.loops import round_robin, split
from schedules.steps import Copy, Phase, VectorOp, stages
from schedules.workload import DwSepWorkload, ceil_div

# UB bytes the norm phase's per-pixel buffers (ln_x, fp16 also ln_io) may take: a design bound
# beside phase 1's buffers (the kernel allocates both phases' buffers at once), not a calibration
NORM_PHASE_UB_BYTES = 64 * 1024


def norm_m(wl: DwSepWorkload) -> int:
    """The pixels the norm phase normalises: every real GEMM row (batch x out pixels; the padding
    rows of the workspace feed output rows never written)."""
    return wl.batch * wl.out_height * wl.out_width


def ln_px(wl: DwSepWorkload, cores: int) -> int:
    """Pixels of one norm unit: the M pixels spread over the cores, a multiple of 8 (one fill
    repeat), at most what NORM_PHASE_UB_BYTES holds of all C1 blocks."""
    per_px = wl.c1 * C0 * (ACC_BYTES + (itemsize(wl.dtype) if itemsize(wl.dtype) != ACC_BYTES else 0))
    cap = max(8, NORM_PHASE_UB_BYTES // per_px // 8 * 8)
    want = ceil_div(ceil_div(norm_m(wl), max(1, cores)), 8) * 8
    return max(1, min(cap, want, norm_m(wl)))


def ln_units(wl: DwSepWorkload, cores: int) -> int:
    return ceil_div(norm_m(wl), ln_px(wl, cores))


def ln_cores(wl: DwSepWorkload, cores: int) -> int:
    return min(cores, ln_units(wl, cores))


def add_norm_phase_buffers(add, wl: DwSepWorkload, th: int, tw: int, cores: int) -> None:
    """The norm phase's UB buffers (scratch: the phase sets its own flags): ln_x, the unit's fp32
    pixels; fp16 ln_io, the storage-dtype copy in and out; ln_norm.h's ln_blk / ln_stat of px pixels
    (and the TE's per-pixel sums of the DW tile, as an in-unit norm declares them)."""
    px = ln_px(wl, cores)
    add("ln_x", "UB", (wl.c1, px, C0), "float32", 1, "norm phase: a unit's pixels x all channel blocks in fp32",
        in_tir=False)
    if itemsize(wl.dtype) != ACC_BYTES:
        add("ln_io", "UB", (wl.c1, px, C0), wl.dtype, 1,
            "norm phase: the unit's pixels from / back to the workspace in the storage dtype", in_tir=False)
    add_ln_buffers(add, th, tw, px)


def norm_phase_units(plan) -> tuple:
    """The norm phase's units (one iteration each), pixel ranges of ln_px in order."""
    wl, soc = plan.workload, plan.soc
    b = itemsize(wl.dtype)
    px0 = ln_px(wl, plan.cores)
    io = "ln_x" if b == ACC_BYTES else "ln_io"
    units = []
    for px in split(norm_m(wl), px0):
        n = wl.c1 * px * C0
        it: list = [Copy("handoff", "in", io, "dw_ws", n * b, wl.c1)]
        if b != ACC_BYTES:
            w = count_form(soc, n, ACC_BYTES)
            it.append(VectorOp("ln_widen", "ln_x", n, w.instrs, w.repeats))
        it += ln_ops_px(soc, wl, px, "ln_x")   # MODELED (schedules/channel_norm.py)
        if b != ACC_BYTES:
            w = count_form(soc, n, ACC_BYTES)
            it.append(VectorOp("ln_cast", "ln_io", n, w.instrs, w.repeats))
        it.append(Copy("handoff", "out", io, "dw_ws", n * b, wl.c1))
        units.append((tuple(it),))
    return tuple(units)


def norm_phase_assignment(plan, units: int) -> tuple:
    return round_robin(units, ln_cores(plan.workload, plan.cores))


def norm_phase(plan, role: str) -> Phase:
    """The norm phase: its units on the DW phase's cores, each unit's pixels in, normalised and out
    through one buffer in series (ln_x; fp16 ln_io in and out)."""
    units = norm_phase_units(plan)
    io = "ln_x" if itemsize(plan.workload.dtype) == ACC_BYTES else "ln_io"
    pipeline = stages(plan, ("MTE2", "workspace pixels x C1", io), ("vector", "channel LayerNorm", io),
                      ("MTE3", "normalised pixels -> GM workspace"))
    return Phase("norm", role, units, norm_phase_assignment(plan, len(units)), (), pipeline=pipeline)
