"""Squeeze-and-excitation inside the fused DW -> PW block (passes/se_match.py, schedules/se*.py):
the exporters' forms are recognised and fused; the block runs on llvm (two-pass CPU kernel) and
sim (the same numerics, the two-phase program with its SE phase MODELED) against ONNX Runtime on
odd shapes, SiLU/Sigmoid and ReLU/HardSwish/HardSigmoid variants, batch 1 and 2; ascend at fp32
and npuir refuse with the reason (the Ascend C kernel: tests/codegen/test_ascendc_se.py); forms that are not an SE block keep a refusal naming it."""

import json
import numpy as np
import onnx
import pytest
from conftest import run_cli
from onnx import helper

import models
from fusion.core.soc import get_soc
from fusion.cost import model_block
from fusion.cost.vendor_baseline import block_kernels
from fusion.driver.compiler import compile_model
from fusion.driver.tile_policy import TileOverride, choose_tile, fit_refusal
from fusion.frontend.onnx_import import load_graph
from fusion.verify.check import check_model
from passes import optimize
from passes.fuse_dwsep import FUSED_OP, fused_se_inputs
from schedules.program_twophase import build_twophase, phase
from schedules.reference import reference_block
from schedules.se_math import gate_numpy
from schedules.targets import parse_target
from schedules.workload import DwSepWorkload

# (kwargs, the act1 / se_act / gate the fused node must carry)
FORMS = [
    (dict(act="silu", se_act="silu", gate="sigmoid"), ("silu", "silu", "sigmoid")),                  # EfficientNet
    (dict(act="relu", se_act="relu", gate="hardsigmoid"), ("relu", "relu", "hardsigmoid(0.16666667,0.5)")),  # MNv3
    (dict(act="hardswish", se_act="relu", gate="hardsigmoid", mean="gap"),                            # torchvision
     ("hardswish", "relu", "hardsigmoid(0.16666667,0.5)")),
    (dict(act="silu", se_act="relu", gate="sigmoid", opset=18), ("silu", "relu", "sigmoid")),           # axes input
]


def _fused(m, soc="ascend910b2"):
    g, refusals = optimize(load_graph(m), get_soc(soc))
    return [n for n in g.nodes if n.op_type == FUSED_OP], [r for r in refusals if r.pass_name == "fuse_dwsep"], g


@pytest.mark.parametrize("kw,expect", FORMS)
def test_exporter_forms_fuse_with_se(kw, expect):
    fused, refusals, g = _fused(models.mbconv_se(21, 19, 9, 7, **kw))
    assert len(fused) == 1 and not refusals
    f = fused[0]
    assert (f.attr("act1"), f.attr("se_act"), f.attr("se_gate")) == expect
    assert {"se_mean", "se_reduce", "se_expand", "se_gate", "se_mul", "pw"} <= set(f.attr("members"))
    w1, b1, w2, b2 = (g.constants[t] for t in fused_se_inputs(f))
    assert w1.shape == (6, 21, 1, 1) and w2.shape == (21, 6, 1, 1) and b1.shape == (6,) and b2.shape == (21,)


def test_reference_block_se_matches_hand_math():
    wl = DwSepWorkload(2, 5, 3, 4, 4, (1, 1), (1, 1), (0, 0, 0, 0), "none", "none", se_mid=2, se_act="relu",
                       se_gate="sigmoid")
    rng = np.random.default_rng(1)
    d = {"x": rng.normal(size=(2, 5, 4, 4)), "w_dw": np.ones((5, 1, 1, 1)), "b_dw": np.zeros(5),
         "w_pw": rng.normal(size=(3, 5, 1, 1)), "b_pw": np.zeros(3), "w_se1": rng.normal(size=(2, 5, 1, 1)),
         "b_se1": rng.normal(size=2), "w_se2": rng.normal(size=(5, 2, 1, 1)), "b_se2": rng.normal(size=5)}
    x = d["x"]
    h = np.maximum(x.mean(axis=(2, 3)) @ d["w_se1"][:, :, 0, 0].T + d["b_se1"], 0)
    s = 1 / (1 + np.exp(-(h @ d["w_se2"][:, :, 0, 0].T + d["b_se2"])))
    want = np.einsum("nchw,oc->nohw", x * s[:, :, None, None], d["w_pw"][:, :, 0, 0])
    assert np.allclose(reference_block(wl, d), want, rtol=1e-6, atol=1e-6)
    assert np.allclose(gate_numpy(np.array([-800.0, 0.0, 800.0]), "sigmoid"), [0, 0.5, 1])


