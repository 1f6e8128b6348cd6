"""Each pass on small before/expected graphs, compared whole (tests/factories.assert_graph_equal:
nodes, attributes, dataflow, types, constants by value, inputs and outputs)."""

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import models
from factories import F32, SOC, assert_graph_equal, conv_attrs, graph
from fusion.core.ir import NC1HWC0, Graph, TensorType, make_node
from fusion.frontend.onnx_import import load_graph
from passes import optimize
from passes.canonicalize import canonicalize
from passes.fold_bn import fold_bn
from passes.fuse_dwsep import FUSED_OP, fuse_dwsep, fused_data_inputs, fused_slope_inputs


def ops(g: Graph) -> list[str]:
    return [n.op_type for n in g.nodes]


def test_canonicalize_clip_identity_hardswish():
    s = ((1, 4, 5, 5), F32)
    consts = {"three": np.array(3.0, np.float32), "six": np.array(6.0, np.float32)}
    before = graph([
        make_node("id", "Identity", ["x"], ["a"]),
        make_node("c6", "Clip", ["a"], ["b"], min=0.0, max=6.0),
        make_node("add", "Add", ["b", "three"], ["c"]),
        make_node("clip", "Clip", ["c"], ["d"], min=0.0, max=6.0),
        make_node("mul", "Mul", ["b", "d"], ["e"]),
        make_node("div", "Div", ["e", "six"], ["f"]),
        make_node("hs", "HardSigmoid", ["f"], ["g"], alpha=1 / 6, beta=0.5),
        make_node("mul2", "Mul", ["f", "g"], ["h"]),
        make_node("relu", "Clip", ["h"], ["y"], min=0.0, max=math.inf),
    ], ["x"], ["y"], {k: s for k in "xabcdefghy"} | {"three": ((), F32), "six": ((), F32)}, consts)
    # Identity dropped; Clip(0, 6) -> Relu6; x * relu6(x + 3) / 6 and x * hardsigmoid(x) -> HardSwish;
    # Clip(0, inf) -> Relu; the constants 3 and 6 no longer used: removed
    expected = graph([
        make_node("r6", "Relu6", ["x"], ["b"]),
        make_node("hs1", "HardSwish", ["b"], ["f"]),
        make_node("hs2", "HardSwish", ["f"], ["h"]),
        make_node("r", "Relu", ["h"], ["y"]),
    ], ["x"], ["y"], {k: s for k in "xbfhy"})
    out = canonicalize(before)
    assert_graph_equal(out, expected)
    # the surviving tensors keep their names (b, f: what the rewritten nodes read)
    assert out.nodes[1].inputs == ("b",) and out.nodes[2].inputs == ("f",) and out.outputs == ("y",)


def test_canonicalize_keeps_non_matching():
    g = graph([make_node("c", "Clip", ["x"], ["y"], min=-1.0, max=6.0)], ["x"], ["y"],
              {"x": ((1, 2), F32), "y": ((1, 2), F32)})
    assert canonicalize(g) is g  # unchanged graph is the same object


def _conv_bn(with_bias=True):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    sc, be, mu = (rng.standard_normal(4).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 2, 4).astype(np.float32)
    consts = {"w": w, "s": sc, "be": be, "mu": mu, "var": var} | ({"b": b} if with_bias else {})
    types = {"x": ((1, 3, 8, 8), F32), "c": ((1, 4, 8, 8), F32), "y": ((1, 4, 8, 8), F32)}
    types |= {k: (v.shape, F32) for k, v in consts.items()}
    conv = conv_attrs((3, 3), pads=(1, 1, 1, 1))
    g = graph([make_node("conv", "Conv", ["x", "w", "b"] if with_bias else ["x", "w"], ["c"], **conv),
               make_node("bn", "BatchNormalization", ["c", "s", "be", "mu", "var"], ["y"], epsilon=1e-3)],
              ["x"], ["y"], types, consts)
    # by hand: y = (conv(x, w) + b - mu) * k + be, k = s / sqrt(var + eps)
    k = sc / np.sqrt(var + 1e-3)
    folded = {"wf": w * k[:, None, None, None], "bf": ((b if with_bias else 0) - mu) * k + be}
    expected = graph([make_node("conv", "Conv", ["x", "wf", "bf"], ["y"], **conv)], ["x"], ["y"],
                     {"x": types["x"], "y": types["y"], "wf": (w.shape, F32), "bf": ((4,), F32)},
                     {n: v.astype(np.float32) for n, v in folded.items()})
    return g, expected


