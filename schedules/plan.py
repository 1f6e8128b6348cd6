"""KernelPlan: every on-chip buffer of one fused kernel with its bytes, derived from a TileConfig.

The plan is the one source of truth: the UB budget check, the cost model, the LLVM schedule and
the Ascend C emitter all read tile sizes, buffers and loop trip counts from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fusion.errors import UBOverflowError
from fusion.ir import C0
from fusion.soc import SocSpec
from schedules.workload import DwSepWorkload, TileConfig, ceil_div

ACC_BYTES = 4  # fp32 accumulators and biases


def align(nbytes: int, to: int) -> int:
    return -(-nbytes // to) * to


@dataclass(frozen=True)
class BufferPlan:
    name: str
    scope: str            # UB | L1 | L0A | L0B | L0C
    shape: tuple[int, ...]
    dtype: str
    copies: int           # 2 = ping/pong (double-buffered)
    role: str             # what it holds, for reports
    in_tir: bool = True   # materialised in the LLVM kernel's TIR (weights are read from memory there)
    tir_shape: tuple[int, ...] | None = None  # when the TIR's copy is unpadded (cube fractal rows)

    @property
    def bytes_per_copy(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize

    @property
    def tir_bytes_per_copy(self) -> int:
        shape = self.tir_shape or self.shape
        return int(np.prod(shape)) * np.dtype(self.dtype).itemsize

    def aligned_bytes(self, alignment: int) -> int:
        return align(self.bytes_per_copy, alignment) * self.copies


@dataclass(frozen=True)
class KernelPlan:
    workload: DwSepWorkload
    tile: TileConfig
    soc: SocSpec
    buffers: tuple[BufferPlan, ...] = field(default=())

    # --- loop structure -------------------------------------------------------------------
    @property
    def th(self) -> int:
        return min(self.tile.th, self.workload.out_height)

    @property
    def tw(self) -> int:
        return min(self.tile.tw, self.workload.out_width)

    @property
    def cob(self) -> int:
        return min(self.tile.cob, self.workload.co1)

    @property
    def cib(self) -> int:
        return min(self.tile.cib or self.workload.c1, self.workload.c1)

    @property
    def in_tile_h(self) -> int:
        return (self.th - 1) * self.workload.stride[0] + self.workload.kernel[0]

    @property
    def in_tile_w(self) -> int:
        return (self.tw - 1) * self.workload.stride[1] + self.workload.kernel[1]

    @property
    def tiles_h(self) -> int:
        return ceil_div(self.workload.out_height, self.th)

    @property
    def tiles_w(self) -> int:
        return ceil_div(self.workload.out_width, self.tw)

    @property
    def n_tiles(self) -> int:
        return self.workload.batch * self.tiles_h * self.tiles_w

    @property
    def ci_steps(self) -> int:
        return ceil_div(self.workload.c1, self.cib)

    @property
    def co_steps(self) -> int:
        return ceil_div(self.workload.co1, self.cob)

    @property
    def cores(self) -> int:
        limit = self.soc.vector_cores
        want = self.tile.cores or limit
        return max(1, min(want, limit, self.n_tiles))

    @property
    def pw_on_cube(self) -> bool:
        return self.tile.pw_engine == "cube"

    @property
    def handoff_via_gm(self) -> bool:
        """PW on the cube of a decoupled chip (910B): the DW result goes to the cube core via GM/L2."""
        return self.pw_on_cube and not self.soc.coupled

    # --- budget ---------------------------------------------------------------------------
    @cached_property
    def scope_bytes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for b in self.buffers:
            out[b.scope] = out.get(b.scope, 0) + b.aligned_bytes(self.soc.ub_align)
        return out

    def capacity(self, scope: str) -> int:
        s = self.soc
        return {"UB": s.ub_usable_bytes, "L1": s.l1_bytes, "L0A": s.l0a_bytes,
                "L0B": s.l0b_bytes, "L0C": s.l0c_bytes}[scope]

    @property
    def ub_bytes(self) -> int:
        return self.scope_bytes.get("UB", 0)

    def overflows(self) -> list[tuple[str, int, int]]:
        return [(sc, used, self.capacity(sc)) for sc, used in self.scope_bytes.items()
                if used > self.capacity(sc)]

    def fits(self) -> bool:
        return not self.overflows()

    def largest_buffer(self, scope: str) -> BufferPlan:
        return max((b for b in self.buffers if b.scope == scope),
                   key=lambda b: b.aligned_bytes(self.soc.ub_align))

    def buffer(self, name: str) -> BufferPlan:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)


def make_plan(wl: DwSepWorkload, tile: TileConfig, soc: SocSpec) -> KernelPlan:
    """Lay out every live buffer of the fused kernel for this tile (no budget check)."""
    plan = KernelPlan(wl, tile, soc)
    dt, db = wl.dtype, 2 if tile.double_buffer else 1
    th, tw, cob, cib, c1 = plan.th, plan.tw, plan.cob, plan.cib, wl.c1
    kh, kw = wl.kernel
    bufs = [
        BufferPlan("x_tile", "UB", (cib, plan.in_tile_h, plan.in_tile_w, C0), dt, db,
                   "input tile with halo (one input-channel block)"),
        BufferPlan("w_dw", "UB", (c1, kh, kw, C0), dt, 1, "depthwise taps, resident", in_tir=False),
        BufferPlan("b_dw", "UB", (c1, C0), "float32", 1, "folded BN1 bias, resident", in_tir=False),
        BufferPlan("dw_acc", "UB", (cib, th, tw, C0), "float32", 1, "DW accumulator"),
        BufferPlan("dw_out", "UB", (c1, th, tw, C0), dt, 1, "DW result after bias+act: the fused intermediate"),
    ]
    if plan.pw_on_cube:
        if soc.coupled:  # UB → L1 → L0A on chip
            bufs.append(BufferPlan("dw_out_l1", "L1", (c1, th * tw, C0), dt, 1,
                                   "intermediate staged for the cube", in_tir=False))
        bufs += [
            BufferPlan("a_l0a", "L0A", (c1, align(th * tw, C0), C0), dt, 1, "cube A operand", in_tir=False),
            BufferPlan("w_pw_l1", "L1", (c1 * C0, cob * C0), dt, db, "PW weight block (FRACTAL_Z)", in_tir=False),
            BufferPlan("b_l0b", "L0B", (c1 * C0, cob * C0), dt, 1, "cube B operand", in_tir=False),
            BufferPlan("pw_acc", "L0C", (cob, align(th * tw, C0), C0), "float32", 1, "PW accumulator (L0C)",
                       tir_shape=(cob, th, tw, C0)),
        ]
    else:
        bufs += [
            BufferPlan("w_pw", "UB", (c1 * C0, cob * C0), dt, db, "PW weight block", in_tir=False),
            BufferPlan("pw_acc", "UB", (cob, th, tw, C0), "float32", 1, "PW accumulator"),
        ]
    bufs.append(BufferPlan("b_pw", "UB", (wl.co1, C0), "float32", 1, "folded BN2 bias, resident", in_tir=False))
    if wl.residual:
        bufs.append(BufferPlan("res_tile", "UB", (cob, th, tw, C0), dt, db, "residual input tile"))
    bufs.append(BufferPlan("y_tile", "UB", (cob, th, tw, C0), dt, db, "output tile"))
    return KernelPlan(wl, tile, soc, tuple(bufs))


def check_budget(plan: KernelPlan) -> KernelPlan:
    """Raise UBOverflowError naming bytes needed vs available, the dominant buffer and a fix."""
    over = plan.overflows()
    if not over:
        return plan
    scope, used, cap = over[0]
    big = plan.largest_buffer(scope)
    hint = suggest_tile(plan.workload, plan.soc, plan.tile)
    fix = (f"try --tile {hint.th}x{hint.tw} --cout-block {hint.cob} --cin-block {hint.cib or plan.workload.c1}"
           if hint else "no tile of this block fits: it cannot be fused")
    if plan.tile.double_buffer:
        fix += " or --no-double-buffer"
    raise UBOverflowError(
        f"tile {plan.tile.describe()} of block {plan.workload.describe()} needs {used:,} B "
        f"({used / 1024:.1f} KiB) of {scope} but {plan.soc.name} has {cap:,} B ({cap / 1024:.1f} KiB); "
        f"largest buffer: {big.name} {big.aligned_bytes(plan.soc.ub_align):,} B "
        f"({'×2 double-buffered' if big.copies == 2 else 'single'}); {fix}")


def suggest_tile(wl: DwSepWorkload, soc: SocSpec, like: TileConfig | None = None,
                 min_tiles: int = 1) -> TileConfig | None:
    """The largest (th·tw, then tw, then cob, then cib) tile that fits, keeping `like`'s other
    knobs, with at least `min_tiles` tiles when the output has that many pixels."""
    base = like or TileConfig(1, 1)
    oh, ow = wl.out_height, wl.out_width
    need = min(min_tiles, wl.batch * oh * ow)
    best = None
    for th in balanced_sizes(oh):
        for tw in balanced_sizes(ow):
            if wl.batch * ceil_div(oh, th) * ceil_div(ow, tw) < need:
                continue
            if best is not None and (th * tw, tw) <= (best.th * best.tw, best.tw):
                continue
            cand = TileConfig(th, tw, 1, 1, base.double_buffer, base.pw_engine, base.cores)
            if make_plan(wl, cand, soc).fits():
                best = cand
    if best is None:
        return None
    for cob in range(wl.co1, 0, -1):  # then grow the channel blocks as far as they fit
        cand = TileConfig(best.th, best.tw, cob, 1, base.double_buffer, base.pw_engine, base.cores)
        if make_plan(wl, cand, soc).fits():
            best = cand
            break
    for cib in range(wl.c1, 0, -1):
        cand = TileConfig(best.th, best.tw, best.cob, cib, base.double_buffer, base.pw_engine, base.cores)
        if make_plan(wl, cand, soc).fits():
            return TileConfig(best.th, best.tw, best.cob, 0 if cib == wl.c1 else cib,
                              base.double_buffer, base.pw_engine, base.cores)
    return best


def balanced_sizes(extent: int) -> list[int]:
    """Tile sizes that split `extent` into k near-equal tiles (no sliver at the end): ceil(extent/k)."""
    return sorted({ceil_div(extent, k) for k in range(1, extent + 1)})


def smallest_plan(wl: DwSepWorkload, soc: SocSpec) -> KernelPlan:
    """The plan with the smallest UB footprint (1×1 tile, one channel block, single-buffered)."""
    return make_plan(wl, TileConfig(1, 1, 1, 1, double_buffer=False), soc)
