"""fold_affine: constant scale/shift nodes around the DW and PW convs fold into the chain
(exactly: compared with ONNX Runtime), and every one that cannot fold says why."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from factories import F32, SOC, assert_graph_equal, graph
from fusion.core.ir import NC1HWC0, make_node
from fusion.driver.compiler import compile_model
from fusion.frontend.onnx_import import load_graph
from fusion.verify.check import check_model
from passes import optimize
from passes.fuse_dwsep import FUSED_OP

C, CO, H, W = 24, 40, 9, 11


def _chain(pre=(), post=(), after=(), act="Relu", tail=None, seed=0, width=W):
    """x -> DW 3x3 (pad 1) -> pre... -> act -> post... -> PW 1x1 -> after... -> Relu -> [tail] -> y.
    pre/post/after: (op, constant shape, constant first?, sign) tuples."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
        return name

    def affine(t, spec, tag):
        for i, (op, shape, const_first, sign) in enumerate(spec):
            v = rng.uniform(0.5, 1.5, shape) * sign if op in ("Mul", "Div") else rng.normal(0, 0.3, shape)
            c = init(f"{tag}{i}_c", v)
            out = f"{tag}{i}"
            nodes.append(helper.make_node(op, [c, t] if const_first else [t, c], [out], name=out))
            t = out
        return t

    t = "x"
    nodes.append(helper.make_node("Conv", [t, init("w_dw", rng.normal(0, 0.4, (C, 1, 3, 3)))], ["dw"],
                                  name="dw", group=C, kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    t = affine("dw", pre, "pre")
    nodes.append(helper.make_node(act, [t], ["act1"], name="act1"))
    t = affine("act1", post, "post")
    nodes.append(helper.make_node("Conv", [t, init("w_pw", rng.normal(0, 0.3, (CO, C, 1, 1))),
                                           init("b_pw", rng.normal(0, 0.1, CO))], ["pw"], name="pw"))
    t = affine("pw", after, "after")
    nodes.append(helper.make_node("Relu", [t], ["act2"], name="act2"))
    t = "act2"
    if tail is not None:   # an affine as the graph output, or before a padded conv
        op, shape, sign, conv = tail
        c = init("tail_c", rng.uniform(0.5, 1.5, shape) * sign if op == "Mul" else rng.normal(0, 0.3, shape))
        nodes.append(helper.make_node(op, [t, c], ["tail"], name="tail"))
    if tail is not None and conv:
        nodes.append(helper.make_node("Conv", ["tail", init("w_dw2", rng.normal(0, 0.4, (CO, 1, 3, 3)))], ["dw2"],
                                      name="dw2", group=CO, kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        t = "dw2"
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "affine", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, CO, H, width])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


S, PC = (), (1, C, 1, 1)   # scalar / per-channel constants (DW side); PW side uses (1, CO, 1, 1)
FOLDS = {
    "scale-shift before act": dict(pre=[("Mul", S, False, 1), ("Add", S, False, 1)]),
    "per-channel before act": dict(pre=[("Mul", PC, True, -1), ("Add", (C, 1, 1), False, 1)]),
    "sub and div forms": dict(pre=[("Sub", PC, False, 1), ("Sub", S, True, 1), ("Div", PC, False, 1)]),
    "after relu (positive scale, shift)": dict(post=[("Mul", PC, False, 1), ("Add", PC, False, 1)]),
    "after relu6 (negative scale)": dict(post=[("Mul", PC, False, -1), ("Sub", S, False, 1)], act="Clip"),
    "after hardswish": dict(post=[("Div", S, False, -1), ("Add", PC, False, 1)], act="HardSwish"),
    "after pw conv": dict(after=[("Mul", (1, CO, 1, 1), False, -1), ("Add", (CO, 1, 1), True, 1)]),
    "linear dw with shift": dict(pre=[("Add", PC, False, 1)], act="Identity"),
}


def _clip_bounds(m):
    """Clip(0, 6) as the opset-14 form (min/max inputs)."""
    for n in m.graph.node:
        if n.op_type == "Clip":
            m.graph.initializer.extend([numpy_helper.from_array(np.array(0, np.float32), "lo"),
                                        numpy_helper.from_array(np.array(6, np.float32), "hi")])
            n.input.extend(["lo", "hi"])
    return m


def _apply(op, const_first, v, scale, shift):
    """(scale, shift) of `t -> op(t, v)` composed after `t -> t * scale + shift`, by hand."""
    if op == "Mul":
        return scale * v, shift * v
    if op == "Div":
        return scale / v, shift / v
    if op == "Add":
        return scale, shift + v
    return (-scale, v - shift) if const_first else (scale, shift - v)   # Sub: c - t or t - c


def _expected_fused(m, pre=(), post=(), after=(), act="Relu", pw_scale=None, tail=(), tail_consts=None, **_):
    """The fused graph by hand: each affine's (scale, shift) per channel, folded into the conv beside it
    (pre: DW weights and bias, post: the PW conv's input side W' = W diag(s), b' = b + W t, or a
    positive scale behind a Relu into the DW, after and pw_scale: the PW conv's output side); the DW
    had no bias. `tail`: nodes after the chain (reading "a2", writing "y"), their constants in tail_consts."""
    init = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    w_dw, w_pw, b_pw = init["w_dw"], init["w_pw"], init["b_pw"]

    def affine(spec, tag, n):
        scale, shift = np.ones(n), np.zeros(n)
        for i, (op, shape, const_first, _sign) in enumerate(spec):
            v = np.broadcast_to(init[f"{tag}{i}_c"].reshape(shape), (1, n, 1, 1)).reshape(n) if shape else \
                np.full(n, float(init[f"{tag}{i}_c"]))
            scale, shift = _apply(op, const_first, v, scale, shift)
        return scale, shift

    s, t = affine(pre, "pre", C)
    w_dw, b_dw = w_dw * s[:, None, None, None], t
    s, t = affine(post, "post", C)
    if act == "Relu" and (s > 0).all():   # relu(a) s = relu(a s) for s > 0: the scale moves into the DW
        w_dw, b_dw, s = w_dw * s[:, None, None, None], b_dw * s, np.ones(C)
    w_pw, b_pw = w_pw * s[None, :, None, None], b_pw + w_pw[:, :, 0, 0] @ t
    s, t = affine(after, "after", CO)
    w_pw, b_pw = w_pw * s[:, None, None, None], b_pw * s + t
    if pw_scale is not None:
        w_pw, b_pw = w_pw * pw_scale[:, None, None, None], b_pw * pw_scale
    consts = {k: v.astype(np.float32) for k, v in dict(wd=w_dw, bd=b_dw, wp=w_pw, bp=b_pw).items()}
    consts |= tail_consts or {}
    act1 = {"Relu": "relu", "Clip": "relu6", "HardSwish": "hardswish", "Identity": "none"}[act]
    members = ("dw", "act1", "pw", "act2") if act != "Identity" else ("dw", "pw", "act2")
    blocked = lambda c: ((1, -(-c // 16), H, W, 16), F32, NC1HWC0, c)   # noqa: E731
    return graph([
        make_node("to", "ToNC1HWC0", ["x"], ["xb"]),
        make_node("f", FUSED_OP, ["xb", "wd", "bd", "wp", "bp"], ["yb"], act1=act1, act2="relu", kernel=(3, 3),
                  members=members, pads=(1, 1, 1, 1), residual=False, strides=(1, 1)),
        make_node("back", "ToNCHW", ["yb"], ["a2" if tail else "y"]),
        *tail,
    ], ["x"], ["y"], {k: ((1, CO, H, W), F32) for k in ("y", "a2", "t")}
        | {"x": ((1, C, H, W), F32), "xb": blocked(C), "yb": blocked(CO)}
        | {k: (v.shape, F32) for k, v in consts.items()}, consts)


def _init(m, name):
    return next(numpy_helper.to_array(t) for t in m.graph.initializer if t.name == name)


DW2 = dict(kernel=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1), group=CO)


@pytest.mark.parametrize("case", FOLDS)
def test_affine_folds_into_the_chain_exactly(case):
    m = _clip_bounds(_chain(**FOLDS[case]))
    onnx.checker.check_model(m, full_check=True)
    g, refusals = optimize(load_graph(m), SOC)
    assert not refusals
    assert_graph_equal(g, _expected_fused(m, **FOLDS[case]), rtol=1e-5)
    cm = compile_model(m, target="llvm")
    r = check_model(m, cm)
    assert r.passed and r.conclusive and r.max_rel < 1e-5, r.to_json()


def test_scale_behind_relu_needs_a_positive_scale():
    """PW -> Relu -> Mul(s) as the graph output: s > 0 moves before the Relu (into the PW conv);
    s < 0 cannot (relu(z) s != relu(s z))."""
    pos = _chain(tail=("Mul", (1, CO, 1, 1), 1, False))
    g, refusals = optimize(load_graph(pos), SOC)
    assert not refusals
    assert_graph_equal(g, _expected_fused(pos, pw_scale=_init(pos, "tail_c").reshape(CO).astype(np.float64)),
                       rtol=1e-5)
    assert check_model(pos, compile_model(pos, target="llvm")).max_rel < 1e-5
    neg = _chain(tail=("Mul", (1, CO, 1, 1), -1, False))
    g, refusals = optimize(load_graph(neg), SOC)
    tail_c = _init(neg, "tail_c")
    assert_graph_equal(g, _expected_fused(neg, tail=[make_node("tail", "Mul", ["a2", "c"], ["y"])],
                                          tail_consts={"c": tail_c}), rtol=1e-5)
    (r,) = [r for r in refusals if r.pass_name == "fold_affine"]
    assert r.nodes == ("tail",) and "entries <= 0" in r.reason
    assert check_model(neg, compile_model(neg, target="llvm")).max_rel < 1e-5


def test_scale_folds_forward_into_a_padded_conv():
    """A pure scale is exact through zero padding (0 * s = 0): it folds into the next DW conv."""
    m = _chain(tail=("Mul", (1, CO, 1, 1), -1, True))
    g, refusals = optimize(load_graph(m), SOC)
    # dw2(a s) = dw2 with its weights scaled per input channel (= its channel), bias 0
    w = _init(m, "w_dw2") * _init(m, "tail_c").reshape(CO, 1, 1, 1)
    expected = _expected_fused(m, tail=[make_node("dw2", "Conv", ["a2", "w2", "b2"], ["y"], **DW2)],
                               tail_consts={"w2": w, "b2": np.zeros(CO, np.float32)})
    assert_graph_equal(g, expected, rtol=1e-6)
    assert not [r for r in refusals if r.pass_name == "fold_affine"]
    assert check_model(m, compile_model(m, target="llvm")).max_rel < 1e-5


def test_shift_before_a_padded_conv_is_refused_with_reason():
    m = _chain(tail=("Add", (1, CO, 1, 1), 1, True))
    g, refusals = optimize(load_graph(m), SOC)
    (r,) = [r for r in refusals if r.pass_name == "fold_affine"]
    assert "padding" in r.reason and "a shift does not commute with Relu" in r.reason
    tail = [make_node("tail", "Add", ["a2", "c"], ["t"]), make_node("dw2", "Conv", ["t", "w2"], ["y"], **DW2)]
    assert_graph_equal(g, _expected_fused(m, tail=tail, tail_consts={"c": _init(m, "tail_c"),
                                                                     "w2": _init(m, "w_dw2")}))
    assert check_model(m, compile_model(m, target="llvm")).max_rel < 1e-5


def test_constant_along_width_is_not_per_channel():
    """A [C] constant broadcasts along W in ONNX, not along channels: no fold, no fusion."""
    m = _chain(pre=[("Mul", (C,), False, 1)], width=C)
    g, refusals = optimize(load_graph(m), SOC)
    assert_graph_equal(g, load_graph(m))   # every pass leaves the imported graph as it was
    assert FUSED_OP not in [n.op_type for n in g.nodes]
    assert any(r.pass_name == "fuse_dwsep" and "Mul" in r.reason for r in refusals)
    assert check_model(m, compile_model(m, target="llvm")).max_rel < 1e-5
