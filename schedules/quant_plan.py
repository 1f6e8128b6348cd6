"""The fused int8 DW->PW kernel on Ascend (a QDwSep of passes/quant_fuse.py): its workload, its plan
(tile, buffers, UB/L1/L0 budgets with C0 = 32 for int8) and its lowered program (per-tile steps
with their counts). fusion/cost/int8.py times these steps; the vendor-like int8 kernels
(fusion/cost/vendor_int8.py) use the same vector-op counts, so both sides of a comparison count
the same instructions for the same arithmetic.

Data path (exact against ORT's QLinearConv, passes/quant_fuse.py); on 310P it is the emitted
kernel's (fusion/codegen/ascendc/templates/int8_dwsep_310p.cpp), instruction for instruction:
  GM --MTE2--> UB   the x tile's in-image part, int8/uint8 NC1HWC0, C0 = 32 (one DataBlock a pixel)
  vector, per 32-channel block: Cast x -> half, Duplicate x_zp, Cast -> float row by row into place,
          - x_zp (padding -> 0), per tap and row one MulAddDst in fp32 (|products| <= 255*255 and
          their sum stay below 2^24: exact), + bias, * mult (per channel, float32 as ORT), Maxs /
          Mins (the clamp), + and - 1.5 * 2^23 (round half to even, IEEE float adds), + zero point,
          Cast -> half -> int8 (exact). The vector unit has no int8 multiply-add; int8 reaches it
          through Cast [soc.py: cast]. A uint8 DW output is written recentred (v - 128 as int8)
          for the int8 cube, the zero points folded into the PW bias on the host (exact in int32).
  PW on the cube in int8: A = the DW result (th*tw x C1*32), B = w_pw (C1*32 x Cout), int32 in
          L0C, fractals 16 x 32 x 16 [soc.py: tbe-guide].
    310P  UB -> L1 -> L0A on chip; L0C -> UB (int32), + bias (int32), Cast -> float, * mult and the
          same exact requant, + zp into the pixel-major y tile, Cast -> half -> int8: exact.
    910B  a MIX kernel (templates/int8_dwsep_910b.cpp), instruction for instruction: phase 1 the
          AIVs run the DW above and write the int8 DW result to a GM workspace; SyncAll; phase 2
          the AIC reads it GM -> L1 -> L0A, int8 Mmad -> int32 L0C, Fixpipe NoQuant int32 -> GM
          workspace; SyncAll; phase 3 the AIVs read the int32 tile into UB and run the 310P
          epilogue (bias, Cast, * mult, the exact requant, + zp, Cast -> int8). The Fixpipe's own
          requant (VREQ8, soc.int8_requant) is not used: its rounding is not ORT's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from fusion.core.ir import C0, Graph, Node, c0_of, ceil_div
from fusion.core.soc import SocSpec
from schedules.isa import VecWork, count_form, vec_op
from schedules.workload import conv_out

I8 = "int8"
C0_I8 = c0_of(I8)            # 32 channels a DataBlock
N0 = C0                      # the cube's N fractal (16 output channels), int8 as fp16
ACC = 4                      # int32 / fp32 bytes


@dataclass(frozen=True)
class Int8Workload:
    """One fused int8 DW->PW block (logical NCHW shapes; the kernel runs NC1HWC0 with C0 = 32)."""
    batch: int
    cin: int
    cout: int
    height: int
    width: int
    kernel: tuple[int, int] = (3, 3)
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (1, 1, 1, 1)

    @property
    def out_h(self) -> int:
        return conv_out(self.height, self.pads[0], self.pads[2], self.kernel[0], self.stride[0])

    @property
    def out_w(self) -> int:
        return conv_out(self.width, self.pads[1], self.pads[3], self.kernel[1], self.stride[1])

    @property
    def c1(self) -> int:
        return ceil_div(self.cin, C0_I8)

    @property
    def co1(self) -> int:
        """32-channel blocks of the int8 output."""
        return ceil_div(self.cout, C0_I8)

    @property
    def n16(self) -> int:
        """16-column fractals of the PW's N (Cout)."""
        return ceil_div(self.cout, N0)

    @property
    def in_bytes(self) -> int:
        return self.batch * self.c1 * C0_I8 * self.height * self.width

    @property
    def out_bytes(self) -> int:
        return self.batch * self.co1 * C0_I8 * self.out_h * self.out_w

    @property
    def weight_bytes(self) -> int:
        """w_dw (fp32, cast on the host; stride 1: each tap stored twice), b_dw + mult_dw, w_pw
        int8, b_pw + deq scales."""
        kh, kw = self.kernel
        taps = kh * kw * (2 if self.stride[1] == 1 else 1)
        return (self.c1 * C0_I8 * taps * ACC + 2 * self.c1 * C0_I8 * ACC
                + self.c1 * C0_I8 * self.n16 * N0 + self.n16 * N0 * (ACC + 8))

    @property
    def macs(self) -> int:
        px = self.batch * self.out_h * self.out_w
        return px * self.cin * (self.kernel[0] * self.kernel[1] + self.cout)

    def describe(self) -> str:
        k, s = f"{self.kernel[0]}x{self.kernel[1]}", f"s{self.stride[0]}"
        return f"{self.cin}->{self.cout} @{self.height}x{self.width} dw{k} {s} n{self.batch} int8"


