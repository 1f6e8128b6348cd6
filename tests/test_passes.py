"""Each pass on small before/expected graphs."""

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import models
from fusion.core.ir import NC1HWC0, Graph, TensorType, make_node
from fusion.frontend.onnx_import import load_graph
from fusion.core.soc import get_soc
from passes import optimize
from passes.canonicalize import canonicalize
from passes.fold_bn import fold_bn
from passes.fuse_dwsep import FUSED_OP, fused_data_inputs, fused_slope_inputs, fuse_dwsep

SOC = get_soc("ascend910b2")


def ops(g: Graph) -> list[str]:
    return [n.op_type for n in g.nodes]


def graph(nodes, inputs, outputs, types, consts=None):
    return Graph("t", tuple(nodes), tuple(inputs), tuple(outputs),
                 {k: TensorType(*v) for k, v in types.items()}, consts or {})


def test_canonicalize_clip_identity_hardswish():
    t = ("float32",)
    s = (1, 4, 5, 5)
    consts = {"three": np.array(3.0, np.float32), "six": np.array(6.0, np.float32)}
    g = graph([
        make_node("id", "Identity", ["x"], ["a"]),
        make_node("c6", "Clip", ["a"], ["b"], min=0.0, max=6.0),
        make_node("add", "Add", ["b", "three"], ["c"]),
        make_node("clip", "Clip", ["c"], ["d"], min=0.0, max=6.0),
        make_node("mul", "Mul", ["b", "d"], ["e"]),
        make_node("div", "Div", ["e", "six"], ["f"]),
        make_node("hs", "HardSigmoid", ["f"], ["g"], alpha=1 / 6, beta=0.5),
        make_node("mul2", "Mul", ["f", "g"], ["h"]),
        make_node("relu", "Clip", ["h"], ["y"], min=0.0, max=math.inf),
    ], ["x"], ["y"], {k: (s,) + t for k in "xabcdefghy"} | {"three": ((), "float32"), "six": ((), "float32")},
        consts)
    out = canonicalize(g)
    assert ops(out) == ["Relu6", "HardSwish", "HardSwish", "Relu"]
    assert out.nodes[0].inputs == ("x",)
    assert out.nodes[1].inputs == ("b",) and out.nodes[2].inputs == ("f",)
    assert out.outputs == ("y",) and not out.constants


def test_canonicalize_keeps_non_matching():
    g = graph([make_node("c", "Clip", ["x"], ["y"], min=-1.0, max=6.0)], ["x"], ["y"],
              {"x": ((1, 2), "float32"), "y": ((1, 2), "float32")})
    assert canonicalize(g) is g  # unchanged graph is the same object


def test_fold_bn_matches_math():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    sc, be, mu = (rng.standard_normal(4).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 2, 4).astype(np.float32)
    consts = {"w": w, "b": b, "s": sc, "be": be, "mu": mu, "var": var}
    types = {"x": ((1, 3, 8, 8), "float32"), "c": ((1, 4, 8, 8), "float32"), "y": ((1, 4, 8, 8), "float32")}
    types |= {k: (v.shape, "float32") for k, v in consts.items()}
    g = graph([make_node("conv", "Conv", ["x", "w", "b"], ["c"], kernel=(3, 3), strides=(1, 1),
                         pads=(1, 1, 1, 1), dilations=(1, 1), group=1),
               make_node("bn", "BatchNormalization", ["c", "s", "be", "mu", "var"], ["y"], epsilon=1e-3)],
              ["x"], ["y"], types, consts)
    out, refusals = fold_bn(g)
    assert ops(out) == ["Conv"] and not refusals and out.nodes[0].outputs == ("y",)
    k = sc / np.sqrt(var + 1e-3)
    np.testing.assert_allclose(out.constants[out.nodes[0].inputs[1]], w * k[:, None, None, None], rtol=1e-6)
    np.testing.assert_allclose(out.constants[out.nodes[0].inputs[2]], (b - mu) * k + be, rtol=1e-5, atol=1e-6)


def test_fold_bn_refuses_with_reason():
    consts = {k: np.ones(4, np.float32) for k in ("s", "be", "mu", "var")}
    types = {"x": ((1, 4, 2, 2), "float32"), "y": ((1, 4, 2, 2), "float32")}
    types |= {k: ((4,), "float32") for k in consts}
    g = graph([make_node("bn", "BatchNormalization", ["x", "s", "be", "mu", "var"], ["y"], epsilon=1e-5)],
              ["x"], ["y"], types, consts)
    out, refusals = fold_bn(g)
    assert out is g and len(refusals) == 1 and "not a Conv" in refusals[0].reason


def _block_graph(**kw):
    g = load_graph(models.dwsep_block(**kw))
    g = canonicalize(g)
    g, _ = fold_bn(g)
    return g


