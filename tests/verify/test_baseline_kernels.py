"""The vendor-like baseline's DW and GEMM kernels, emitted as Ascend C and run on the host
emulator on both SoCs: outputs against NumPy (fp16: the kernels' storage dtype), counters equal
to the programs the simulator times."""

from __future__ import annotations

import pytest

from fusion.core.errors import MegafuseError
from fusion.core.soc import get_soc
from fusion.codegen.ascendc.emit_baseline import emit_dw, emit_gemm
from fusion.verify.baseline_check import check_dw, check_gemm
from schedules.baseline_program import DwShape, dw_cube_rows, dw_on_cube, dw_program, gemm_splits

SOCS = ("ascend910b2", "ascend310p3")
FP16_REL = 2e-3     # fp16 accumulation of up to 9 taps / a rounding of the fp32 GEMM result


@pytest.mark.parametrize("soc_name, on_cube", [("ascend910b2", False), ("ascend310p3", True), ("ascend310p3", False)],
                         ids=["910b2-vector", "310p3-cube", "310p3-vector"])
@pytest.mark.parametrize("d", [
    DwShape(2, 40, 13, 11, 7, 6, 3, 3, 2, 1, 1, "relu6", "float16"),     # stride 2, ragged rows
    DwShape(1, 24, 9, 19, 9, 19, 3, 3, 1, 1, 1, "relu", "float16"),      # 19 pixels: a ragged repeat
    DwShape(3, 17, 6, 5, 2, 1, 5, 5, 1, 0, 0, "none", "float16"),        # 5x5, no padding, tail channels
    DwShape(8, 48, 8, 8, 8, 8, 3, 3, 1, 1, 1, "relu", "float16"),        # a tap's op walks the rows
    DwShape(8, 16, 40, 40, 40, 40, 3, 3, 1, 1, 1, "relu6", "float16"),   # cube: 12 load3d chunks, 320 repeats
], ids=["s2", "ragged-w", "5x5-valid", "column-form", "wide-unit"])
def test_dw_kernel_matches_numpy_and_its_program(soc_name, on_cube, d):
    soc = get_soc(soc_name)
    r = check_dw(soc, d, on_cube=on_cube)
    assert r.max_rel <= FP16_REL, r
    assert r.counters_equal, (r.emulator, r.program)
    assert r.emulator["vector_instructions"] > 0 and r.emulator["gm_write_bytes"] == d.batch * d.c1 * d.out_h * d.out_w * 32
    # the cube form's taps are Mmads (a fractal per tap and 16 output pixels), the vector form's vector ops
    m1 = sum(-(-r * d.out_w // 16) for r in _unit_rows(emit_dw(soc, d, on_cube=on_cube)))
    assert r.emulator["cube_fractals"] == (d.kh * d.kw * m1 if on_cube else 0)
    if d.batch == 8 and d.channels == 48 and not on_cube:   # the column form: one op per tap for all 4 rows
        taps = [st for st, _ in emit_dw(soc, d).program.steps() if getattr(st, "op", "") == "dw_taps"]
        assert all(st.instrs == 9 for st in taps)


def _unit_rows(k) -> list[int]:
    """Output rows of every unit the emitted kernel runs (its tiling: rows per group, groups, units)."""
    t = dict(k.tiling)
    return [min(t["rows"], t["oh"] - (u % t["groups"]) * t["rows"]) for u in range(t["units"])]


def test_dw_cube_form_chunks_fit_l0a_and_refuse_off_coupled_chips():
    """The cube form's img2col chunk fills one of L0A's two buffers; 910B (no L0C -> UB) refuses it."""
    d = DwShape(1, 16, 56, 56, 56, 56, 3, 3, 1, 1, 1, "relu", "float16")
    soc = get_soc("ascend310p3")
    chunk = dict(emit_dw(soc, d).tiling)["chunk"]
    assert chunk % 16 == 0 and 2 * chunk * 9 * 16 * 2 <= soc.l0a_bytes < 2 * (chunk + 16) * 9 * 16 * 2
    with pytest.raises(MegafuseError, match="L0C -> UB"):
        emit_dw(get_soc("ascend910b2"), d, on_cube=True)
    # more taps than half of L0A holds for one 16-row chunk: the vector form, on 310P too
    big = DwShape(1, 16, 20, 20, 20, 20, 9, 9, 1, 4, 4, "relu", "float16")
    assert dw_cube_rows(soc, big) == 0 and not dw_on_cube(soc, big)
    assert emit_dw(soc, big).symbol == "baseline_dw" and dw_program(soc, "d", big).engine == "vector"


@pytest.mark.parametrize("soc_name, act, residual", [("ascend910b2", "relu", False), ("ascend910b2", "none", False),
                                                     ("ascend310p3", "relu6", True), ("ascend310p3", "relu", False)])
@pytest.mark.parametrize("shape", [(13, 11, 40, 72), (15, 19, 300, 40)], ids=["small", "k-steps"])
def test_gemm_kernel_matches_numpy_and_its_program(soc_name, act, residual, shape):
    soc = get_soc(soc_name)
    h, w, cin, cout = shape
    for split in gemm_splits(soc, h * w, cout)[:2]:
        r = check_gemm(soc, h, w, cin, cout, split, act, residual)
        assert r.max_rel <= FP16_REL, (split, r)
        assert r.counters_equal, (split, r.emulator, r.program)
        assert r.emulator["cube_fractals"] > 0
        # two L0A / L0B buffers, taken in turn: only each core's first allocation of its two
        # queues keeps a buffer, so the next base-K step's loads can overlap this Mmad (MTE1)
        assert r.emulator["l0_allocs"] - r.l0_switches <= 2 * r.block_dim
        if cin > 64:
            assert r.l0_switches > 0


def test_what_is_not_emitted_refuses():
    with pytest.raises(MegafuseError, match="Fixpipe epilogue"):
        emit_gemm(get_soc("ascend910b2"), 64, 32, 32, (1, 1), "relu6")
    with pytest.raises(MegafuseError, match="float16"):
        emit_dw(get_soc("ascend910b2"), DwShape(1, 16, 4, 4, 4, 4, 3, 3, 1, 1, 1, "relu", "float32"))
