"""The loop nest of one fused kernel, read from its KernelPlan in one place.

Everything the emitter needs to know about tiles, channel blocks, cores and buffering comes
from `loop_nest(plan)`; when the lowered kernel program exists this is the function to switch.

Edge tiles and ragged channel blocks keep their full static size and move back inside the
tensor instead (origin = min(i * size, extent - size)): the overlapping part is computed twice
with identical results, every DMA and vector op has a static shape, and the trip counts are the
plan's.
"""

from __future__ import annotations

from dataclasses import dataclass



@dataclass(frozen=True)
class LoopNest:
    batch: int
    c1: int                 # input channel blocks (C0 wide)
    co1: int                # output channel blocks
    height: int             # input, without padding
    width: int
    pads: tuple[int, int, int, int]
    out_h: int
    out_w: int
    kh: int
    kw: int
    stride: tuple[int, int]
    th: int
    tw: int
    in_th: int              # input tile rows with halo
    in_tw: int
    tiles_h: int
    tiles_w: int
    n_tiles: int
    cores: int
    cib: int
    ci_steps: int
    cob: int
    co_steps: int
    x_slots: int            # 2 = ping/pong
    w_slots: int
    y_slots: int
    act1: str
    act2: str
    residual: bool
    dtype: str

    @property
    def padded_h(self) -> int:
        return self.height + self.pads[0] + self.pads[2]

    @property
    def padded_w(self) -> int:
        return self.width + self.pads[1] + self.pads[3]

    @property
    def pixels(self) -> int:
        return self.th * self.tw


def loop_nest(plan) -> LoopNest:
    wl = plan.workload
    slots = {b.name: b.copies for b in plan.kernel_buffers}
    return LoopNest(
        batch=wl.batch, c1=wl.c1, co1=wl.co1, height=wl.height, width=wl.width, pads=wl.pads,
        out_h=wl.out_height, out_w=wl.out_width, kh=wl.kernel[0], kw=wl.kernel[1], stride=wl.stride,
        th=plan.th, tw=plan.tw, in_th=plan.in_tile_h, in_tw=plan.in_tile_w,
        tiles_h=plan.tiles_h, tiles_w=plan.tiles_w, n_tiles=plan.n_tiles, cores=plan.cores,
        cib=plan.cib, ci_steps=plan.ci_steps, cob=plan.cob, co_steps=plan.co_steps,
        x_slots=slots["x_tile"], w_slots=slots.get("w_pw", 1), y_slots=slots["y_tile"],
        act1=wl.act1, act2=wl.act2, residual=wl.residual, dtype=wl.dtype)


