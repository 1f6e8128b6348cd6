"""Graph structural equality and printer (fusion/core/ir.py), and passes tested on whole before/expected
graphs with it."""

import numpy as np
import pytest

from fusion.core.ir import (
    NC1HWC0,
    TensorType,
    assert_structural_equal,
    format_graph,
    make_node,
    structural_diff,
)
from factories import F32, SOC, assert_graph_equal, graph
from passes.fold_bn import fold_bn
from passes.fuse_dwsep import FUSED_OP, fuse_dwsep
from passes.layout import insert_layout_conversions


def _chain(mid="a", attr=6.0, node="n1", shape=(1, 2)):
    return graph([make_node(node, "Clip", ["x"], [mid], min=0.0, max=attr),
                  make_node("n2", "Relu", [mid], ["y"])],
                 ["x"], ["y"], {"x": (shape, F32), mid: (shape, F32), "y": (shape, F32)})


def test_equal_up_to_inner_tensor_and_node_names():
    assert structural_diff(_chain(), _chain(mid="other", node="renamed")) is None
    assert_structural_equal(_chain(), _chain(mid="zz"))


@pytest.mark.parametrize("other,msg", [
    (_chain(attr=5.0), "attrs"),
    (_chain(shape=(1, 3)), "type"),
    (graph([make_node("n1", "Clip", ["x"], ["a"], min=0.0, max=6.0), make_node("n2", "Relu", ["x"], ["y"])],
           ["x"], ["y"], {"x": ((1, 2), F32), "a": ((1, 2), F32), "y": ((1, 2), F32)}), "input 0"),
    (graph([make_node("n1", "Clip", ["x"], ["a"], min=0.0, max=6.0), make_node("n2", "Sigmoid", ["a"], ["y"])],
           ["x"], ["y"], {"x": ((1, 2), F32), "a": ((1, 2), F32), "y": ((1, 2), F32)}), "op Relu vs Sigmoid"),
    (graph([make_node("n1", "Clip", ["x"], ["y"], min=0.0, max=6.0)], ["x"], ["y"],
           {"x": ((1, 2), F32), "y": ((1, 2), F32)}), "2 nodes vs 1"),
])
def test_differences_are_named(other, msg):
    diff = structural_diff(_chain(), other)
    assert diff is not None and msg in diff, diff
    with pytest.raises(AssertionError, match="graphs differ"):
        assert_structural_equal(_chain(), other)


def test_constants_compare_by_value():
    def g(v):
        return graph([make_node("m", "Mul", ["x", "k"], ["y"])], ["x"], ["y"],
                     {"x": ((2,), F32), "k": ((2,), F32), "y": ((2,), F32)}, {"k": np.array(v, np.float32)})
    assert structural_diff(g([1.0, 2.0]), g([1.0, 2.0])) is None
    assert "constant" in structural_diff(g([1.0, 2.0]), g([1.0, 2.5]))
    assert structural_diff(g([1.0, 2.0]), g([1.0, 2.0 + 1e-6]), rtol=1e-5) is None


def test_printer():
    text = format_graph(graph([make_node("m", "Mul", ["x", "k"], ["y"], axis=1)], ["x"], ["y"],
                              {"x": ((2,), F32), "k": ((2,), F32), "y": ((2,), F32)}, {"k": np.ones(2, np.float32)}))
    assert text.splitlines() == ["graph t(x: float32[2] NCHW)",
                                 "  y = Mul(x, $k) {axis=1} : float32[2] NCHW",
                                 "  return y"]


# ---- passes, before / expected --------------------------------------------------------------
# canonicalize's before/expected graph: tests/passes/test_passes.py (one builder, the HardSigmoid form too)