@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no-bias"])
def test_fold_bn_matches_math(with_bias):
    before, expected = _conv_bn(with_bias)
    out, refusals = fold_bn(before)
    assert not refusals
    assert_graph_equal(out, expected, rtol=1e-5)
    assert out.nodes[0].outputs == ("y",)
    np.testing.assert_allclose(out.constants[out.nodes[0].inputs[1]], expected.constants["wf"], rtol=1e-6)
    np.testing.assert_allclose(out.constants[out.nodes[0].inputs[2]], expected.constants["bf"], rtol=1e-5, atol=1e-6)


def test_fold_bn_refuses_with_reason():
    consts = {k: np.ones(4, np.float32) for k in ("s", "be", "mu", "var")}
    types = {"x": ((1, 4, 2, 2), F32), "y": ((1, 4, 2, 2), F32)}
    types |= {k: ((4,), F32) for k in consts}
    g = graph([make_node("bn", "BatchNormalization", ["x", "s", "be", "mu", "var"], ["y"], epsilon=1e-5)],
              ["x"], ["y"], types, consts)
    out, refusals = fold_bn(g)
    assert out is g and len(refusals) == 1 and "not a Conv" in refusals[0].reason


def _block_graph(**kw):
    g = load_graph(models.dwsep_block(**kw))
    g = canonicalize(g)
    g, _ = fold_bn(g)
    return g


def _block_before(g, act1, act2, residual=False):
    """The expected input of fuse_dwsep: DW conv -> act1 -> PW conv -> act2 [-> Add(x, .)], as the
    importer, canonicalize and fold_bn leave a models.dwsep_block (biases folded into the convs)."""
    dw, pw = g.node("dw"), g.node("pw")
    cin = g.types["x"].shape[1]
    nodes = [make_node("dw", "Conv", ["x", *dw.inputs[1:]], ["a"],
                       **conv_attrs((3, 3), group=cin, pads=(1, 1, 1, 1))),
             make_node("act1", act1, ["a"], ["b"]),
             make_node("pw", "Conv", ["b", *pw.inputs[1:]], ["p"], **conv_attrs())]
    if residual:
        nodes.append(make_node("add", "Add", ["x", "p"], ["y"]))
    else:
        nodes.append(make_node("act2", act2, ["p"], ["y"]))
    return graph(nodes, ["x"], ["y"], {"x": g.types["x"], "a": g.types["x"], "b": g.types["x"],
                                       "p": g.types["y"], "y": g.types["y"]}
                 | {k: (v.shape, F32) for k, v in g.constants.items()}, g.constants)


