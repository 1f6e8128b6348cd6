"""AscendNPU IR emission (target npuir) checked by the vendor's BiShengIR compiler.

* every fused block of MobileNetV1, MobileNetV2 (fp16, default tiles) and the odd shapes reaches
  the hivmc hand-off on Ascend910B2 with a vendor UB peak <= the plan's UB bytes; forced tiles
  cover fp32, residual, hardswish, ragged channel blocks and the cob = 1 scratch layouts (the
  tuned-tile sweep is benchmarks/npuir_sweep.py: its tune searches are too slow for the suite)
* the vendor's device spec (#hacc.target_device_spec) agrees with fusion/core/soc.py
* `check -t npuir`: a rejected module exits 1 quoting the vendor's diagnostic on one line
Vendor compiles take 0.1-0.4 s per module here.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import onnx
import pytest

import models
from conftest import run_cli
from fusion.driver.compiler import TileOverride
from fusion.core.errors import MegafuseError
from fusion.codegen.npuir.check import BlockCheck, check_plans
from fusion.codegen.npuir.emit import dw_chunk, dw_lane_weights, emit_module, pw_mac, ub_layouts
from fusion.codegen.npuir.loops import loop_nest
from fusion.driver.plans import block_plans
from fusion.codegen.npuir.vendor import UBPlacement, VendorRun, parse_device_spec, parse_placements, run_vendor
from fusion.core.soc import get_soc

HAVE_VENDOR = importlib.util.find_spec("ascendnpuir") is not None
vendor = pytest.mark.skipif(not HAVE_VENDOR, reason="ascendnpu-ir not installed (pip install -e '.[npuir]')")

ODD = [b["name"] for b in models.ODD_BLOCKS]


def _plans(name, dtype="float16", soc="910b2", **kw):
    return block_plans(models.build(name, **kw), f"npuir:{soc}", dtype=dtype)


def _assert_all_pass(rows):
    bad = [r.describe() for r in rows if not r.passed]
    assert not bad, "\n".join(bad)
    assert all(r.vendor_ub <= r.plan_ub for r in rows)


# --- the emitter against its plan (no vendor needed) ----------------------------------------
@pytest.mark.parametrize("name", ["mobilenet_v2", *ODD])
def test_every_plan_buffer_is_allocated_with_the_plans_bytes(name):
    for plan in _plans(name):
        layouts = ub_layouts(loop_nest(plan))
        assert set(layouts) == {b.name for b in plan.kernel_buffers if b.scope == "UB"}
        for b in plan.kernel_buffers:
            assert layouts[b.name].nbytes == b.bytes_per_copy * b.copies, b.name


@pytest.mark.parametrize("name, tile, lanes, chunk, mac", [
    ("odd_h19_s2_24_40", TileOverride(1, 1, 1, 1), True, (1, 1), (1, False)),
    ("odd_k5_32_48_h28", TileOverride(3, 7, 1, 0), False, (1, 7), (1, True)),
    ("odd_c40_56_h28", TileOverride(1, 2, 3, 1), False, (1, 2), (1, True)),
    ("odd_c40_56_h28", TileOverride(4, 4, 2, 0), False, (4, 4), (2, True)),
])
def test_scratch_layouts_the_forced_tiles_exercise(name, tile, lanes, chunk, mac):
    ln = loop_nest(block_plans(models.build(name), "npuir:910b2", dtype="float16", tile=tile)[0])
    assert (dw_lane_weights(ln), dw_chunk(ln), pw_mac(ln)) == (lanes, chunk, mac)


def test_module_names_come_from_the_block_index():
    plan = _plans("odd_c40_56_h28")[0]
    text = emit_module(plan, 7, plan.soc.name)
    assert "func.func @dwsep_block7(" in text and 'hacc.target<"Ascend910B2">' in text
    assert "dw_fused" not in text   # the node's name never reaches the module


def test_npuir_refuses_socs_the_vendor_has_no_target_for(capsys, block_path):
    code, out, err = run_cli(capsys, "check", block_path, "-t", "npuir:310p3")
    assert code == 2 and err.startswith("megafuse: error: ") and "target 'npuir' supports" in err and err.count("\n") == 1


def test_a_cube_pw_plan_is_refused_in_one_line(capsys, tmp_path):
    path = tmp_path / "odd.onnx"
    onnx.save(models.build("odd_c40_56_h28"), path)
    code, out, err = run_cli(capsys, "compile", str(path), "-t", "npuir", "--dtype", "float16",
                             "--pw-engine", "cube", "--no-db", "-o", str(tmp_path / "o"))
    assert code == 2 and err.startswith("megafuse: error: target npuir emits PW on the vector unit only")
    assert err.count("\n") == 1


def test_plan_memory_parser_reads_multi_buffer_addresses():
    log = ("// -----// IR Dump After PlanMemory (hivm-plan-memory) //----- //\n"
           "  %c4096_i64 = arith.constant 4096 : i64\n  %c0_i64 = arith.constant 0 : i64\n"
           "  %0 = hivm.hir.pointer_cast(%c0_i64, %c4096_i64) : memref<16x16xf16, #hivm.address_space<ub>>\n"
           "  %1 = hivm.hir.pointer_cast(%c0_i64) : memref<8x8xf32, #hivm.address_space<cbuf>>\n")
    run = VendorRun(True, "", parse_placements(log))
    assert run.placements == (UBPlacement((0, 4096), 512),)   # L1 (cbuf) is not UB
    assert run.ub_peak == 4096 + 512


def test_a_vendor_peak_above_the_plan_fails():
    run = VendorRun(True, "", (UBPlacement((0,), 1000),))
    row = BlockCheck(0, "wl", "tile", 992, run)
    assert not row.passed and "FAIL: the vendor needs more UB" in row.describe()
    assert BlockCheck(0, "wl", "tile", 1000, run).passed


def test_missing_vendor_compiler_is_a_clear_error(monkeypatch):
    from fusion.codegen.npuir import vendor as v

    monkeypatch.setattr(v.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MegafuseError, match=r"pip install -e '\.\[npuir\]'"):
        v.compiler_path()


# --- the vendor's pipeline --------------------------------------------------------------------
@vendor
@pytest.mark.parametrize("name", ["mobilenet_v1", "mobilenet_v2", *ODD])
def test_every_block_reaches_the_hivmc_handoff_within_the_plans_ub(name):
    plans = _plans(name)
    rows = check_plans(plans)
    assert rows
    _assert_all_pass(rows)
    for plan, row in zip(plans, rows):   # the vendor placed exactly the plan's UB buffers
        assert len(row.run.placements) == sum(b.scope == "UB" for b in plan.kernel_buffers)


@vendor
@pytest.mark.parametrize("name, dtype, tile, kw", [
    ("odd_c40_56_h28", "float32", TileOverride(5, 3, 2, 2, False), {}),          # fp32, ragged cib/cob
    ("odd_h19_s2_24_40", "float16", TileOverride(1, 1, 1, 1), {}),             # cob 1, 1-pixel tile
    ("odd_c40_56_h28", "float16", TileOverride(1, 2, 3, 1), {}),               # PW MAC per block
    ("odd_k5_32_48_h28", "float16", TileOverride(3, 7, 1, 0), {}),             # cob 1: row by row
    ("dwsep", "float16", TileOverride(4, 4, 2, 0), {"cin": 24, "cout": 24, "h": 9, "residual": True,
                                                   "act1": "hardswish", "act2": "hardswish", "opset": 14}),
])
def test_forced_tiles_reach_the_handoff(name, dtype, tile, kw):
    plans = block_plans(models.build(name, **kw), "npuir:910b2", dtype=dtype, tile=tile)
    rows = check_plans(plans)
    _assert_all_pass(rows)


@vendor
@pytest.mark.parametrize("soc", ["ascend910b2", "ascend910b3"])
def test_vendor_device_spec_agrees_with_soc_table(tmp_path, soc):
    plan = _plans("odd_c40_56_h28", soc=soc.removeprefix("ascend"))[0]
    path = tmp_path / "k.mlir"
    path.write_text(emit_module(plan, 0, soc))
    spec = run_vendor(path, soc).device_spec
    s = get_soc(soc)
    bits = 8
    assert spec["CUBE_CORE_COUNT"] == s.cube_cores and spec["AI_CORE_COUNT"] == s.cube_cores
    assert spec["VECTOR_CORE_COUNT"] == s.vector_cores
    assert spec["UB_SIZE"] == s.ub_bytes * bits
    assert spec["L1_SIZE"] == s.l1_bytes * bits
    assert (spec["L0A_SIZE"], spec["L0B_SIZE"], spec["L0C_SIZE"]) == \
        (s.l0a_bytes * bits, s.l0b_bytes * bits, s.l0c_bytes * bits)
    assert spec["UB_ALIGN_SIZE"] == spec["L1_ALIGN_SIZE"] == s.ub_align * bits
    # L0C is aligned to one 16 x 16 fp16 fractal
    assert spec["L0C_ALIGN_SIZE"] == s.cube_fractal[0] * s.cube_fractal[2] * 16


@vendor
def test_device_spec_parser_reads_bits():
    text = ('#hacc.target_device_spec<#dlti.dl_entry<"UB_SIZE", 1572864 : i32>, '
            '#dlti.dl_entry<"VECTOR_CORE_COUNT", 48 : i32>>>, x')
    assert parse_device_spec(text) == {"UB_SIZE": 1572864, "VECTOR_CORE_COUNT": 48}


@vendor
def test_check_cli_prints_the_ub_ratio_per_block(capsys, tmp_path):
    path = tmp_path / "odd.onnx"
    onnx.save(models.build("odd_h19_s2_24_40"), path)
    code, out, err = run_cli(capsys, "check", str(path), "-t", "npuir", "--dtype", "float16", "--no-db")
    assert code == 0, out + err
    assert "vendor UB peak" in out and " ok (" in out
    assert out.count("PASS 1 fused blocks through bishengir-compile --target=Ascend910B2") == 1
    assert "CPU runner" in out
    code, out, err = run_cli(capsys, "check", str(path), "-t", "npuir", "--dtype", "float16", "--no-db",
                             "--json")
    rep = json.loads(out)
    assert code == 0 and rep["passed"] and rep["vendor_target"] == "Ascend910B2"
    (blk,) = rep["blocks"]
    assert blk["reached_hivmc_handoff"] and blk["vendor_ub_peak"] <= blk["plan_ub"]


@vendor
def test_a_rejected_module_exits_1_with_the_vendors_diagnostic(capsys, tmp_path, monkeypatch):
    import fusion.codegen.npuir.check as chk

    def broken(plan, index, soc):
        return emit_module(plan, index, soc).replace("hivm.hir.vadd ins(", "hivm.hir.vadd_nope ins(", 1)

    monkeypatch.setattr(chk, "emit_module", broken)
    path = tmp_path / "odd.onnx"
    onnx.save(models.build("odd_h19_s2_24_40"), path)
    code, out, err = run_cli(capsys, "check", str(path), "-t", "npuir", "--dtype", "float16", "--no-db")
    assert code == 1
    line = next(ln for ln in out.splitlines() if "REJECTED" in ln)
    assert "REJECTED by bishengir-compile: npuir_block0.mlir:" in line and "error:" in line
    assert "vadd_nope" in line and str(tmp_path) not in line


@vendor
def test_compile_writes_one_module_per_block(capsys, tmp_path):
    path = tmp_path / "odd.onnx"
    onnx.save(models.build("odd_batch2_32_64_h28"), path)
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, "compile", str(path), "-t", "npuir:910b3", "--no-db", "-o", str(out_dir))
    assert code == 0, err
    mods = sorted(p.name for p in Path(out_dir).glob("*.mlir"))
    assert mods == ["npuir_block0.mlir"]
    assert run_vendor(out_dir / mods[0], "ascend910b3").reached_handoff


# --- the modules' semantics: executed by tests/npuir_interp.py, compared with ONNX Runtime ----
def _interpreted(plan, index, mutate=lambda text: text):
    """A stand-in for the fused step's LLVM kernel that runs the emitted module instead."""
    import numpy as np
    from npuir_interp import run

    ln = loop_nest(plan)
    text = mutate(emit_module(plan, index, plan.soc.name))

    def func(*args):
        x, wd, bd, wpw, bpw, *rest = [a.numpy() for a in args[:-1]]
        out = args[-1]
        pt, pl, pb, pr = ln.pads
        n, c1, h, w, c0 = x.shape
        xp = np.zeros((n, c1, h + pt + pb, w + pl + pr, c0), x.dtype)
        xp[:, :, pt:pt + h, pl:pl + w] = x
        gm = {"x": xp.reshape(n * c1, *xp.shape[2:]), "w_dw": wd, "b_dw": bd.reshape(-1, 1, 1, c0),
              "w_pw": wpw.reshape(ln.co1, ln.c1 * c0, 1, c0), "b_pw": bpw.reshape(-1, 1, 1, c0),
              "y": np.full((n * ln.co1, ln.out_h, ln.out_w, c0), np.nan, x.dtype)}
        if rest:
            gm["res"] = rest[0].reshape(n * c1, h, w, c0)
        run(text, gm, ln.cores)
        assert not np.isnan(gm["y"]).any()    # every output element written, no NaN read
        out.copyfrom(gm["y"].reshape(out.shape))
    return func