def int8_workload(g: Graph, n: Node) -> Int8Workload:
    """The workload of a QDwSep node."""
    a = dict(n.attrs)
    b, cin, h, w = (int(v) for v in g.types[n.inputs[0]].shape)
    cout = int(g.types[n.outputs[0]].shape[1])
    return Int8Workload(b, cin, cout, h, w, tuple(a["dw_kernel"]), tuple(a["dw_strides"]), tuple(a["dw_pads"]))


# --- vector-op counts (one source for the fused kernel and the vendor-like int8 kernels) ------
def per_pixel(soc: SocSpec, pixels: int, rows: int = 1) -> VecWork:
    """An op whose second operand is a per-channel DataBlock group (a tap's weights, a bias, a
    scale): one 32-channel pixel a repeat (128 B of fp32, half the lanes), `rows` rows of pixels."""
    if pixels <= 0:
        return VecWork()
    per_row = ceil_div(pixels, rows)
    return VecWork(rows * ceil_div(per_row, soc.max_repeat), pixels)


def tap_work(soc: SocSpec, th: int, tw: int, sw: int) -> VecWork:
    """One tap's MulAddDst (fp32) over th x tw pixels of one 32-channel block, row by row. Stride 1:
    two pixels a repeat (256 B; the tap's 32 weights are stored twice, so the weight operand is one
    256 B row read by every repeat); stride 2: one pixel a repeat (the source pixels of a repeat
    are not one block stride apart), half the lanes."""
    if sw == 1:
        per_row = ceil_div(tw, 2)
        return VecWork(th * ceil_div(per_row, soc.max_repeat), th * per_row)
    return per_pixel(soc, th * tw, th)


def dw_int8_work(soc: SocSpec, th: int, tw: int, ih: int, iw: int, kh: int, kw: int, sw: int = 1,
                 rr: int | None = None, rc: int | None = None) -> VecWork:
    """One 32-channel block of the int8 DW over th x tw output pixels from an ih x iw input tile of
    which rr x rc pixels lie in the image (default: all), as the emitted kernel issues it
    (templates/int8_dwsep_310p.cpp Dw): Cast int8 -> half, Duplicate x_zp, one Cast half -> float
    a read row into place, Adds -x_zp, Duplicate 0, the taps row by row (rows padded to an even
    width twp), + bias and * mult one pixel a repeat, the exact requant (requant_work)."""
    rr, rc = (ih if rr is None else rr), (iw if rc is None else rc)
    twp = ceil_div(tw, 2) * 2
    x = (ih * iw + 1) * C0_I8                                          # + one pixel of slack
    cast_in = count_form(soc, rr * rc * C0_I8, 2) + count_form(soc, rc * C0_I8, ACC, rr)
    prep = count_form(soc, x, ACC, 2) + count_form(soc, th * twp * C0_I8, ACC)
    taps = tap_work(soc, th, tw, sw) * (kh * kw)
    return cast_in + prep + taps + per_pixel(soc, th * twp) + requant_work(soc, th * twp)


def requant_work(soc: SocSpec, pixels: int) -> VecWork:
    """ORT's requant of `pixels` 32-channel pixels of float32 integers, exact: * mult (per channel,
    one pixel a repeat), Maxs, Mins (the clamp), + and - 1.5 * 2^23 (round half to even), + zp,
    Cast -> half, Cast -> int8."""
    px = pixels * C0_I8
    return per_pixel(soc, pixels) + count_form(soc, px, ACC, 6) + count_form(soc, px, 2)