CASES = [  # odd shapes; batch 1 and 2; stride 2; residual
    dict(cin=21, cout=19, h=9, w=7, stride=2, batch=2, act="silu", se_act="silu", gate="sigmoid"),
    dict(cin=24, cout=24, h=7, w=10, kernel=5, batch=1, act="hardswish", se_act="relu", gate="hardsigmoid",
         residual=True, se_mid=8),
    dict(cin=33, cout=18, h=6, w=5, batch=2, act="relu", se_act="relu", gate="hardsigmoid", mean="gap"),
]


@pytest.mark.parametrize("target", ["llvm", "sim", "sim:ascend310p3"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_se_block_matches_onnxruntime(target, case):
    m = models.mbconv_se(**CASES[case], seed=case)
    cm = compile_model(m, target=target)
    assert len(cm.fused_blocks) == 1 and cm.fused_blocks[0].workload.se, [r.reason for r in cm.refusals]
    r = check_model(m, cm, seed=case)
    assert r.passed, r.describe() if hasattr(r, "describe") else r


def test_se_block_fp16_on_sim():
    m = models.mbconv_se(**CASES[0], seed=5)
    cm = compile_model(m, target="sim", dtype="float16")
    assert len(cm.fused_blocks) == 1 and cm.fused_blocks[0].plan.two_phase
    assert check_model(m, cm, seed=5).within_tolerance


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
def test_program_has_the_se_phase_between_two_barriers(soc):
    wl = DwSepWorkload(2, 40, 24, 9, 7, act1="silu", act2="none", dtype="float16", se_mid=10, se_act="silu",
                       se_gate="sigmoid")
    tgt = parse_target(f"sim:{soc}")
    plan = choose_tile(wl, tgt).plan
    assert plan.two_phase and plan.fits()
    prog = build_twophase(plan)
    names = [ph.name for ph in prog.phases]
    assert names[:3] == ["dw", "se", "gemm"] and prog.barriers == len(names) - 1
    # the SE phase scales every channel block of every image once: the DW result's bytes in and out
    se = phase(prog, "se")
    scaled = sum(s.nbytes for u in se.units for it in u for s in it
                 if getattr(s, "gm", None) == "dw_ws" and s.direction == "out")
    assert scaled == wl.batch * wl.c1 * wl.out_height * wl.out_width * 16 * 2
    # phase 1 reads every column of W1 (fp32) at least once, and adds one hidden share per DW unit
    dw = phase(prog, "dw")
    w1 = sum(s.nbytes for u in dw.units for it in u for s in it if getattr(s, "gm", None) == "w_se1")
    assert w1 >= wl.se_mid * wl.c1 * 16 * 4 * plan.n_tiles
    assert prog.counts["write:handoff"] > 2 * scaled   # DW result, scaled result, hidden shares
    k = model_block(plan, timeline=False)
    assert k.time_us > 0


def test_se_cost_exceeds_the_same_block_without_se():
    base = dict(batch=1, cin=96, cout=24, height=32, width=32, act1="silu", act2="none", dtype="float16")
    tgt = parse_target("sim")
    with_se = model_block(choose_tile(DwSepWorkload(**base, se_mid=4, se_act="silu", se_gate="sigmoid"),
                                      tgt).plan, timeline=False).time_us
    plain = model_block(choose_tile(DwSepWorkload(**base), tgt, TileOverride(pw_engine="twophase")).plan,
                        timeline=False).time_us
    assert with_se > plain


@pytest.mark.parametrize("target,dtype,words", [("ascend", "float32", "emitted for float16 only"),
                                                ("npuir", "float16", "AscendNPU IR emitter")])
def test_targets_without_the_se_phase_refuse_with_the_reason(target, dtype, words):
    m = models.mbconv_se(**CASES[0])
    cm = compile_model(m, target=target, dtype=dtype)
    assert not cm.fused_blocks
    assert any("squeeze-and-excitation needs the two-phase kernel" in r.reason and words in r.reason
               for r in cm.refusals)


def test_forced_tile_refuses_se_on_sim():
    wl = DwSepWorkload(1, 32, 16, 8, 8, se_mid=4, se_act="relu", se_gate="sigmoid")
    why = fit_refusal(wl, parse_target("sim"), TileOverride(th=4, tw=4))
    assert why and "forced tile" in why


def test_mean_read_elsewhere_is_refused_with_its_reason():
    m = models.mbconv_se(**CASES[0])
    m.graph.node.append(helper.make_node("Relu", ["se_mean"], ["z"], name="extra"))
    m.graph.output.append(helper.make_tensor_value_info("z", 1, None))
    fused, refusals, _ = _fused(m)
    assert not fused and any("SE" in r.reason or "squeeze" in r.reason for r in refusals)


def test_mul_by_a_non_se_tensor_is_not_se():
    """A global mean whose tensor has a third consumer is no SE block: the refusal says so."""
    m = models.mbconv_se(**CASES[0])
    m.graph.node.append(helper.make_node("Relu", ["dw_act"], ["z"], name="extra"))
    m.graph.output.append(helper.make_tensor_value_info("z", 1, None))
    fused, refusals, _ = _fused(m)
    assert not fused and any("not the mean and one Mul" in r.reason for r in refusals)


def test_emit_onnx_keeps_an_se_block_as_its_original_nodes(capsys, tmp_path):
    """The fused ONNX export's ai.megafuse node carries no SE operands yet: the block stays as the
    model's own nodes in the export (a note says so), and ONNX Runtime runs the export."""
    import onnxruntime as ort
    from fusion.driver.onnx_export import FILE_NAME
    from fusion.verify.onnx_run import session

    p = tmp_path / "se.onnx"
    onnx.save(models.mbconv_se(**CASES[0]), p)
    code, out, err = run_cli(capsys, "compile", str(p), "-t", "sim", "--dtype", "float16", "--no-fallback",
                             "--emit-onnx", "-o", str(tmp_path / "out"), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert any("exported as its original nodes" in n and "squeeze-and-excitation" in n for n in doc["notes"])
    m = onnx.load(str(tmp_path / "out" / FILE_NAME))
    assert not [n for n in m.graph.node if n.domain == "ai.megafuse"]
    x = np.random.default_rng(1).standard_normal(
        [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]).astype(np.float32)
    (got,) = session(str(tmp_path / "out" / FILE_NAME)).run(None, {m.graph.input[0].name: x})
    (ref,) = ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, {m.graph.input[0].name: x})
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_vendor_baseline_counts_the_se_kernels():
    """The fused SE block replaces the vendor's DW, SE (mean, two 1x1 convs, Mul) and PW kernels."""
    base = dict(batch=1, cin=96, cout=24, height=16, width=16, act1="silu", act2="none", dtype="float16")
    soc = get_soc("ascend910b2")
    plain = block_kernels(DwSepWorkload(**base), soc)
    se = block_kernels(DwSepWorkload(**base, se_mid=4, se_act="silu", se_gate="sigmoid"), soc)
    assert len(plain) == 2 and len(se) == 6
    assert [k.kind for k in se][1:5] == ["pool", "conv", "conv", "eltwise"]
    assert sum(k.time_us for k in se) > sum(k.time_us for k in plain)