@pytest.mark.parametrize("kw, dtype, tile", [
    ({"cin": 24, "cout": 40, "h": 11, "stride": 2, "batch": 2}, "float16", None),
    ({"cin": 40, "cout": 56, "h": 7, "w": 9}, "float32", TileOverride(2, 4, 2, 2, False)),
    ({"cin": 24, "cout": 24, "h": 6, "residual": True, "act1": "hardswish", "act2": "hardswish",
      "opset": 14}, "float16", TileOverride(4, 4, 2, 0)),
    ({"cin": 24, "cout": 40, "h": 5, "kernel": 5, "act1": "relu6", "act2": "none"}, "float16",
     TileOverride(1, 1, 1, 1)),
    ({"cin": 40, "cout": 56, "h": 5}, "float16", TileOverride(1, 2, 3, 1)),
])
def test_emitted_module_matches_onnxruntime(kw, dtype, tile):
    """The emitted module, run by the NumPy interpreter in place of the LLVM kernel, against ORT."""
    res = _check_interpreted(models.build("dwsep", **kw), dtype, tile)
    assert res.passed, res.to_json()


def test_the_interpreted_check_fails_on_a_wrong_module():
    """A module whose ReLU clamps from above instead must not pass."""
    model = models.build("dwsep", cin=24, cout=40, h=7)
    res = _check_interpreted(model, "float32", None,
                             mutate=lambda t: t.replace("hivm.hir.vmax", "hivm.hir.vmin", 1))
    assert not res.passed


def _check_interpreted(model, dtype, tile, mutate=lambda text: text):
    from dataclasses import replace

    from fusion.verify.check import compare, ort_reference, random_inputs
    from fusion.core.tolerance import TOLERANCE
    from fusion.driver.compiler import compile_model
    from fusion.verify.sensitivity import input_sensitivity

    cm = compile_model(model, target="npuir:910b2", dtype=dtype, tile=tile)
    fused = [i for i, st in enumerate(cm.program.steps) if st.kind == "fused"]
    assert len(fused) == len(cm.fused_blocks) == 1
    i = fused[0]
    cm.program.steps[i] = replace(cm.program.steps[i],
                                  func=_interpreted(cm.fused_blocks[0].plan, 0, mutate))
    feeds = random_inputs(cm, seed=3)
    ref = ort_reference(model, feeds)
    sens = input_sensitivity(lambda f: ort_reference(model, f), cm, 3, ref)
    return compare(cm.run(feeds), ref, TOLERANCE[dtype], 3, sens)