def pw_epilogue_work(soc: SocSpec, thw: int, thw_al: int, nb: int) -> VecWork:
    """310P, one co-step of nb 16-column fractals after the L0C -> UB move (int32, NZ): + bias and
    * mult per fractal column one 16-channel row a repeat, Cast int32 -> float, Maxs, Mins, +/-
    1.5 * 2^23, + zp into the pixel-major y tile per fractal column, Cast -> half -> int8
    (templates/int8_dwsep_310p.cpp Pw)."""
    rows = VecWork(ceil_div(thw_al, soc.max_repeat), thw_al) * nb
    ytile = ceil_div(nb, 2) * thw * C0_I8
    return (rows * 2 + count_form(soc, thw_al * nb * N0, ACC, 5)
            + VecWork(ceil_div(thw, soc.max_repeat), thw) * nb
            + count_form(soc, ytile, ACC) + count_form(soc, ytile, 2))


def core_init_work(soc: SocSpec, plan: "Int8Plan") -> VecWork:
    """Once a core (310P) or AIV (910B): Duplicate of the y tile; 310P also of its zero rows."""
    y = count_form(soc, ceil_div(plan.cob, 2) * plan.thw * C0_I8, ACC)
    return (count_form(soc, 256, 2) + y) if soc.coupled else y


def l0c_requant_work(soc: SocSpec, elems: int, narrow_clamp: bool) -> VecWork:
    """310P: after the dequantizing L0C -> UB move (int32 -> half), + zp and Cast half -> int8
    (RINT) over `elems` outputs; a narrow clamp adds Maxs and Mins (half)."""
    return vec_op(soc, elems, 2) * (2 + (2 if narrow_clamp else 0))


