"""The float32 check tolerance (fusion/check.fp32_tolerance, fusion/verify/fp32_bound.py): scaled by how far
modeled fp32 rounding moves the output (reduction lengths x magnitudes), so an output that is a
small difference of large terms gets the tolerance its honest rounding needs, while a broken kernel
on a well-conditioned model still fails; the check line states the shift."""

import json

import numpy as np
import onnx
import pytest
from conftest import run_cli
from onnx import TensorProto, helper, numpy_helper

import models
from fusion.verify.check import check_model, fp32_tolerance, random_inputs
from fusion.core.tolerance import TOLERANCE
from fusion.driver.compiler import compile_model
from fusion.verify.fp32_bound import fp32_rounding_shift, perturbed_model
from fusion.verify.reference import run_ort

C, CO, H = 64, 48, 9


def cancelling(delta: float, scale: float = 30.0, seed: int = 0):
    """y = PW(relu(DW(x))) - PW'(relu(DW(x))), PW' = PW (1 + delta noise): terms of size ~scale,
    an output ~delta x scale. Returns the model and its weights (for a float64 reference)."""
    rng = np.random.default_rng(seed)
    wd = (rng.normal(0, 1, (C, 1, 3, 3)) * scale).astype(np.float32)
    wp = rng.normal(0, 1, (CO, C, 1, 1)).astype(np.float32)
    wp2 = (wp * (1 + delta * rng.normal(0, 1, wp.shape))).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "wd"], ["d"], name="dw", group=C, kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Relu", ["d"], ["a"], name="act"),
             helper.make_node("Conv", ["a", "wp"], ["p1"], name="pw1", kernel_shape=[1, 1]),
             helper.make_node("Conv", ["a", "wp2"], ["p2"], name="pw2", kernel_shape=[1, 1]),
             helper.make_node("Sub", ["p1", "p2"], ["y"], name="diff")]
    g = helper.make_graph(nodes, "cancel", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, H])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, CO, H, H])],
                          [numpy_helper.from_array(v, k) for k, v in dict(wd=wd, wp=wp, wp2=wp2).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, (wd, wp, wp2)


def _float64(x, wd, wp, wp2):
    x = x.astype(np.float64)[0]
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    d = sum(xp[:, i:i + H, j:j + H] * wd[:, 0, i, j, None, None] for i in range(3) for j in range(3))
    a = np.maximum(d, 0)
    return np.einsum("oc,chw->ohw", wp[:, :, 0, 0].astype(np.float64) - wp2[:, :, 0, 0], a)[None]


def test_honest_fp32_error_of_a_cancelling_output_exceeds_the_bare_1e4_and_stays_in_the_bound():
    """ORT's own float32 result, against float64, is off by more than 1e-4 of this output's range:
    the old bare tolerance would fail a correct kernel; the modeled shift covers the real error."""
    m, w = cancelling(1e-5)
    x = np.random.default_rng(1).standard_normal((1, C, H, H)).astype(np.float32)
    ref32 = run_ort(m, {"x": x})["y"]
    exact = _float64(x, *w)
    real = np.abs(ref32 - exact).max() / np.abs(exact).max()
    shift, terms = fp32_rounding_shift(m, {"x": x}, {"y": exact})
    assert real > TOLERANCE["float32"]
    assert real < shift and terms == C
    assert fp32_tolerance(shift) == 2 * shift


def test_tolerance_scales_with_the_cancellation_and_the_kernel_passes():
    tols = []
    for delta in (1e-3, 1e-5):
        m, _ = cancelling(delta)
        cm = compile_model(m, target="llvm")
        res = check_model(m, cm, seed=0)
        assert res.passed and res.fp32_terms == C
        tols.append(res.tolerance)
    assert tols[1] > 50 * tols[0] > 50 * TOLERANCE["float32"]


def test_well_conditioned_model_keeps_1e4_and_a_broken_kernel_fails(tmp_path):
    m = models.dwsep_block(40, 56, 11, seed=2)
    cm = compile_model(m, target="llvm")
    ok = check_model(m, cm, seed=0)
    assert ok.passed and ok.tolerance == TOLERANCE["float32"] and ok.fp32_shift < TOLERANCE["float32"] / 2
    # a deliberately broken kernel: the fused step's PW bias off by 1e-3 of the output range in one channel
    i = next(k for k, st in enumerate(cm.program.steps) if st.kind == "fused")
    st = cm.program.steps[i]
    b_pw = st.params[4].numpy().copy()
    b_pw.reshape(-1)[7] += 1e-3 * float(np.abs(cm.run(random_inputs(cm, 0))["y"]).max())
    st.params[4].copyfrom(b_pw)   # in place: the program binds its argument lists once
    bad = check_model(m, cm, seed=0)
    assert not bad.within_tolerance and 5e-4 < bad.max_rel < 2e-3


def test_perturbed_model_covers_every_float_node():
    m = models.build("se_classifier")
    pm, longest = perturbed_model(m)
    ops = [n.op_type for n in pm.graph.node]
    assert ops.count("RandomUniformLike") == sum(1 for n in m.graph.node if n.op_type not in ("Constant", "Shape"))
    assert longest >= 64


def test_check_line_states_the_shift(capsys, tmp_path):
    p = tmp_path / "b.onnx"
    onnx.save(models.dwsep_block(24, 40, 9), p)
    code, out, _ = run_cli(capsys, "check", str(p), "-t", "llvm")
    assert code == 0 and "fp32 rounding (sqrt(n) u sum|terms|, reductions up to 24 terms) shifts the reference by" in out


@pytest.mark.parametrize("delta", [1e-5])
def test_cancelling_output_passes_the_cli(capsys, tmp_path, delta):
    p = tmp_path / "c.onnx"
    onnx.save(cancelling(delta)[0], p)
    code, out, _ = run_cli(capsys, "check", str(p), "-t", "sim:ascend310p3", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["passed"] and doc["tolerance"] > 1e-2 and doc["fp32_terms"] == C
