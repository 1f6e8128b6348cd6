"""Emit the vendor-like baseline's kernels as Ascend C (templates/baseline_dw.cpp,
templates/baseline_gemm.cpp) from the same programs the simulator times
(schedules/baseline_program.py), so the baseline is as concrete as the fused kernels: the
emulator runs them and its counters equal the program's (fusion/verify/baseline_check.py).

What is emitted (fp16, NC1HWC0): the depthwise kernel in its vector form (what 910B runs; the
310P runs DepthwiseConv2D on the cube through load3d, which the emulator models since 16de0db
but no template here emits, so its cube form is simulated only), and the 1x1-convolution GEMM of one image (the PW kernel) with
the Fixpipe epilogue on 910B (act none / relu, no residual: the AIV pass of the others is not
emitted) and the L0C -> UB epilogue on 310P (relu / relu6, residual). Other shapes refuse with a
MegafuseError naming what is missing.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from fusion.codegen.ascendc.cxx import template
from fusion.core.errors import MegafuseError
from fusion.core.ir import C0
from fusion.core.soc import SocSpec
from schedules.baseline_program import (
    BaselineProgram,
    DwShape,
    _parts,
    dw_column_pitch_ok,
    dw_program,
    dw_row_pixels,
    dw_rows_per_copy,
    dw_window_width,
    gemm_program,
)
from schedules.workload import ceil_div

ACT_CODE = {"none": 0, "relu": 1, "relu6": 2}


@dataclass(frozen=True)
class BaselineKernel:
    symbol: str
    source: str
    tiling: tuple[tuple[str, int], ...]
    block_dim: int
    program: BaselineProgram
    args: tuple[str, ...]

    def tiling_bytes(self) -> bytes:
        return struct.pack(f"<{len(self.tiling)}I", *(v for _, v in self.tiling))


def emit_dw(soc: SocSpec, d: DwShape, name: str = "dw") -> BaselineKernel:
    """The vector-form depthwise kernel of `d` (fp16) and its program."""
    if d.dtype != "float16":
        raise MegafuseError(f"baseline DW kernel {name}: only float16 is emitted (got {d.dtype})")
    if d.act not in ACT_CODE:
        raise MegafuseError(f"baseline DW kernel {name}: activation {d.act!r} is not emitted (none, relu, relu6)")
    prog = dw_program(soc, name, d, on_cube=False)
    cores = soc.vector_cores
    rows = min(dw_rows_per_copy(soc, d), max(1, ceil_div(d.out_h, ceil_div(cores, d.batch * d.c1))))
    groups = ceil_div(d.out_h, rows)
    units = d.batch * d.c1 * groups
    per = ceil_div(units, min(cores, units))
    tiling = (("h", d.h), ("w", d.w), ("oh", d.out_h), ("ow", d.out_w), ("owp", dw_row_pixels(d)),
              ("wp", dw_window_width(d)), ("kh", d.kh), ("kw", d.kw), ("stride", d.stride),
              ("padTop", d.pad_top), ("padLeft", d.pad_left), ("c1", d.c1), ("rows", rows),
              ("groups", groups), ("units", units), ("perCore", per), ("act", ACT_CODE[d.act]),
              ("columnForm", int(dw_column_pitch_ok(d))))
    return BaselineKernel("baseline_dw", template("baseline_dw.cpp"), tiling, ceil_div(units, per), prog,
                          ("x", "w", "b", "y", "workspace", "tiling"))


def emit_gemm(soc: SocSpec, pixels: int, cin: int, cout: int, split: tuple[int, int], act: str = "none",
              residual: bool = False, dtype: str = "float16", name: str = "pw") -> BaselineKernel:
    """The 1x1 convolution of one image (pixels x cin -> cout, NC1HWC0) on the cube, core split
    `split`, and its program."""
    if dtype != "float16":
        raise MegafuseError(f"baseline GEMM kernel {name}: only float16 is emitted (got {dtype})")
    if not soc.coupled and (residual or act not in soc.fixpipe_acts):
        raise MegafuseError(f"baseline GEMM kernel {name}: on {soc.name} only the Fixpipe epilogue is emitted "
                            f"(act none / relu, no residual)")
    if act not in ACT_CODE:
        raise MegafuseError(f"baseline GEMM kernel {name}: activation {act!r} is not emitted (none, relu, relu6)")
    k16, n16 = ceil_div(cin, C0) * C0, ceil_div(cout, C0) * C0
    e = 2
    prog = gemm_program(soc, name, pixels, cin, cout, dtype, split, a_unique=float(pixels * k16 * e), a_fmap=True,
                        act=act, residual=residual, kind="conv")
    ms, ns = _parts(pixels, split[0], C0), _parts(n16, split[1], C0)
    mp, np_ = len([p for p in ms if p]), len([p for p in ns if p])
    tiling = (("m", pixels), ("k16", k16), ("n16", n16), ("sizeM", ms[0]), ("sizeN", ns[0]), ("npUsed", np_),
              ("l1Half", soc.l1_bytes // 2), ("l1", soc.l1_bytes), ("act", ACT_CODE[act]),
              ("residual", int(residual)))
    coupled = "1" if soc.coupled else "0"
    source = template("baseline_gemm.cpp").replace("@COUPLED@", coupled)
    return BaselineKernel("baseline_gemm", source, tiling, mp * np_, prog,
                          ("x", "w", "res", "y", "workspace", "tiling"))
