"""passes/reparam.py: parallel conv branches summed by Add fold into one conv, as MobileOne's and
RepViT's `reparameterize` do; whole graphs before/expected, refusals with their rule, and the
training forms (models/reparam_nets.py) fuse as many chains as the re-parameterized ones, with
numerics against ONNX Runtime."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import models
from fusion.verify.check import check_model
from fusion.driver.compiler import compile_model
from fusion.cli.explain import explain
from fusion.core.ir import format_graph, structural_diff
from fusion.frontend.onnx_import import load_graph
from models.reparam_nets import mobileone, repvit
from passes import prepare
from passes.fold_bn import fold_bn
from passes.reparam import reparam

C, H, W = 5, 7, 6


def _model(nodes, inits, c_out=C, h_out=H, w_out=W):
    g = helper.make_graph(nodes, "branches", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c_out, h_out, w_out])],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _dw(name, k, pads, out=None, group=C, cout=C, stride=1):
    return helper.make_node("Conv", ["x", f"{name}_w", f"{name}_b"], [out or name], name=name, group=group,
                            kernel_shape=[k, k], pads=list(pads), strides=[stride, stride])


def _repvgg_dw(rng):
    """RepViT's RepVggDw: dw3x3(x) + dw1x1(x) + x."""
    inits = {"d3_w": rng.normal(0, 0.3, (C, 1, 3, 3)), "d3_b": rng.normal(0, 0.1, C),
             "d1_w": rng.normal(0, 0.3, (C, 1, 1, 1)), "d1_b": rng.normal(0, 0.1, C)}
    nodes = [_dw("d3", 3, (1, 1, 1, 1)), _dw("d1", 1, (0, 0, 0, 0)),
             helper.make_node("Add", ["d3", "d1"], ["s"], name="add1"),
             helper.make_node("Add", ["s", "x"], ["y"], name="add2")]
    return _model(nodes, inits), inits


def test_repvgg_dw_becomes_one_dw_conv_before_expected():
    before, inits = _repvgg_dw(np.random.default_rng(0))
    w = np.asarray(inits["d3_w"], np.float32).astype(np.float64)
    w[:, :, 1, 1] += np.asarray(inits["d1_w"], np.float32)[:, :, 0, 0] + 1.0   # 1x1 and identity: centre taps
    b = np.asarray(inits["d3_b"], np.float32).astype(np.float64) + np.asarray(inits["d1_b"], np.float32)
    expected = _model([_dw("d3", 3, (1, 1, 1, 1), out="y")], {"d3_w": w, "d3_b": b})
    got, refusals = reparam(load_graph(before))
    assert not refusals
    diff = structural_diff(got, load_graph(expected), rtol=1e-6)
    assert diff is None, diff + "\n" + format_graph(got)


def test_mobileone_pw_block_with_identity_bn_becomes_one_pw():
    """(BN(x) + 0) + pw0(x) + pw1(x): the BN is a diagonal of gamma / sqrt(var + eps), its shift a bias."""
    rng = np.random.default_rng(1)
    gamma, beta, mean, var = rng.uniform(0.5, 1.5, C), rng.normal(0, 0.1, C), rng.normal(0, 0.1, C), rng.uniform(0.5, 1.5, C)
    inits = {"p0_w": rng.normal(0, 0.3, (C, C, 1, 1)), "p0_b": rng.normal(0, 0.1, C),
             "p1_w": rng.normal(0, 0.3, (C, C, 1, 1)), "p1_b": rng.normal(0, 0.1, C),
             "g": gamma, "be": beta, "mu": mean, "var": var, "zero": np.array(0.0)}
    nodes = [helper.make_node("BatchNormalization", ["x", "g", "be", "mu", "var"], ["id"], name="id", epsilon=1e-5),
             helper.make_node("Add", ["id", "zero"], ["s0"], name="add_si"),
             _dw("p0", 1, (0, 0, 0, 0), group=1), _dw("p1", 1, (0, 0, 0, 0), group=1),
             helper.make_node("Add", ["s0", "p0"], ["s1"], name="add0"),
             helper.make_node("Add", ["s1", "p1"], ["y"], name="add1")]
    g32 = {k: np.asarray(v, np.float32).astype(np.float64) for k, v in inits.items()}
    scale = g32["g"] / np.sqrt(g32["var"] + 1e-5)
    w = g32["p0_w"] + g32["p1_w"]
    w[np.arange(C), np.arange(C), 0, 0] += scale
    b = g32["p0_b"] + g32["p1_b"] + g32["be"] - g32["mu"] * scale
    expected = _model([_dw("p0", 1, (0, 0, 0, 0), out="y", group=1)], {"p0_w": w, "p0_b": b})
    got, _ = reparam(load_graph(_model(nodes, inits)))
    diff = structural_diff(got, load_graph(expected), rtol=1e-6)
    assert diff is None, diff + "\n" + format_graph(got)