def test_fold_bn_before_expected():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    sc, be, mu = (rng.standard_normal(4).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 2, 4).astype(np.float32)
    conv = dict(kernel=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1), group=1)
    types = {"x": ((1, 3, 8, 8), F32), "c": ((1, 4, 8, 8), F32), "y": ((1, 4, 8, 8), F32)}
    bn = {"s": sc, "be": be, "mu": mu, "var": var}
    before = graph([make_node("conv", "Conv", ["x", "w"], ["c"], **conv),
                    make_node("bn", "BatchNormalization", ["c", "s", "be", "mu", "var"], ["y"], epsilon=1e-3)],
                   ["x"], ["y"], types | {k: (v.shape, F32) for k, v in (bn | {"w": w}).items()}, bn | {"w": w})
    k = sc / np.sqrt(var + 1e-3)
    folded = {"wf": (w * k[:, None, None, None]).astype(np.float32), "bf": (be - mu * k).astype(np.float32)}
    expected = graph([make_node("conv", "Conv", ["x", "wf", "bf"], ["y"], **conv)], ["x"], ["y"],
                     {"x": types["x"], "y": types["y"], "wf": (w.shape, F32), "bf": ((4,), F32)}, folded)
    out, refusals = fold_bn(before)
    assert not refusals
    assert_graph_equal(out, expected, rtol=1e-5)


def test_fuse_and_layout_before_expected():
    rng = np.random.default_rng(1)
    c = {"wd": rng.standard_normal((16, 1, 3, 3)).astype(np.float32), "bd": rng.standard_normal(16).astype(np.float32),
         "wp": rng.standard_normal((16, 16, 1, 1)).astype(np.float32), "bp": rng.standard_normal(16).astype(np.float32)}
    t = ((1, 16, 8, 8), F32)
    conv = dict(dilations=(1, 1), pads=(1, 1, 1, 1), strides=(1, 1))
    before = graph([
        make_node("dw", "Conv", ["x", "wd", "bd"], ["a"], group=16, kernel=(3, 3), **conv),
        make_node("dw_act", "Relu", ["a"], ["b"]),
        make_node("pw", "Conv", ["b", "wp", "bp"], ["p"], group=1, kernel=(1, 1), dilations=(1, 1),
                  pads=(0, 0, 0, 0), strides=(1, 1)),
        make_node("pw_act", "Relu", ["p"], ["y"]),
    ], ["x"], ["y"], {k: t for k in "xabpy"} | {k: (v.shape, F32) for k, v in c.items()}, c)
    fused, refusals = fuse_dwsep(before, SOC)
    assert not refusals
    blocked = ((1, 1, 8, 8, 16), F32, NC1HWC0, 16)
    attrs = dict(act1="relu", act2="relu", kernel=(3, 3), members=("dw", "dw_act", "pw", "pw_act"),
                 pads=(1, 1, 1, 1), residual=False, strides=(1, 1))
    expected = graph([
        make_node("to", "ToNC1HWC0", ["x"], ["xb"]),
        make_node("f", FUSED_OP, ["xb", "wd", "bd", "wp", "bp"], ["yb"], **attrs),
        make_node("back", "ToNCHW", ["yb"], ["y"]),
    ], ["x"], ["y"], {"x": t, "y": t, "xb": blocked, "yb": blocked} | {k: (v.shape, F32) for k, v in c.items()}, c)
    out = insert_layout_conversions(fused)
    assert_graph_equal(out, expected)


def test_assert_graph_equal_catches_stray_constants_and_wrong_expectations():
    """tests/factories.assert_graph_equal: a constant no node reads (a pass that forgot to drop it)
    fails, and so does an expected graph that differs in an attribute."""
    g = _chain()
    stray = graph(g.nodes, g.inputs, g.outputs, {**g.types, "k": TensorType((2,), F32)}, {"k": np.ones(2, np.float32)})
    with pytest.raises(AssertionError, match="constants"):
        assert_graph_equal(stray, g)
    with pytest.raises(AssertionError, match="attrs"):
        assert_graph_equal(g, _chain(attr=5.0))
    assert_graph_equal(g, _chain(mid="renamed", node="other"))
