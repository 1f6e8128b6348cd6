"""fold_affine: constant scale/shift nodes around the DW and PW convs fold into the chain
(exactly: compared with ONNX Runtime), and every one that cannot fold says why."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fusion.verify.check import check_model
from fusion.driver.compiler import compile_model
from fusion.frontend.onnx_import import load_graph
from fusion.core.soc import get_soc
from passes import optimize
from passes.fuse_dwsep import FUSED_OP

SOC = get_soc("ascend910b2")
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


@pytest.mark.parametrize("case", FOLDS)
def test_affine_folds_into_the_chain_exactly(case):
    m = _clip_bounds(_chain(**FOLDS[case]))
    onnx.checker.check_model(m, full_check=True)
    g, refusals = optimize(load_graph(m), SOC)
    assert [n.op_type for n in g.nodes if n.op_type not in ("ToNC1HWC0", "ToNCHW")] == [FUSED_OP], refusals
    assert not refusals
    cm = compile_model(m, target="llvm")
    r = check_model(m, cm)
    assert r.passed and r.conclusive and r.max_rel < 1e-5, r.to_json()


def test_scale_behind_relu_needs_a_positive_scale():
    """PW -> Relu -> Mul(s) as the graph output: s > 0 moves before the Relu (into the PW conv);
    s < 0 cannot (relu(z) s != relu(s z))."""
    pos = _chain(tail=("Mul", (1, CO, 1, 1), 1, False))
    g, refusals = optimize(load_graph(pos), SOC)
    assert "Mul" not in [n.op_type for n in g.nodes] and not refusals
    assert check_model(pos, compile_model(pos, target="llvm")).max_rel < 1e-5
    neg = _chain(tail=("Mul", (1, CO, 1, 1), -1, False))
    g, refusals = optimize(load_graph(neg), SOC)
    (r,) = [r for r in refusals if r.pass_name == "fold_affine"]
    assert r.nodes == ("tail",) and "entries <= 0" in r.reason
    assert check_model(neg, compile_model(neg, target="llvm")).max_rel < 1e-5


def test_scale_folds_forward_into_a_padded_conv():
    """A pure scale is exact through zero padding (0 * s = 0): it folds into the next DW conv."""
    m = _chain(tail=("Mul", (1, CO, 1, 1), -1, True))
    g, refusals = optimize(load_graph(m), SOC)
    assert "Mul" not in [n.op_type for n in g.nodes]
    assert not [r for r in refusals if r.pass_name == "fold_affine"]
    assert check_model(m, compile_model(m, target="llvm")).max_rel < 1e-5


def test_shift_before_a_padded_conv_is_refused_with_reason():
    m = _chain(tail=("Add", (1, CO, 1, 1), 1, True))
    g, refusals = optimize(load_graph(m), SOC)
    (r,) = [r for r in refusals if r.pass_name == "fold_affine"]
    assert "padding" in r.reason and "a shift does not commute with Relu" in r.reason
    assert "Add" in [n.op_type for n in g.nodes]
    assert check_model(m, compile_model(m, target="llvm")).max_rel < 1e-5


def test_constant_along_width_is_not_per_channel():
    """A [C] constant broadcasts along W in ONNX, not along channels: no fold, no fusion."""
    m = _chain(pre=[("Mul", (C,), False, 1)], width=C)
    g, refusals = optimize(load_graph(m), SOC)
    assert FUSED_OP not in [n.op_type for n in g.nodes]
    assert any(r.pass_name == "fuse_dwsep" and "Mul" in r.reason for r in refusals)
    assert check_model(m, compile_model(m, target="llvm")).max_rel < 1e-5