def test_5x5_3x3_1x1_and_identity_match_onnxruntime():
    """Smaller kernels pad into the largest, centred; the merged model computes what ORT does."""
    rng = np.random.default_rng(2)
    inits = {f"d{k}_{p}": rng.normal(0, 0.3, (C, 1, k, k)) if p == "w" else rng.normal(0, 0.1, C)
             for k in (5, 3, 1) for p in ("w", "b")}
    nodes = [_dw("d5", 5, (2, 2, 2, 2)), _dw("d3", 3, (1, 1, 1, 1)), _dw("d1", 1, (0, 0, 0, 0)),
             helper.make_node("Add", ["d5", "d3"], ["s1"], name="a1"),
             helper.make_node("Add", ["x", "d1"], ["s2"], name="a2"),
             helper.make_node("Add", ["s1", "s2"], ["y"], name="a3")]
    m = _model(nodes, inits)
    g, _ = prepare(load_graph(m))
    assert [n.op_type for n in g.nodes] == ["Conv"] and g.nodes[0].attr("kernel") == (5, 5)
    for target in ("llvm", "sim:ascend310p3"):
        cm = compile_model(m, target=target)
        res = check_model(m, cm, seed=4)
        assert res.passed and res.max_rel < 1e-5, res.to_json()


@pytest.mark.parametrize("case, words", [
    ("shifted", "do not align"),          # a 3x3 branch padded (0, 0, 2, 2): same shape, shifted window
    ("groups", "differ in group"),        # a DW branch and a dense 1x1 branch of the same x
])
def test_illegal_branches_stay_with_their_reason(case, words):
    rng = np.random.default_rng(3)
    inits = {"a_w": rng.normal(0, 0.3, (C, 1, 3, 3)), "a_b": rng.normal(0, 0.1, C)}
    if case == "shifted":
        inits.update(b_w=rng.normal(0, 0.3, (C, 1, 3, 3)), b_b=rng.normal(0, 0.1, C))
        other = _dw("b", 3, (0, 0, 2, 2))
    else:
        inits.update(b_w=rng.normal(0, 0.3, (C, C, 1, 1)), b_b=rng.normal(0, 0.1, C))
        other = _dw("b", 1, (0, 0, 0, 0), group=1)
    m = _model([_dw("a", 3, (1, 1, 1, 1)), other, helper.make_node("Add", ["a", "b"], ["y"], name="sum")], inits)
    g, refusals = reparam(load_graph(m))
    assert [n.op_type for n in g.nodes].count("Conv") == 2
    assert len(refusals) == 1 and words in refusals[0].reason and refusals[0].nodes[0] == "sum"
    cm = compile_model(m, target="llvm")
    assert check_model(m, cm, seed=1).passed


def test_residual_add_of_a_dwsep_block_is_no_branch():
    """MobileNetV2's residual (x + PW(DW(x))) reads x through a chain, not a branch: untouched."""
    m = models.dwsep_block(24, 24, 9, residual=True, fold_bn=True)
    g = fold_bn(load_graph(m))[0]
    got, refusals = reparam(g)
    assert got is g and not refusals


SMALL_MO = dict(stages=((1, 16), (2, 24), (2, 40), (1, 56)), resolution=38, stem=16, branches=3, num_classes=10)
SMALL_RV = dict(stages=((2, 24), (2, 40)), resolution=36, num_classes=10)


@pytest.mark.parametrize("build, kw", [(mobileone, SMALL_MO), (repvit, SMALL_RV)])
def test_training_form_fuses_as_the_reparameterized_form(build, kw):
    train, rep = build(train=True, **kw), build(train=False, **kw)
    onnx.checker.check_model(train, full_check=True)
    for target in ("llvm", "sim:ascend910b2"):
        ct, _, _ = explain(train, target)
        cr, _, _ = explain(rep, target)
        assert len(ct) == len(cr) and sum(c.fused for c in ct) == sum(c.fused for c in cr) > 0
        assert [c.reason.split(":")[0].split("'")[0] for c in ct] == [c.reason.split(":")[0].split("'")[0] for c in cr]
    g, _ = prepare(load_graph(train))
    counts = g.op_counts()
    assert "BatchNormalization" not in counts
    # against the prepared reparameterized form: canonicalize collapses GELU's spelled Add in both
    assert counts.get("Add", 0) == prepare(load_graph(rep))[0].op_counts().get("Add", 0)


@pytest.mark.parametrize("build, kw", [(mobileone, SMALL_MO), (repvit, SMALL_RV)])
@pytest.mark.parametrize("target, dtype", [("llvm", "float32"), ("sim:ascend310p3", "float32"),
                                           ("sim:ascend910b2", "float16")])
def test_training_form_matches_onnxruntime(build, kw, target, dtype):
    m = build(train=True, **kw)
    cm = compile_model(m, target=target, dtype=dtype)
    assert cm.fused_blocks
    res = check_model(m, cm, seed=5)
    assert res.passed, res.to_json()