# --- plan ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Int8Plan:
    wl: Int8Workload
    soc: SocSpec
    th: int                  # output rows per tile
    tw: int                  # output columns per tile
    cob: int                 # 16-column N fractals per PW co-step
    double_buffer: bool = False   # the emitted kernels serialize their pipes (single buffers)

    @property
    def ih(self) -> int:
        return (self.th - 1) * self.wl.stride[0] + self.wl.kernel[0]

    @property
    def iw(self) -> int:
        return (self.tw - 1) * self.wl.stride[1] + self.wl.kernel[1]

    @property
    def tiles_hw(self) -> tuple[int, int]:
        return ceil_div(self.wl.out_h, self.th), ceil_div(self.wl.out_w, self.tw)

    @property
    def thw(self) -> int:
        return self.th * self.tw

    @property
    def thw_al(self) -> int:
        return ceil_div(self.thw, N0) * N0

    @property
    def co_steps(self) -> int:
        return ceil_div(self.wl.n16, self.cob)

    @property
    def copies(self) -> int:
        return 2 if self.double_buffer else 1

    @property
    def tiles(self) -> int:
        return self.wl.batch * self.tiles_hw[0] * self.tiles_hw[1]

    @property
    def cores(self) -> int:
        """Vector cores used (AIVs on 910B, AI cores on 310P)."""
        return min(self.soc.vector_cores, self.tiles)

    @property
    def cube_cores(self) -> int:
        if self.soc.coupled:
            return self.cores
        ratio = max(1, self.soc.vector_cores // self.soc.cube_cores)
        return ceil_div(self.cores, ratio)

    @property
    def w_resident(self) -> bool:
        return self.co_steps == 1

    @property
    def tiles_per_cube_core(self) -> int:
        return ceil_div(self.tiles, self.cube_cores)

    @cached_property
    def buffers(self) -> tuple[tuple[str, str, int, int], ...]:
        """(name, memory, bytes, copies) of every buffer live at once: the emitted kernel's."""
        return self._coupled_buffers() if self.soc.coupled else self._mix_buffers()

    def _mix_buffers(self) -> tuple[tuple[str, str, int, int], ...]:
        """910B: the MIX kernel's buffers (templates/int8_dwsep_910b.cpp Init): the AIV's UB holds
        the DW's and the epilogue's (the 310P kernel's minus its zero rows), the AIC's L1 / L0 the
        GEMM's; each single (the kernel serializes its pipes)."""
        ub = tuple(b for b in self._coupled_buffers() if b[1] == "UB" and b[0] != "zeros")
        wl, kb = self.wl, self.wl.c1 * C0_I8
        ncols = self.cob * N0
        return ub + (("a_l1", "L1", kb * self.thw_al, 1),
                     ("w_pw_l1", "L1", kb * (wl.n16 if self.w_resident else self.cob) * N0, 1),
                     ("a_l0a", "L0A", kb * self.thw_al, 1),
                     ("b_l0b", "L0B", kb * ncols, 1),
                     ("acc_l0c", "L0C", self.thw_al * ncols * ACC, 1))

    def _coupled_buffers(self) -> tuple[tuple[str, str, int, int], ...]:
        """310P: the emitted kernel's buffers (templates/int8_dwsep_310p.cpp Init), one channel
        block of the DW at a time, each buffer single (the kernel serializes its pipes)."""
        wl, k = self.wl, self.wl.kernel[0] * self.wl.kernel[1]
        kb, twp = wl.c1 * C0_I8, ceil_div(self.tw, 2) * 2
        ncols, q = self.cob * N0, ceil_div(self.cob, 2)
        return (("x_tile", "UB", C0_I8 * self.ih * self.iw, 1),
                ("x_half", "UB", C0_I8 * self.ih * self.iw * 2, 1),
                ("x_float", "UB", C0_I8 * (self.ih * self.iw + 1) * ACC, 1),
                ("dw_acc", "UB", C0_I8 * self.th * twp * ACC, 1),
                ("dw_q", "UB", C0_I8 * self.th * twp, 1),
                ("zeros", "UB", 512, 1),
                ("w_dw", "UB", kb * k * ACC * (2 if wl.stride[1] == 1 else 1), 1),
                ("b_mult_dw", "UB", 2 * kb * ACC, 1),
                ("b_mult_pw", "UB", wl.n16 * N0 * ACC, 2),
                ("pw_int32", "UB", self.thw_al * ncols * ACC, 1),
                ("pw_float", "UB", self.thw_al * ncols * ACC, 1),
                ("y_float", "UB", q * self.thw * C0_I8 * ACC, 1),
                ("y_half", "UB", q * self.thw * C0_I8 * 2, 1),
                ("y_tile", "UB", q * self.thw * C0_I8, 1),
                ("a_l1", "L1", kb * self.thw_al, 1),
                ("w_pw_l1", "L1", kb * (wl.n16 if self.w_resident else self.cob) * N0, 1),
                ("a_l0a", "L0A", kb * self.thw_al, 1),
                ("b_l0b", "L0B", kb * self.cob * N0, 1),
                ("acc_l0c", "L0C", self.thw_al * ncols * ACC, 1))

    def bytes_in(self, mem: str) -> int:
        """Bytes of `mem` this plan needs: every buffer 32 B aligned, times its copies; on 910B
        the UB is the AIV's and L1/L0 the AIC's, on 310P one core holds both."""
        return sum(-(-b // self.soc.ub_align) * self.soc.ub_align * n for _, m, b, n in self.buffers if m == mem)

    def over_budget(self) -> str | None:
        """Why the plan does not fit, or None."""
        s = self.soc
        caps = {"UB": s.ub_usable_bytes, "L1": s.l1_bytes, "L0A": s.l0a_bytes, "L0B": s.l0b_bytes,
                "L0C": s.l0c_bytes, "BT": s.bt_bytes or 1 << 62}
        for mem, cap in caps.items():
            need = self.bytes_in(mem)
            if need > cap:
                big = max((b for b in self.buffers if b[1] == mem), key=lambda b: b[2] * b[3])
                return f"{mem} needs {need:,} B > {cap:,} B available (largest: {big[0]} {big[2] * big[3]:,} B)"
        return None

    def describe(self) -> str:
        return f"{self.th}x{self.tw} cob{self.cob}{' db' if self.double_buffer else ' sb'} {self.cores} cores"


def tile_widths(out_w: int) -> list[int]:
    """Columns per tile: the full width, then halves, quarters, ... down to 1 (distinct)."""
    return sorted({ceil_div(out_w, d) for d in (1, 2, 4, 8, 16, 32, 64) if d <= out_w}, reverse=True)


def tile_heights(out_h: int) -> list[int]:
    """Rows per tile: the least rows giving each distinct count of row tiles."""
    return sorted({ceil_div(out_h, ceil_div(out_h, th)) for th in range(1, out_h + 1)})


def int8_candidates(wl: Int8Workload, soc: SocSpec) -> list[Int8Plan]:
    """Every tile that fits (tile_heights x tile_widths), each with the largest co-step that fits:
    the emitted kernels' plans on both SoCs (single-buffered, tile-outer, an even co-step when there
    are several: each 32-channel output block written by one co-step; at most 510 columns at
    stride 1, 255 at stride 2: the taps' uint8 repeat count)."""
    out = []
    for tw in tile_widths(wl.out_w):
        if tw > (510 if wl.stride[1] == 1 else 255):
            continue
        for th in tile_heights(wl.out_h):
            for cob in range(wl.n16, 0, -1):
                if cob % 2 and cob < wl.n16:
                    continue
                p = Int8Plan(wl, soc, th, tw, cob, False)
                if p.over_budget() is None:
                    out.append(p)
                    break
    return out
