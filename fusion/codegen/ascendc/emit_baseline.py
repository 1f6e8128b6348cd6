"""Emit the vendor-like baseline's kernels as Ascend C (templates/baseline_dw.cpp,
templates/baseline_gemm.cpp) from the same programs the simulator times
(schedules/baseline_program.py), so the baseline is as concrete as the fused kernels: the
emulator runs them and its counters equal the program's (fusion/verify/baseline_check.py).

What is emitted (fp16, NC1HWC0): the depthwise kernel in its vector form (what 910B runs) and in
its cube form (what 310P runs: load3d of each tap's window, a diagonal weight fractal per tap,
fp32 accumulation in L0C, bias and act on the vector unit), and the 1x1-convolution GEMM of one image (the PW kernel) with
the Fixpipe epilogue on 910B (act none / relu, no residual: the AIV pass of the others is not
emitted) and the L0C -> UB epilogue on 310P (relu / relu6, residual). Other shapes refuse with a
MegafuseError naming what is missing.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from fusion.codegen.ascendc.cxx import fill, template
from fusion.core.errors import MegafuseError
from fusion.core.ir import C0
from fusion.core.soc import SocSpec
from schedules.baseline_program import (
    BaselineProgram,
    DwShape,
    _parts,
    dw_column_pitch_ok,
    dw_cube_rows,
    dw_on_cube,
    dw_program,
    dw_row_pixels,
    dw_rows,
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


def _dw_source(name: str) -> str:
    """A depthwise kernel's source: its template with the units loop both forms share."""
    return fill(template(name), DW_UNITS=template("baseline_dw_units.h"))


def emit_dw(soc: SocSpec, d: DwShape, name: str = "dw", on_cube: bool | None = None) -> BaselineKernel:
    """The depthwise kernel of `d` (fp16) and its program: on the cube where the vendor runs it
    there (dw_on_cube: 310P; templates/baseline_dw_cube.cpp), else in its vector form
    (templates/baseline_dw.cpp); `on_cube` forces a form."""
    if d.dtype != "float16":
        raise MegafuseError(f"baseline DW kernel {name}: only float16 is emitted (got {d.dtype})")
    if d.act not in ACT_CODE:
        raise MegafuseError(f"baseline DW kernel {name}: activation {d.act!r} is not emitted (none, relu, relu6)")
    on_cube = dw_on_cube(soc, d) if on_cube is None else on_cube
    if on_cube and not soc.coupled:
        raise MegafuseError(f"baseline DW kernel {name}: the cube form moves L0C -> UB, which {soc.name} has not")
    prog = dw_program(soc, name, d, on_cube=on_cube)
    rows = dw_rows(soc, d, on_cube)
    groups = ceil_div(d.out_h, rows)
    units = d.batch * d.c1 * groups
    per = ceil_div(units, min(soc.cube_cores if on_cube else soc.vector_cores, units))
    common = (("h", d.h), ("w", d.w), ("oh", d.out_h), ("ow", d.out_w))
    shared = (("c1", d.c1), ("rows", rows), ("groups", groups), ("units", units), ("perCore", per),
              ("act", ACT_CODE[d.act]))
    if on_cube:
        pad_right = max(0, (d.out_w - 1) * d.stride + d.kw - d.w - d.pad_left)
        tiling = (*common, ("kh", d.kh), ("kw", d.kw), ("stride", d.stride), ("padTop", d.pad_top),
                  ("padLeft", d.pad_left), ("padRight", pad_right), *shared, ("chunk", dw_cube_rows(soc, d)))
        return BaselineKernel("baseline_dw_cube", _dw_source("baseline_dw_cube.cpp"), tiling, ceil_div(units, per), prog,
                              ("x", "w", "b", "y", "workspace", "tiling"))
    tiling = (*common, ("owp", dw_row_pixels(d)), ("wp", dw_window_width(d)), ("kh", d.kh), ("kw", d.kw),
              ("stride", d.stride), ("padTop", d.pad_top), ("padLeft", d.pad_left), *shared,
              ("columnForm", int(dw_column_pitch_ok(d))))
    return BaselineKernel("baseline_dw", _dw_source("baseline_dw.cpp"), tiling, ceil_div(units, per), prog,
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