def test_fuse_dwsep_expected_graph():
    g = _block_graph(cin=32, cout=48, h=14, act1="relu6", act2="relu")
    assert ops(g) == ["Conv", "Relu6", "Conv", "Relu"]
    out, refusals = fuse_dwsep(g, SOC)
    assert ops(out) == [FUSED_OP] and not refusals
    n = out.nodes[0]
    assert n.inputs[0] == "x" and n.outputs == ("y",)
    assert n.attr("act1") == "relu6" and n.attr("act2") == "relu" and n.attr("residual") is False
    assert n.attr("members") == ("dw", "dw_act", "pw", "pw_act")
    assert out.constants[n.inputs[3]].shape == (48, 32, 1, 1)


def test_fuse_dwsep_residual_and_no_act2():
    g = _block_graph(cin=32, cout=32, h=14, act1="relu6", act2="none", residual=True)
    out, _ = fuse_dwsep(g, SOC)
    assert ops(out) == [FUSED_OP]
    n = out.nodes[0]
    assert n.attr("residual") is True and n.attr("act2") == "none" and n.inputs[5] == "x"


@pytest.mark.parametrize("kw,reason", [
    (dict(dilation=2), "dilation 2 unsupported"),
])
def test_fuse_dwsep_refusals(kw, reason):
    g = _block_graph(cin=16, cout=16, h=10, **kw)
    out, refusals = fuse_dwsep(g, SOC)
    assert FUSED_OP not in ops(out)
    assert len(refusals) == 1 and reason in refusals[0].reason, refusals


def test_fuse_dwsep_linear_dw():
    """DW with no activation (a linear bottleneck input) fuses with act1 = none."""
    g = _block_graph(cin=16, cout=16, h=10, act1="none")
    out, refusals = fuse_dwsep(g, SOC)
    assert ops(out) == [FUSED_OP] and not refusals
    assert out.nodes[0].attr("act1") == "none"


def test_fuse_dwsep_refuses_two_consumers():
    m = models.dwsep_block(cin=16, cout=16, h=8)
    # add a second consumer of the DW output
    m.graph.node.append(helper.make_node("Relu", ["dw_out_extra_src"], ["z"]))
    dw_out = [n for n in m.graph.node if n.name == "dw"][0].output[0]
    m.graph.node[-1].input[0] = dw_out
    m.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    g = canonicalize(load_graph(m))
    g, _ = fold_bn(g)
    out, refusals = fuse_dwsep(g, SOC)
    assert FUSED_OP not in ops(out)
    assert any("consumers" in r.reason for r in refusals), refusals


def test_fuse_dwsep_refuses_when_ub_too_small():
    g = _block_graph(cin=8192, cout=16, h=3, w=3)
    out, refusals = fuse_dwsep(g, SOC)
    assert FUSED_OP not in ops(out)
    r = refusals[0]
    assert r.kind == "profitability" and "even at the smallest tile" in r.reason and "KiB >" in r.reason


def test_layout_converts_once_per_region():
    g = load_graph(models.mobilenet_v2())
    out, _ = optimize(g, SOC)
    counts = out.op_counts()
    assert counts[FUSED_OP] == 17
    assert counts["ToNC1HWC0"] == 1 and counts["ToNCHW"] == 1
    for n in out.nodes:  # expansion convs between fused blocks stay blocked
        if n.op_type == "Conv" and n.attr("kernel") == (1, 1) and n.name.endswith("_exp"):
            assert out.types[n.outputs[0]].layout == NC1HWC0


def test_layout_keeps_graph_output_name():
    g = load_graph(models.dwsep_block(cin=16, cout=16, h=8))
    out, _ = optimize(g, SOC)
    assert ops(out) == ["ToNC1HWC0", FUSED_OP, "ToNCHW"]
    assert out.outputs == ("y",) and out.types["y"].shape == (1, 16, 8, 8)


def _with_act(op, **attrs):
    """The block graph with its DW activation replaced by `op` (extra constant inputs in attrs['_consts'])."""
    g = _block_graph(cin=16, cout=24, h=8, act1="relu", act2="relu")
    consts, types = dict(g.constants), dict(g.types)
    extra = attrs.pop("_consts", {})
    for k, v in extra.items():
        consts[k], types[k] = v, TensorType(v.shape, "float32")
    act = next(n for n in g.nodes if n.op_type == "Relu")
    new = make_node(act.name, op, (act.inputs[0], *extra), act.outputs, **attrs)
    return g.rewrite([new if n is act else n for n in g.nodes], consts, types)


