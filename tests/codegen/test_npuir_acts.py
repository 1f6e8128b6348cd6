"""Every activation of the table in the AscendNPU IR emitter (target npuir): the emitted module, run
by the NumPy interpreter of its ops (tests/npuir_interp.py), against ONNX Runtime per activation;
bishengir-compile takes each module to the hivmc hand-off; an activation the emitter cannot lower
is refused with its reason, never skipped."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from fusion.driver.compiler import TileOverride, compile_model
from fusion.core.errors import MegafuseError
from fusion.codegen.npuir.check import check_plans
from fusion.codegen.npuir.emit import act_refusal, emit_module
from fusion.core.soc import get_soc
from schedules.activations import PARAMETRIC, PER_CHANNEL, PLAIN, SCRATCH_PARTS
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig

from test_npuir import _assert_all_pass, _check_interpreted, vendor


def _act_nodes(act: str, x: str, out: str, tag: str) -> list:
    """ONNX nodes computing `act` (the table's spelling) from x into out."""
    kind, _, rest = act.partition("(")
    p = [float(v) for v in rest.rstrip(")").split(",")] if rest else []
    if kind == "relu":
        return [helper.make_node("Relu", [x], [out])]
    if kind == "hardswish":
        return [helper.make_node("HardSwish", [x], [out])]
    if kind == "silu":   # as torch.onnx.export writes nn.SiLU
        return [helper.make_node("Sigmoid", [x], [f"{tag}_s"]), helper.make_node("Mul", [x, f"{tag}_s"], [out])]
    if kind == "gelutanh":   # GELU(approximate='tanh') as torch.onnx.export writes it before opset 20
        return [helper.make_node("Mul", [x, x], [f"{tag}_sq"]), helper.make_node("Mul", [x, f"{tag}_sq"], [f"{tag}_cu"]),
                helper.make_node("Mul", [f"{tag}_kappa", f"{tag}_cu"], [f"{tag}_kc"]),
                helper.make_node("Add", [x, f"{tag}_kc"], [f"{tag}_in"]),
                helper.make_node("Mul", [f"{tag}_beta", f"{tag}_in"], [f"{tag}_bi"]),
                helper.make_node("Tanh", [f"{tag}_bi"], [f"{tag}_t"]),
                helper.make_node("Add", [f"{tag}_one", f"{tag}_t"], [f"{tag}_t1"]),
                helper.make_node("Mul", [x, f"{tag}_t1"], [f"{tag}_xt"]),
                helper.make_node("Mul", [f"{tag}_half", f"{tag}_xt"], [out])]
    if kind == "leakyrelu":
        return [helper.make_node("LeakyRelu", [x], [out], alpha=p[0])]
    if kind == "clip":
        return [helper.make_node("Clip", [x, f"{tag}_lo", f"{tag}_hi"], [out])]
    if kind == "hardsigmoid":
        return [helper.make_node("HardSigmoid", [x], [out], alpha=p[0], beta=p[1])]
    assert kind == "hardswishab"
    return [helper.make_node("HardSigmoid", [x], [f"{tag}_g"], alpha=p[0], beta=p[1]),
            helper.make_node("Mul", [x, f"{tag}_g"], [out])]


def act_block(act1: str, act2: str, c=21, o=37, h=7, w=9, seed=5):
    """DW 3x3 -> act1 -> PW 1x1 -> act2 with odd channel counts (ragged C0 blocks)."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "wd", "bd"], ["d"], group=c, kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    nodes += _act_nodes(act1, "d", "da", "a1")
    nodes.append(helper.make_node("Conv", ["da", "wp", "bp"], ["p"], kernel_shape=[1, 1]))
    nodes += _act_nodes(act2, "p", "y", "a2")
    inits = dict(wd=rng.standard_normal((c, 1, 3, 3)), bd=rng.standard_normal(c),
                 wp=rng.standard_normal((o, c, 1, 1)) * 0.3, bp=rng.standard_normal(o))
    for tag, act in (("a1", act1), ("a2", act2)):
        if act == "gelutanh":
            inits.update({f"{tag}_kappa": np.array(0.044715), f"{tag}_beta": np.array(0.7978845608028654),
                          f"{tag}_one": np.array(1.0), f"{tag}_half": np.array(0.5)})
        if act.startswith("clip("):
            lo, hi = (float(v) for v in act[5:-1].split(","))
            inits[f"{tag}_lo"], inits[f"{tag}_hi"] = np.array(lo), np.array(hi)
    g = helper.make_graph(nodes, "act_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


# every kind of the table but the per-channel ones, each once as act1 and once as act2; slopes
# below and above 1 and a negative one (the max/min form of leakyrelu flips at 1)
PAIRS = [("leakyrelu(0.1)", "clip(-1,2.5)"), ("hardsigmoid(0.2,0.5)", "hardswishab(0.2,0.5)"),
         ("leakyrelu(1.5)", "leakyrelu(-0.25)"), ("clip(-0.5,0.75)", "hardsigmoid(0.3,0.4)"),
         ("hardswishab(0.25,0.6)", "relu"), ("hardswish", "leakyrelu(0.01)"), ("silu", "silu"),
         ("gelutanh", "gelutanh")]


def test_every_table_activation_is_lowered_or_refused_with_reason():
    for kind in (*PLAIN, *PARAMETRIC):
        act = kind if kind in PLAIN else f"{kind}({','.join(['0.5'] * PARAMETRIC[kind])})"
        why = act_refusal(act)
        assert (why is not None) == (kind in PER_CHANNEL or kind in SCRATCH_PARTS), (act, why)
    assert "slope" in act_refusal("prelu")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("act1, act2", PAIRS)
def test_activation_module_matches_onnxruntime(act1, act2, dtype):
    model = act_block(act1, act2)
    cm = compile_model(model, target="npuir:910b2", dtype=dtype)
    wl = cm.fused_blocks[0].plan.workload
    assert (wl.act1, wl.act2) == (act1, act2)     # the importer fused both activations
    res = _check_interpreted(model, dtype, None)
    assert res.passed, res.to_json()


def test_a_skipped_activation_fails_the_interpreted_check():
    """The check can see a dropped activation: the module without its leakyrelu max must fail."""
    model = act_block("leakyrelu(0.1)", "clip(-1,2.5)")
    res = _check_interpreted(model, "float32", None, mutate=lambda t: t.replace("hivm.hir.vmax", "hivm.hir.vmin", 1))
    assert not res.passed


def test_emit_module_refuses_per_channel_act_in_one_message():
    wl = DwSepWorkload(1, 24, 40, 6, 6, act1="relu", act2="prelu", dtype="float16")
    plan = make_plan(wl, TileConfig(3, 3, 2, 1, True), get_soc("ascend910b2"))
    with pytest.raises(MegafuseError, match="'prelu' is not emitted in AscendNPU IR"):
        emit_module(plan, 0, "ascend910b2")


@vendor
@pytest.mark.parametrize("act1, act2", PAIRS)
def test_activation_modules_reach_the_handoff(act1, act2):
    cm = compile_model(act_block(act1, act2), target="npuir:910b2", dtype="float16")
    rows = check_plans([b.plan for b in cm.fused_blocks])
    _assert_all_pass(rows)


# the scratch layouts of fusion/codegen/npuir/emit.py with activations that need one: cob = 1 with the
# DW product row by row, a 1-pixel tile (lane-by-lane DW weights), fp32 with ragged blocks
TILED = [("leakyrelu(1.5)", "hardswishab(0.25,0.6)", "float16", TileOverride(3, 7, 1, 0)),
         ("hardswishab(0.2,0.5)", "leakyrelu(-0.25)", "float16", TileOverride(1, 1, 1, 1)),
         ("leakyrelu(0.1)", "hardswishab(0.2,0.5)", "float32", TileOverride(2, 4, 2, 2, False))]


@pytest.mark.parametrize("act1, act2, dtype, tile", TILED)
def test_activation_scratch_layouts_match_onnxruntime(act1, act2, dtype, tile):
    res = _check_interpreted(act_block(act1, act2), dtype, tile)
    assert res.passed, res.to_json()


@vendor
@pytest.mark.parametrize("act1, act2, dtype, tile", TILED)
def test_activation_scratch_layouts_reach_the_handoff(act1, act2, dtype, tile):
    cm = compile_model(act_block(act1, act2), target="npuir:910b2", dtype=dtype, tile=tile)
    _assert_all_pass(check_plans([b.plan for b in cm.fused_blocks]))
