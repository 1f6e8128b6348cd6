"""Per-channel PRelu as a fused activation (act1 after DW, act2 after PW): numerics against ONNX
Runtime on odd shapes (llvm and sim fuse it, fp32 and fp16), the lowered program and the cost
model that reads it (resident slope copies, the act instruction count); the Ascend C kernels of
every variant (vector PW, 310P cube, 910B MIX) on the emulator: `check -t ascend` vs ORT, GM bytes
and the act's vector instructions equal to the program's; npuir, whose emitter takes one constant
per activation, refuses it with its reason."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import fusion
from fusion.codegen.ascendc import emit_kernel
from fusion.cost import model_fused
from fusion.core.errors import MegafuseError
from fusion.core.ir import C0
from fusion.codegen.npuir.emit import emit_module
from factories import P310
from fusion.core.soc import get_soc
from schedules.plan import make_plan
from schedules.program import Copy
from schedules.lowering import build_program
from schedules.reference import reference_block
from schedules.workload import DwSepWorkload, TileConfig

from conftest import run_cli
from factories import check_ops_model as _check


def prelu_block(c=13, o=21, h=9, w=7, act1=True, act2=True, residual=False, seed=3):
    """DW 3x3 -> [PRelu(s1, (C,1,1))] -> PW 1x1 -> [PRelu(s2, (1,O,1,1))] [-> + x]; slopes on both
    sides of 1 and negative ones, so no max/min shortcut could pass."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "wd", "bd"], ["d"], group=c, kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    t = "d"
    if act1:
        nodes.append(helper.make_node("PRelu", [t, "s1"], ["da"]))
        t = "da"
    nodes.append(helper.make_node("Conv", [t, "wp", "bp"], ["p"], kernel_shape=[1, 1]))
    t = "p"
    if act2:
        nodes.append(helper.make_node("PRelu", [t, "s2"], ["pa"]))
        t = "pa"
    if residual:
        nodes.append(helper.make_node("Add", [t, "x"], ["y"]))
    else:
        nodes[-1].output[0] = "y"
    inits = dict(wd=rng.standard_normal((c, 1, 3, 3)), bd=rng.standard_normal(c),
                 wp=rng.standard_normal((o, c, 1, 1)) * 0.3, bp=rng.standard_normal(o),
                 s1=rng.uniform(-0.5, 2.0, (c, 1, 1)), s2=rng.uniform(-0.5, 2.0, (1, o, 1, 1)))
    g = helper.make_graph(nodes, "prelu_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


BLOCKS = {
    "both": dict(),
    "act1_only": dict(act2=False),
    "act2_only": dict(act1=False),
    "both_residual": dict(c=21, o=21, h=11, w=5, residual=True),
}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("target", ["llvm", "sim"])
@pytest.mark.parametrize("case", sorted(BLOCKS))
def test_fused_prelu_matches_ort(case, target, dtype):
    cm = _check(prelu_block(**BLOCKS[case]), target, dtype)
    assert len(cm.fused_blocks) == 1 and not cm.refusals
    wl = cm.fused_blocks[0].workload
    assert (wl.act1 == "prelu") == BLOCKS[case].get("act1", True)
    assert (wl.act2 == "prelu") == BLOCKS[case].get("act2", True)


# check -t ascend: the emitted kernel of each variant on the emulator, vs ORT; --pw-engine picks the
# variant (fp32: vector PW; fp16 cube: 310P's coupled core, 910B's MIX kernel)
ASCEND = [("ascend310p3", "float32", "vector", "vector-pw"), ("ascend310p3", "float16", "cube", "cube-pw"),
          ("ascend910b3", "float32", "vector", "vector-pw"), ("ascend910b3", "float16", "cube", "cube-pw-mix"),
          ("ascend910b3", "float16", "vector", "vector-pw")]


@pytest.mark.parametrize("soc, dtype, engine, variant", ASCEND)
def test_ascend_fuses_per_channel_prelu_and_checks(soc, dtype, engine, variant, tmp_path, capsys):
    m = prelu_block(**BLOCKS["both_residual"])
    cm = fusion.compile(m, target=f"ascend:{soc}", dtype=dtype)
    assert len(cm.fused_blocks) == 1 and not cm.refusals
    assert (cm.fused_blocks[0].workload.act1, cm.fused_blocks[0].workload.act2) == ("prelu", "prelu")
    p = tmp_path / "prelu.onnx"
    onnx.save(m, p)
    code, out, err = run_cli(capsys, "check", str(p), "-t", f"ascend:{soc}", "--dtype", dtype,
                             "--pw-engine", engine, "--json", "--no-fallback")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["passed"] is True
    (blk,) = rep["blocks"]
    assert blk["variant"] == variant
    # the slopes are read once per core, like the biases: the emulator's GM bytes are the program's
    assert blk["gm_bytes_match"] is True
    assert blk["counters"]["gm_read_bytes"] == blk["cost_model"]["gm_read_bytes"]


def test_prelu_act1_only_on_ascend_fuses_the_rest():
    """DW -> PRelu(one slope) -> PW -> PRelu(per channel): leakyrelu after DW, prelu after PW."""
    m = prelu_block(act2=True)
    # make act1 a single-slope PRelu (leakyrelu in the kernel)
    for t in m.graph.initializer:
        if t.name == "s1":
            t.CopyFrom(numpy_helper.from_array(np.full((13, 1, 1), 0.3, np.float32), "s1"))
    cm = _check(m, "ascend:ascend310p3")
    assert len(cm.fused_blocks) == 1 and cm.fused_blocks[0].workload.act1 == "leakyrelu(0.3)"
    assert cm.fused_blocks[0].workload.act2 == "prelu"


# --- plan, program, cost model ---------------------------------------------------------------
WL = DwSepWorkload(1, 24, 40, 6, 6, act1="prelu", act2="prelu", dtype="float16")
RELU = DwSepWorkload(1, 24, 40, 6, 6, act1="relu", act2="relu", dtype="float16")
TILE = TileConfig(3, 6, 1, 0, True, "vector", 2)


def test_plan_and_program_carry_the_slopes():
    plan, base = make_plan(WL, TILE, P310), make_plan(RELU, TILE, P310)
    c1, co1 = WL.c1, WL.co1
    assert plan.buffer("s_dw").shape == (c1, C0) and plan.buffer("s_pw").shape == (co1, C0)
    assert plan.ub_bytes > base.ub_bytes
    prog, prog0 = build_program(plan), build_program(base)
    pro = prog.cores[0].prologue
    assert Copy("weights", "in", "s_dw", "s_dw", c1 * C0 * 4, 1) in pro
    assert Copy("weights", "in", "s_pw", "s_pw", co1 * C0 * 4, 1) in pro
    acts = {(s.op, s.instrs) for s in prog.steps("core", 0) if getattr(s, "op", "").startswith("act")}
    acts0 = {(s.op, s.instrs) for s in prog0.steps("core", 0) if getattr(s, "op", "").startswith("act")}
    # prelu: Mins into scratch, Mul by the slopes, Maxs, Add per channel block (the slope vector is
    # read like the bias: one pixel a repeat); relu: one instruction over the step's blocks
    assert dict(acts0) == {"act1": 1, "act2": 1}
    assert dict(acts) == {"act1": 4 * plan.cib, "act2": 4 * plan.cob} and plan.cib == 2
    cores = len(prog.cores)
    extra = cores * (c1 + co1) * C0 * 4
    assert prog.counts["gm_read_bytes"] - prog0.counts["gm_read_bytes"] == extra
    # the cost model reads the program: the same extra bytes, and more vector time
    cost, cost0 = model_fused(plan), model_fused(base)
    assert cost.gm_read_bytes - cost0.gm_read_bytes == extra
    assert cost.time_us > cost0.time_us


def test_reference_block_applies_per_channel_slopes():
    rng = np.random.default_rng(0)
    wl = DwSepWorkload(1, 3, 2, 4, 4, act1="prelu", act2="prelu")
    d = {"x": rng.standard_normal((1, 3, 4, 4)), "w_dw": np.zeros((3, 1, 3, 3)), "b_dw": np.array([-1.0, -2.0, 3.0]),
         "w_pw": np.eye(2, 3).reshape(2, 3, 1, 1), "b_pw": np.zeros(2),
         "s_dw": np.array([0.5, -1.0, 7.0]), "s_pw": np.array([2.0, 0.25])}
    y = reference_block(wl, d)
    # DW output is the bias: (-0.5, 2.0, 3.0) after act1; PW picks channels 0 and 1; act2 (2.0, 0.25)
    np.testing.assert_allclose(y[0, :, 0, 0], [-1.0, 2.0])


def test_npuir_refuses_per_channel_prelu_and_ascend_c_takes_the_slopes():
    plan = make_plan(WL, TILE, P310)
    ek = emit_kernel(plan, "blk")
    assert [a.name for a in ek.args][3:7] == ["w_pw", "b_pw", "s_dw", "s_pw"]
    assert "GM_ADDR b_pw, GM_ADDR s_dw, GM_ADDR s_pw, GM_ADDR y" in ek.source
    assert ek.source.count("PreluBlock(") == 3   # the helper, act1 after the DW bias, act2 per block
    with pytest.raises(MegafuseError, match="not emitted in AscendNPU IR"):
        emit_module(plan, 0, P310.name)


# the act's vector instructions as the kernel issues them (emulator) == the program's: each
# variant's kernel with prelu minus the same kernel with no activation (which issues none), on
# ragged channel blocks; 16x17 tiles (272 pixels) need two repeats' worth per block
ACT_COUNTS = [("ascend910b2", "float16", TileConfig(16, 17, 2, 2, False), 37, 41, 16, 17, False),
              ("ascend310p3", "float16", TileConfig(3, 5, 2, 2, True, "cube"), 37, 41, 7, 9, False),
              ("ascend910b2", "float16", TileConfig(3, 5, 2, 2, True, "cube"), 37, 37, 7, 9, True)]


def _emulated(soc, dtype, tile, c, o, h, w, res, act):
    from fusion.verify.emu_run import build_emitted, run_emitted
    from fusion.tuning.evaluators import block_data, from_blocked, reference_block, to_blocked
    from schedules.build import fused_params

    wl = DwSepWorkload(1, c, o, h, w, act1=act, act2=act, residual=res, dtype=dtype)
    plan = make_plan(wl, tile, get_soc(soc))
    d = block_data(wl, seed=1)
    slopes = [k for k in ("s_dw", "s_pw") if k in d]
    arrays = [to_blocked(d["x"], dtype)] + fused_params(d["w_dw"], d["b_dw"], d["w_pw"], d["b_pw"], dtype,
                                                        [d[k] for k in slopes])
    names = ["x", "w_dw", "b_dw", "w_pw", "b_pw"] + slopes
    if res:
        names, arrays = names + ["res"], arrays + [to_blocked(d["x"], dtype)]
    ek = emit_kernel(plan, "blk")
    y, counters, _ = run_emitted(ek, build_emitted(ek), dict(zip(names, arrays)))
    ref = reference_block(wl, d)
    err = np.abs(from_blocked(y.astype(np.float64), o) - ref).max() / np.abs(ref).max()
    return plan, err, counters, build_program(plan).counts


@pytest.mark.parametrize("soc, dtype, tile, c, o, h, w, res", ACT_COUNTS)
def test_emitted_prelu_instructions_and_gm_bytes_equal_the_program(soc, dtype, tile, c, o, h, w, res):
    plan, err, emu, prog = _emulated(soc, dtype, tile, c, o, h, w, res, "prelu")
    _, _, emu0, prog0 = _emulated(soc, dtype, tile, c, o, h, w, res, "none")
    assert err < (1e-5 if dtype == "float32" else 2e-3), err
    assert plan.cib > 1 and plan.cob > 1      # several channel blocks per step: per-block slopes
    assert (emu["gm_read_bytes"], emu["gm_write_bytes"]) == (prog["gm_read_bytes"], prog["gm_write_bytes"])
    act = emu["vector_instructions"] - emu0["vector_instructions"]
    assert act == prog["vector_instrs"] - prog0["vector_instrs"] > 0


def test_package_test_script_goldens_per_channel_prelu(tmp_path):
    """The op package's generated *_test.py: gen writes random slopes with the inputs, its NumPy
    golden applies them, the emulated kernel run passes verify (and a slope-less golden would not)."""
    import importlib.util

    from fusion.verify.emu_run import build_emitted, run_emitted
    from fusion.codegen.ascendc.emit_host import test_script

    wl = DwSepWorkload(1, 21, 37, 7, 9, act1="prelu", act2="prelu", dtype="float16")
    ek = emit_kernel(make_plan(wl, TileConfig(3, 5, 2, 2, True, "cube"), P310), "blk")
    path = tmp_path / "blk_test.py"
    path.write_text(test_script(ek))
    spec = importlib.util.spec_from_file_location("blk_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data = tmp_path / "data"
    mod.gen(str(data), 0)
    arrays = {a.name: np.fromfile(data / f"{a.name}.bin", dtype=a.dtype).reshape(a.shape)
              for a in ek.args if a.role in ("input", "weight")}
    assert {"s_dw", "s_pw"} <= set(arrays)
    y, _, _ = run_emitted(ek, build_emitted(ek), arrays)
    y.tofile(data / "y.bin")
    assert mod.verify(str(data)) == 0
    mod.ACT1 = mod.ACT2 = "relu"   # the same run against a golden without the slopes fails
    mod.reference(**{k: v for k, v in arrays.items()}).tofile(data / "golden.bin")
    assert mod.verify(str(data)) == 1
