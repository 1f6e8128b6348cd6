"""DMA volume of a fused plan against the minimal bytes, and the floor any plan with the same core
count must pay. All figures are MODELED: a plan's DMA bytes are its lowered program's
(schedules/program.py, summed by schedules/program_totals.py), which the cost model moves.

Two traffic figures exist for a fused kernel and they answer different questions:

  HBM bytes   what reaches the DRAM behind L2 (the cost model's hbm_* fields). Re-reads of the
              same bytes inside one kernel (halos, the PW weights every core loads) hit L2 while
              the working set fits, so the fused kernel's HBM traffic is the minimal bytes.
  DMA bytes   every byte the MTE2/MTE3 engines move between GM (through L2) and the core, L2 hits
              included (the cost model's gm_* fields, the emulator's gm_read/gm_write counters).

A fused plan splits the output pixels into tiles and every core computes all output channels of
its tiles, so every core that runs a tile loads all PW weights at least once. For a plan on
`cores` cores the DMA volume is therefore at least

  floor = minimal bytes + (cores - 1) * (DW taps + DW bias) + (pw_loaders - 1) * PW weights
          [+ PW bias per extra loader] [+ 2 * the DW result (and pre-activation) on 910B cube]

(pw_loaders = cores, or the AICs on 910B cube plans). The bound is not an artefact of this plan
family: split the block's output (pixels x output channels, N elements) into `cores` equal shares
in any way; a core whose share spans p pixels and q channels (p*q >= N/cores) must read the inputs
of its p pixels and the weights of its q channels, at least p*In/px + q*W/Cout >= 2*sqrt(In*W/cores)
bytes (AM-GM), so all cores together read at least 2*sqrt(In*W*cores) -- no core can reuse what
another core loaded except through L2. `dma_floor_any_split_bytes` is that bound plus the output.
With 24-48 cores and PW weights that are a
sizeable part of the block's bytes this floor is far above the minimal bytes: on a many-core chip
"DMA volume close to minimal" and "all cores busy" exclude each other, and L2 is what makes the
re-reads cheap. `dma_floor_bytes` states that bound so a report can show how close a plan is to
what its core count allows; `--max-dma-ratio` (tune / compile / bench) trades latency for DMA.
"""

from __future__ import annotations

from functools import lru_cache


from fusion.core.ir import C0
from schedules.program_totals import dma_bytes
from schedules.isa import ACC_BYTES, itemsize
from schedules.footprint import fused_min_bytes
from schedules.loops import block_start, window_first, window_span, window_start, window_valid
from schedules.plan import KernelPlan
from schedules.twophase import gemm_m
from schedules.workload import DwSepWorkload, ceil_div


@lru_cache(maxsize=1024)
def _input_bytes(wl: DwSepWorkload, th: int, tw: int) -> tuple[int, int]:
    """(unique, DMA) input bytes of a th x tw output tiling: the union of the tiles' input windows
    (clipped to the image) and the sum of the windows (halos counted once per tile)."""

    def axis(out_total, t, s, k, pad, in_total):   # the tiles' windows as the kernel's SetTile clips them
        spans = []
        for i in range(ceil_div(out_total, t)):
            lo = window_start(block_start(i, t), s, pad)
            first = window_first(lo)
            spans.append((first, first + window_valid(lo, window_span(t, s, k), in_total)))
        dma = sum(max(0, b - a) for a, b in spans)
        covered, end = 0, 0
        for a, b in sorted(spans):
            if b > max(a, end):
                covered += b - max(a, end)
                end = b
        return covered, dma

    kh, kw = wl.kernel
    u_r, d_r = axis(wl.out_height, th, wl.stride[0], kh, wl.pads[0], wl.height)
    u_c, d_c = axis(wl.out_width, tw, wl.stride[1], kw, wl.pads[1], wl.width)
    per = wl.batch * wl.c1 * C0 * itemsize(wl.dtype)
    return per * u_r * u_c, per * d_r * d_c


def weight_bytes(wl: DwSepWorkload) -> tuple[int, int, int, int]:
    """(DW taps, DW bias, PW weights, PW bias) bytes in the kernel's GM layouts."""
    b = itemsize(wl.dtype)
    kh, kw = wl.kernel
    return (wl.c1 * kh * kw * C0 * b, wl.c1 * C0 * ACC_BYTES,
            wl.co1 * wl.c1 * C0 * C0 * b, wl.co1 * C0 * ACC_BYTES)


def gemm_cores(plan: KernelPlan) -> int:
    """Cores that run the PW GEMM: the AICs on 910B cube plans, else the plan's cores."""
    return plan.aic_cores if plan.handoff_via_gm else plan.cores


def min_bytes(wl: DwSepWorkload) -> int:
    return sum(fused_min_bytes(wl).values())


def dma_ratio(plan: KernelPlan) -> float:
    """DMA bytes of the fused kernel (its lowered program's) / minimal bytes (input + weights +
    residual + output once)."""
    return sum(dma_bytes(plan).values()) / min_bytes(plan.workload)


def dma_floor_bytes(plan: KernelPlan) -> int:
    """The least DMA volume of any fused plan with this plan's core count, PW engine and SoC; of
    any two-phase plan, the block's minimal bytes plus one write and one read of the DW result
    (module docstring): each active core loads the DW taps and biases, each PW loader the PW
    weights, at least once; on 910B cube plans the DW result of every output pixel (and its
    pre-activation when the epilogue runs on the AIV) crosses GM twice."""
    wl = plan.workload
    b = itemsize(wl.dtype)
    if plan.two_phase:   # the minimal bytes plus the DW result written to the workspace once and read back once
        return min_bytes(wl) + 2 * wl.c1 * gemm_m(wl) * C0 * b
    w_dw, b_dw, w_pw, b_pw = weight_bytes(wl)
    cores = plan.cores
    extra = (cores - 1) * (w_dw + b_dw)
    if not plan.handoff_via_gm:
        extra += (cores - 1) * (w_pw + b_pw)
    else:
        fix = plan.fixpipe_epilogue
        loaders = gemm_cores(plan)
        extra += (loaders - 1) * w_pw + ((loaders if fix else cores) - 1) * b_pw
        px = wl.batch * wl.out_height * wl.out_width
        extra += 2 * (wl.c1 + (0 if fix else wl.co1)) * px * C0 * b
    return min_bytes(wl) + extra


def dma_floor_any_split_bytes(wl: DwSepWorkload, cores: int) -> int:
    """The least DMA volume of ANY split of the block's outputs into `cores` equal shares, fused or
    not (module docstring): output + max(input + PW weights, 2*sqrt(input * PW weights * cores)).
    DW taps and biases are left out, so it is a lower bound of dma_floor_bytes for every engine."""
    mins = fused_min_bytes(wl)
    w_pw = weight_bytes(wl)[2]
    inp = mins["input"]
    return mins["output"] + mins["residual"] + max(inp + w_pw, int(2 * (inp * w_pw * cores) ** 0.5))