@pytest.mark.parametrize("op,attrs,act1", [
    ("LeakyRelu", dict(alpha=0.1), "leakyrelu(0.1)"),
    ("PRelu", dict(_consts={"slope": np.full((16, 1, 1), 0.25, np.float32)}), "leakyrelu(0.25)"),
    ("Clip", dict(min=-1.0, max=4.0), "clip(-1,4)"),
    ("HardSigmoid", dict(alpha=0.2, beta=0.5), "hardsigmoid(0.2,0.5)"),
])
def test_fuse_dwsep_exporter_activations(op, attrs, act1):
    out, refusals = fuse_dwsep(_with_act(op, **attrs), SOC)
    assert ops(out) == [FUSED_OP] and not refusals
    assert out.nodes[0].attr("act1") == act1


def test_fuse_dwsep_refuses_per_channel_prelu_and_open_clip():
    slope = np.linspace(0.1, 0.3, 16, dtype=np.float32).reshape(16, 1, 1)
    _, refusals = fuse_dwsep(_with_act("PRelu", _consts={"slope": slope}), SOC)
    assert len(refusals) == 1 and "per-channel slope (16 values)" in refusals[0].reason
    _, refusals = fuse_dwsep(_with_act("Clip", min=-math.inf, max=4.0), SOC)
    assert len(refusals) == 1 and "open bound" in refusals[0].reason


def _with_prelu_acts(s1, s2, residual=False):
    """The block graph (16 -> 16 channels, or 16 -> 24) with PRelu(s1) after DW and PRelu(s2) after PW."""
    g = _block_graph(cin=16, cout=16 if residual else 24, h=8, act1="relu", act2="relu", residual=residual)
    consts, types = dict(g.constants), dict(g.types)
    nodes, k = [], 0
    for n in g.nodes:
        if n.op_type == "Relu":
            s = (s1, s2)[k]
            consts[f"slope{k}"], types[f"slope{k}"] = s, TensorType(s.shape, "float32")
            n = make_node(n.name, "PRelu", (n.inputs[0], f"slope{k}"), n.outputs)
            k += 1
        nodes.append(n)
    return g.rewrite(nodes, consts, types)


def test_fuse_dwsep_per_channel_prelu_expected_graph():
    s1 = np.linspace(-0.5, 1.5, 16, dtype=np.float32).reshape(16, 1, 1)
    s2 = np.linspace(0.1, 2.0, 16, dtype=np.float32).reshape(1, 16, 1, 1)
    g = _with_prelu_acts(s1, s2, residual=True)
    assert ops(g) == ["Conv", "PRelu", "Conv", "PRelu", "Add"]
    out, refusals = fuse_dwsep(g, SOC, per_channel=True)
    assert ops(out) == [FUSED_OP] and not refusals
    n = out.nodes[0]
    assert n.attr("act1") == "prelu" and n.attr("act2") == "prelu" and n.attr("residual") is True
    # x, w_dw, b_dw, w_pw, b_pw, s_dw, s_pw, residual (passes/fuse_dwsep: FUSED_WEIGHTS, FUSED_SLOPES)
    assert len(n.inputs) == 8 and n.inputs[0] == "x" and n.inputs[7] == "x"
    slopes = fused_slope_inputs(n)
    assert list(slopes) == ["s_dw", "s_pw"] and fused_data_inputs(n) == ("x", "x")
    np.testing.assert_array_equal(out.constants[slopes["s_dw"]], s1.reshape(16))
    np.testing.assert_array_equal(out.constants[slopes["s_pw"]], s2.reshape(16))


def test_fuse_dwsep_per_channel_prelu_after_pw_only():
    one = np.full((16, 1, 1), 0.25, np.float32)   # one slope: leakyrelu, no operand
    s2 = np.linspace(0.1, 2.0, 24, dtype=np.float32).reshape(24, 1, 1)
    out, refusals = fuse_dwsep(_with_prelu_acts(one, s2), SOC, per_channel=True)
    assert ops(out) == [FUSED_OP] and not refusals
    n = out.nodes[0]
    assert n.attr("act1") == "leakyrelu(0.25)" and n.attr("act2") == "prelu"
    assert len(n.inputs) == 6 and list(fused_slope_inputs(n)) == ["s_pw"] and fused_data_inputs(n) == ("x",)
    assert out.constants[n.inputs[5]].shape == (24,)


def test_fuse_dwsep_prelu_slope_along_a_spatial_axis_is_refused():
    s1 = np.linspace(0.1, 0.3, 8, dtype=np.float32)   # (8,) broadcasts along W, not channels
    g = _with_prelu_acts(s1, np.full((24, 1, 1), 0.2, np.float32))
    out, refusals = fuse_dwsep(g, SOC, per_channel=True)
    assert FUSED_OP not in ops(out)
    assert len(refusals) == 1 and "varies along a spatial axis" in refusals[0].reason
