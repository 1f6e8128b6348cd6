"""Squeeze-and-excitation in the two-phase Ascend C kernel (fusion/codegen/ascendc/emit_se.py) on the
emulator: models.mbconv_se on odd shapes (24 / 21 channels, 9x7, stride 2, batch 1 and 2,
SiLU/Sigmoid and HardSwish/HardSigmoid, residual) against ONNX Runtime through `check -t ascend`,
on 910B2 (MIX, hard SyncAll) and 310P3 (soft SyncAll); the emulator's counters (GM bytes, vector
instructions and repeats, cube fractals) equal the lowered program's, SE steps included; the op
package's test script goldens the SE; SoCs the emitter does not cover keep the one-line refusal."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import models
from fusion.codegen.ascendc import emit_kernel
from fusion.codegen.ascendc.emit_host import test_script as package_test_script
from fusion.driver.compiler import compile_model
from fusion.verify.ascend_check import check_ascend
from fusion.verify.emu_run import build_emitted, run_emitted
from schedules.program_twophase import build_twophase, phase
from schedules.twophase import res_in_cube

F16 = "float16"
# (model kwargs, soc): every case is one fused SE block with a ragged channel tail
CASES = [
    (dict(cin=24, cout=40, h=9, w=7, act="silu", se_act="silu", gate="sigmoid"), "ascend310p3"),
    (dict(cin=24, cout=24, h=9, w=7, act="hardswish", se_act="relu", gate="hardsigmoid", batch=2, residual=True),
     "ascend310p3"),
    (dict(cin=24, cout=24, h=9, w=7, act="silu", se_act="silu", gate="sigmoid", batch=2, residual=True),
     "ascend910b2"),   # residual after a linear projection: it joins the GEMM's K (twophase.res_in_cube)
    (dict(cin=21, cout=19, h=9, w=7, stride=2, act="hardswish", se_act="relu", gate="hardsigmoid", se_mid=5),
     "ascend910b2"),
]
KEYS = {"gm_read_bytes": "gm_read_bytes", "gm_write_bytes": "gm_write_bytes", "vector_instructions": "vector_instrs",
        "vector_repeats": "vector_repeats", "cube_fractals": "cube_fractals"}


@pytest.fixture(scope="module")
def checked():
    out = []
    for kw, soc in CASES:
        m = models.mbconv_se(**kw)
        cm = compile_model(m, target=f"ascend:{soc}", dtype=F16)
        out.append((m, cm, check_ascend(cm, m, seed=3)))
    return out


@pytest.mark.parametrize("i", range(len(CASES)))
def test_se_block_matches_ort_and_counts_equal_the_program(checked, i):
    _m, cm, res = checked[i]
    (blk,) = cm.fused_blocks
    assert blk.workload.se and blk.plan.two_phase and blk.plan.soc.name == CASES[i][1]
    assert res.passed and res.sensitivity > 0.1, res   # vs ORT on the whole model, and it moves with x
    (b,) = res.blocks
    assert b.max_rel <= 2e-2
    prog = build_twophase(blk.plan)
    assert [ph.name for ph in prog.phases][:3] == ["dw", "se", "gemm"]
    # an AIV epilogue phase only for a residual after an activation (none here: MBConv projects linearly)
    assert len(prog.phases) == (3 if blk.plan.soc.coupled or not blk.workload.residual
                                or res_in_cube(blk.workload, blk.plan.soc) else 4)
    assert res_in_cube(blk.workload, blk.plan.soc) == (blk.workload.residual and not blk.plan.soc.coupled)
    want = prog.counts
    assert {k: b.counters[k] for k in KEYS} == {k: want[v] for k, v in KEYS.items()}
    # the SE steps are in those counts: the SE phase scales every channel block of every image once
    wl = blk.workload
    se = phase(prog, "se")
    scaled = sum(s.nbytes for u in se.units for it in u for s in it
                 if getattr(s, "gm", None) == "dw_ws" and s.direction == "out")
    assert scaled == wl.batch * wl.c1 * wl.out_height * wl.out_width * 16 * 2


def test_310p_kernel_adds_atomically_and_syncs_on_both_sides_of_the_se_phase(checked):
    _m, cm, _res = checked[0]
    ek = emit_kernel(cm.fused_blocks[0].plan, "blk")
    assert "SetAtomicAdd<float>()" in ek.source and "SePhase(GetBlockIdx());" in ek.source
    assert ek.source.count("SyncAll(syncGm, syncUbBuf.Get<int32_t>())") == 2   # soft, both sides of the SE phase
    assert ek.workspace_zeroed_bytes == 8 * 32 + cm.fused_blocks[0].workload.batch * 8 * 4   # flags + se_ws


def test_package_test_script_goldens_the_se(checked, tmp_path):
    """The op package's *_test.py: gen writes the SE operands in the kernel's layouts, its NumPy
    golden applies the SE, the emulated kernel passes verify; a golden without the SE fails."""
    _m, cm, _res = checked[2]   # 910B2, batch 2
    ek = emit_kernel(cm.fused_blocks[0].plan, "blk")
    path = tmp_path / "blk_test.py"
    path.write_text(package_test_script(ek))
    spec = importlib.util.spec_from_file_location("blk_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data = tmp_path / "data"
    mod.gen(str(data), 0)
    arrays = {a.name: np.fromfile(data / f"{a.name}.bin", dtype=a.dtype).reshape(a.shape)
              for a in ek.args if a.role in ("input", "weight")}
    assert {"w_se1", "b_se1", "w_se2", "b_se2"} <= set(arrays)
    y, _, _ = run_emitted(ek, build_emitted(ek), arrays)
    y.tofile(data / "y.bin")
    assert mod.verify(str(data)) == 0
    plain = {k: v for k, v in arrays.items() if not k.endswith(("se1", "se2"))}
    mod.reference(**plain).tofile(data / "golden.bin")
    assert mod.verify(str(data)) == 1


def test_a_soc_without_the_se_kernel_keeps_the_refusal():
    cm = compile_model(models.mbconv_se(**CASES[0][0]), target="ascend:ascend910b3", dtype=F16)
    assert not cm.fused_blocks
    assert any("writes the SE phase for ascend310p3, ascend910b2 only, not ascend910b3" in r.reason
               for r in cm.refusals)