def _fused_expected(before, act1, act2, members, residual=False, slopes=(), fmt="nchw"):
    """The one FusedDwSep node replacing the block: x, the DW and PW weights and biases unchanged
    (fold_bn's), the per-channel slopes (name, values), x again when residual."""
    dw, pw = (n for n in before.nodes if n.op_type == "Conv")
    consts = {t: before.constants[t] for t in (*dw.inputs[1:], *pw.inputs[1:])}
    consts |= dict(slopes)
    types = {"x": before.types["x"], "y": before.types["y"]} | {k: (v.shape, F32) for k, v in consts.items()}
    attrs = dict(act1=act1, act2=act2, kernel=dw.attr("kernel"), members=members, pads=dw.attr("pads"),
                 residual=residual, strides=dw.attr("strides"))
    data = ["x"] if fmt == "nchw" else ["xb"]
    inputs = [*data, *dw.inputs[1:], *pw.inputs[1:], *(n for n, _ in slopes), *(data if residual else [])]
    if fmt == "nchw":
        return graph([make_node("f", FUSED_OP, inputs, ["y"], **attrs)], ["x"], ["y"], types, consts)
    blocked = lambda t: TensorType((t.shape[0], -(-t.shape[1] // 16), *t.shape[2:], 16), F32, NC1HWC0,  # noqa: E731
                                   t.shape[1])
    return graph([make_node("to", "ToNC1HWC0", ["x"], ["xb"]),
                  make_node("f", FUSED_OP, inputs, ["yb"], **attrs),
                  make_node("back", "ToNCHW", ["yb"], ["y"])], ["x"], ["y"],
                 types | {"xb": blocked(before.types["x"]), "yb": blocked(before.types["y"])}, consts)


def test_fuse_dwsep_expected_graph():
    g = _block_graph(cin=32, cout=48, h=14, act1="relu6", act2="relu")
    assert_graph_equal(g, _block_before(g, "Relu6", "Relu"))
    out, refusals = fuse_dwsep(g, SOC)
    assert not refusals
    assert_graph_equal(out, _fused_expected(g, "relu6", "relu", ("dw", "dw_act", "pw", "pw_act")))
    assert out.constants[out.nodes[0].inputs[3]].shape == (48, 32, 1, 1)


def test_fuse_dwsep_residual_and_no_act2():
    g = _block_graph(cin=32, cout=32, h=14, act1="relu6", act2="none", residual=True)
    assert_graph_equal(g, _block_before(g, "Relu6", None, residual=True))
    out, refusals = fuse_dwsep(g, SOC)
    assert not refusals
    assert_graph_equal(out, _fused_expected(g, "relu6", "none", ("dw", "dw_act", "pw", "add"), residual=True))
    assert out.nodes[0].inputs[5] == "x"


@pytest.mark.parametrize("kw,reason", [
    (dict(dilation=2), "dilation 2 unsupported"),
])
def test_fuse_dwsep_refusals(kw, reason):
    g = _block_graph(cin=16, cout=16, h=10, **kw)
    out, refusals = fuse_dwsep(g, SOC)
    assert_graph_equal(out, g)   # refused: the graph as it was
    assert len(refusals) == 1 and reason in refusals[0].reason, refusals


def test_fuse_dwsep_linear_dw():
    """DW with no activation (a linear bottleneck input) fuses with act1 = none."""
    g = _block_graph(cin=16, cout=16, h=10, act1="none")
    out, refusals = fuse_dwsep(g, SOC)
    assert not refusals
    assert_graph_equal(out, _fused_expected(g, "none", "relu", ("dw", "pw", "pw_act")))


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
    assert_graph_equal(out, g)
    assert any("consumers" in r.reason for r in refusals), refusals


def test_fuse_dwsep_refuses_when_ub_too_small():
    g = _block_graph(cin=8192, cout=16, h=3, w=3)
    out, refusals = fuse_dwsep(g, SOC)
    assert_graph_equal(out, g)
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
    raw = load_graph(models.dwsep_block(cin=16, cout=16, h=8))
    out, _ = optimize(raw, SOC)
    # by hand: BatchNormalization folded into each bias-free conv, w * k and -mean * k + beta
    folded = {}
    for conv, bn in (("dw", "dw_bn"), ("pw", "pw_bn")):
        w = raw.constants[raw.node(conv).inputs[1]]
        s, beta, mean, var = (raw.constants[t] for t in raw.node(bn).inputs[1:])
        k = s / np.sqrt(var + raw.node(bn).attr("epsilon"))
        folded[conv] = (w * k.reshape(-1, 1, 1, 1), beta - mean * k)
    before = graph([make_node("dw", "Conv", ["x", "wd", "bd"], ["a"],
                              **conv_attrs((3, 3), group=16, pads=(1, 1, 1, 1))),
                    make_node("a1", "Relu", ["a"], ["b"]),
                    make_node("pw", "Conv", ["b", "wp", "bp"], ["p"], **conv_attrs()),
                    make_node("a2", "Relu", ["p"], ["y"])], ["x"], ["y"],
                   {k: ((1, 16, 8, 8), F32) for k in "xabpy"}
                   | {"wd": ((16, 1, 3, 3), F32), "bd": ((16,), F32), "wp": ((16, 16, 1, 1), F32),
                      "bp": ((16,), F32)},
                   {"wd": folded["dw"][0], "bd": folded["dw"][1], "wp": folded["pw"][0], "bp": folded["pw"][1]})
    expected = _fused_expected(before, "relu", "relu", ("dw", "dw_act", "pw", "pw_act"), fmt="blocked")
    assert_graph_equal(out, expected, rtol=1e-5)
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
    g = _with_act(op, **attrs)
    out, refusals = fuse_dwsep(g, SOC)
    assert not refusals
    # a single slope becomes an attribute: no slope operand, no slope constant left
    assert_graph_equal(out, _fused_expected(g, act1, "relu", ("dw", "dw_act", "pw", "pw_act")))


def test_fuse_dwsep_refuses_per_channel_prelu_and_open_clip():
    slope = np.linspace(0.1, 0.3, 16, dtype=np.float32).reshape(16, 1, 1)
    g = _with_act("PRelu", _consts={"slope": slope})
    out, refusals = fuse_dwsep(g, SOC)
    assert_graph_equal(out, g)
    assert len(refusals) == 1 and "per-channel slope (16 values)" in refusals[0].reason
    g = _with_act("Clip", min=-math.inf, max=4.0)
    out, refusals = fuse_dwsep(g, SOC)
    assert_graph_equal(out, g)
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
    assert not refusals
    # x, w_dw, b_dw, w_pw, b_pw, s_dw, s_pw, residual (passes/fuse_dwsep: FUSED_WEIGHTS, FUSED_SLOPES);
    # the slopes flattened to one value per channel
    expected = _fused_expected(g, "prelu", "prelu", ("dw", "dw_act", "pw", "pw_act", "add"), residual=True,
                               slopes=[("sd", s1.reshape(16)), ("sp", s2.reshape(16))])
    assert_graph_equal(out, expected)
    n = out.nodes[0]
    slopes = fused_slope_inputs(n)
    assert list(slopes) == ["s_dw", "s_pw"] and fused_data_inputs(n) == ("x", "x")
    np.testing.assert_array_equal(out.constants[slopes["s_dw"]], s1.reshape(16))
    np.testing.assert_array_equal(out.constants[slopes["s_pw"]], s2.reshape(16))


def test_fuse_dwsep_per_channel_prelu_after_pw_only():
    one = np.full((16, 1, 1), 0.25, np.float32)   # one slope: leakyrelu, no operand
    s2 = np.linspace(0.1, 2.0, 24, dtype=np.float32).reshape(24, 1, 1)
    g = _with_prelu_acts(one, s2)
    out, refusals = fuse_dwsep(g, SOC, per_channel=True)
    assert not refusals
    expected = _fused_expected(g, "leakyrelu(0.25)", "prelu", ("dw", "dw_act", "pw", "pw_act"),
                               slopes=[("sp", s2.reshape(24))])
    assert_graph_equal(out, expected)
    n = out.nodes[0]
    assert len(n.inputs) == 6 and list(fused_slope_inputs(n)) == ["s_pw"] and fused_data_inputs(n) == ("x",)


def test_fuse_dwsep_prelu_slope_along_a_spatial_axis_is_refused():
    s1 = np.linspace(0.1, 0.3, 8, dtype=np.float32)   # (8,) broadcasts along W, not channels
    g = _with_prelu_acts(s1, np.full((24, 1, 1), 0.2, np.float32))
    out, refusals = fuse_dwsep(g, SOC, per_channel=True)
    assert_graph_equal(out, g)
    assert len(refusals) == 1 and "varies along a spatial axis" in refusals[0].reason
