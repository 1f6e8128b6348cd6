"""ONNX import: normalized node forms, shapes on every edge, and one-line errors."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from fusion.core.errors import (
    MegafuseError,
    ModelLoadError,
    ShapeError,
    UnsupportedModelError,
)
from fusion.core.ir import TensorType
from fusion.frontend.onnx_import import load_graph, parse_input_shape

F32 = TensorProto.FLOAT
RNG = np.random.default_rng(0)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def model(nodes, inputs, outputs, inits=(), opset=17, name="g"):
    """inputs / outputs: (name, shape) or (name, shape, elem_type); shape None = no shape."""
    def vi(spec):
        n, shape, *et = spec
        return helper.make_tensor_value_info(n, et[0] if et else F32, shape)
    g = helper.make_graph(list(nodes), name, [vi(i) for i in inputs], [vi(o) for o in outputs],
                          list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def ort_outputs(m, feeds=None):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    if feeds is None:
        feeds = {}
        for i in sess.get_inputs():
            dt = np.float16 if i.type == "tensor(float16)" else np.float32
            feeds[i.name] = rand(*i.shape, dtype=dt)
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds))), feeds


def check_graph(g, m=None):
    """Every edge typed, nodes topologically ordered, shapes agree with onnx/ORT."""
    seen = set(g.inputs) | set(g.constants)
    for n in g.nodes:
        for t in n.inputs:
            assert t in seen, f"{n.name} reads {t} before it is produced"
            assert isinstance(g.types[t], TensorType)
        for t in n.outputs:
            assert isinstance(g.types[t], TensorType)
            seen.add(t)
    for t in list(g.inputs) + list(g.outputs) + list(g.constants):
        assert t in g.types
        assert g.types[t].dtype in ("float32", "float16")
    for k, v in g.constants.items():
        assert g.types[k].shape == v.shape and g.types[k].dtype == v.dtype.name
    assert not set(g.inputs) & set(g.constants)
    assert len({n.name for n in g.nodes}) == len(g.nodes)
    if m is not None:
        # onnx's shape inference (cross-check only) must agree on every tensor it knows
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
            if vi.name not in g.types:
                continue
            dims = [d.dim_value if d.HasField("dim_value") else None
                    for d in vi.type.tensor_type.shape.dim]
            if None not in dims:
                assert tuple(dims) == g.types[vi.name].shape, vi.name
        outs, _ = ort_outputs(m)
        for k, v in outs.items():
            assert g.types[k].shape == v.shape, k
            assert g.types[k].dtype == v.dtype.name, k


def one_line(exc_info):
    msg = str(exc_info.value)
    assert "\n" not in msg and msg
    assert isinstance(exc_info.value, MegafuseError)
    return msg


def conv_model(x_shape, w_shape, bias=False, opset=17, **attrs):
    ins = ["x", "w"] + (["b"] if bias else [])
    inits = [init("w", rand(*w_shape))] + ([init("b", rand(w_shape[0]))] if bias else [])
    node = helper.make_node("Conv", ins, ["y"], name="conv", **attrs)
    return model([node], [("x", list(x_shape))], [("y", None)], inits, opset)


# --------------------------------------------------------------------------------------------
# Conv
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3, 5, 7])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("group", [1, 4])
def test_conv_kernels_strides_groups(k, stride, group):
    m = conv_model((1, 4, 9, 10), (8, 4 // group, k, k), bias=True, strides=[stride, stride],
                   pads=[k // 2] * 4, group=group, kernel_shape=[k, k])
    g = load_graph(m)
    (n,) = g.nodes
    assert n.op_type == "Conv" and n.inputs == ("x", "w", "b") and n.outputs == ("y",)
    assert n.attr("kernel") == (k, k)
    assert n.attr("strides") == (stride, stride)
    assert n.attr("pads") == (k // 2,) * 4
    assert n.attr("dilations") == (1, 1)
    assert n.attr("group") == group and isinstance(n.attr("group"), int)
    assert set(dict(n.attrs)) == {"kernel", "strides", "pads", "dilations", "group"}
    check_graph(g, m)


def _equivalent_explicit(m_auto, pads):
    m = onnx.ModelProto()
    m.CopyFrom(m_auto)
    node = m.graph.node[0]
    keep = [a for a in node.attribute if a.name != "auto_pad"]
    del node.attribute[:]
    node.attribute.extend(keep + [helper.make_attribute("pads", list(pads))])
    return m


@pytest.mark.parametrize("auto_pad,expect", [
    ("SAME_UPPER", (0, 0, 1, 1)),   # odd total padding: extra at the end
    ("SAME_LOWER", (1, 1, 0, 0)),   # ... or at the beginning
    ("VALID", (0, 0, 0, 0)),
    ("NOTSET", (0, 0, 0, 0)),
])
def test_conv_auto_pad(auto_pad, expect):
    m = conv_model((1, 2, 8, 8), (3, 2, 3, 3), strides=[2, 2], auto_pad=auto_pad)
    g = load_graph(m)
    n = g.nodes[0]
    assert n.attr("pads") == expect
    assert "auto_pad" not in dict(n.attrs)
    check_graph(g, m)
    # numerically identical to the explicit-pads model
    out_auto, feeds = ort_outputs(m)
    out_explicit, _ = ort_outputs(_equivalent_explicit(m, expect), feeds)
    np.testing.assert_allclose(out_auto["y"], out_explicit["y"], rtol=1e-5, atol=1e-5)


def test_conv_same_upper_even_kernel_stride1():
    m = conv_model((1, 1, 7, 6), (1, 1, 4, 2), auto_pad="SAME_UPPER")
    g = load_graph(m)
    assert g.nodes[0].attr("pads") == (1, 0, 2, 1)   # (top, left, bottom, right)
    assert g.types["y"].shape == (1, 1, 7, 6)
    check_graph(g, m)


def test_conv_asymmetric_pads_and_dilation():
    m = conv_model((2, 3, 10, 11), (6, 3, 3, 3), pads=[0, 1, 2, 3], dilations=[2, 1])
    g = load_graph(m)
    n = g.nodes[0]
    assert n.attr("pads") == (0, 1, 2, 3)
    assert n.attr("dilations") == (2, 1)
    assert n.inputs == ("x", "w")
    assert g.types["y"] == TensorType((2, 6, 8, 13), "float32")
    check_graph(g, m)


def test_conv_depthwise_kernel4_recorded():
    m = conv_model((1, 8, 12, 12), (8, 1, 4, 4), group=8)
    n = load_graph(m).nodes[0]
    assert n.attr("kernel") == (4, 4) and n.attr("group") == 8


def test_conv_errors():
    w3 = rand(4, 2, 3)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="c1d")], [("x", [1, 2, 9])],
              [("y", None)], [init("w", w3)])
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert "c1d" in one_line(e) and "2-D" in str(e.value)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="cw")],
              [("x", [1, 2, 5, 5]), ("w", [4, 2, 3, 3])], [("y", None)])
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert "'cw'" in one_line(e) and "'w'" in str(e.value) and "constant" in str(e.value)
    with pytest.raises(ShapeError):
        load_graph(conv_model((1, 3, 5, 5), (4, 2, 3, 3)))   # channel mismatch


# --------------------------------------------------------------------------------------------
# BatchNormalization
# --------------------------------------------------------------------------------------------
def bn_model(outputs=("y",), graph_outputs=("y",), training_mode=None, opset=15):
    c = 4
    inits = [init("s", rand(c)), init("bb", rand(c)), init("mu", rand(c)),
             init("var", np.abs(rand(c)) + 0.5)]
    kw = {} if training_mode is None else {"training_mode": training_mode}
    node = helper.make_node("BatchNormalization", ["x", "s", "bb", "mu", "var"], list(outputs),
                            name="bn", epsilon=1e-3, **kw)
    return model([node], [("x", [2, c, 3, 3])], [(o, None) for o in graph_outputs], inits, opset)


def test_batchnorm():
    m = bn_model()
    g = load_graph(m)
    (n,) = g.nodes
    assert n.inputs == ("x", "s", "bb", "mu", "var") and n.outputs == ("y",)
    assert dict(n.attrs) == {"epsilon": pytest.approx(1e-3)}
    assert isinstance(n.attr("epsilon"), float)
    for t in ("s", "bb", "mu", "var"):
        assert g.is_constant(t) and g.types[t].shape == (4,)
    check_graph(g, m)


def test_batchnorm_default_epsilon_and_unused_extra_outputs_dropped():
    c = 2
    inits = [init(n, np.ones(c, np.float32)) for n in ("s", "bb", "mu", "var")]
    node = helper.make_node("BatchNormalization", ["x", "s", "bb", "mu", "var"],
                            ["y", "rm", "rv", "sm", "sv"], name="bn")   # BN-9 allows 1 or 5 outputs
    m = model([node], [("x", [1, c, 2, 2])], [("y", None)], inits, opset=9)
    (n,) = load_graph(m).nodes
    assert n.outputs == ("y",) and n.attr("epsilon") == pytest.approx(1e-5)


def test_batchnorm_training_errors():
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(bn_model(training_mode=1))
    assert "'bn'" in one_line(e) and "training" in str(e.value)
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(bn_model(outputs=("y", "rm", "rv"), graph_outputs=("y", "rm")))
    assert "'bn'" in one_line(e) and "'rm'" in str(e.value)


# --------------------------------------------------------------------------------------------
# activations
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Relu", "Sigmoid", "HardSwish", "Identity"])
def test_plain_activations(op):
    m = model([helper.make_node(op, ["x"], ["y"], name="a")], [("x", [1, 3, 4, 4])], [("y", None)])
    g = load_graph(m)
    (n,) = g.nodes
    assert n.op_type == op and n.inputs == ("x",) and n.attrs == ()
    check_graph(g, m)


def test_hardsigmoid_defaults():
    m = model([helper.make_node("HardSigmoid", ["x"], ["y"], name="hs1"),
               helper.make_node("HardSigmoid", ["y"], ["z"], name="hs2", alpha=1 / 6, beta=0.5)],
              [("x", [1, 3, 4, 4])], [("z", None)])
    g = load_graph(m)
    a, b = g.nodes
    assert dict(a.attrs) == {"alpha": pytest.approx(0.2), "beta": pytest.approx(0.5)}
    assert dict(b.attrs) == {"alpha": pytest.approx(1 / 6), "beta": pytest.approx(0.5)}
    check_graph(g, m)


def test_clip_attribute_form():
    m = model([helper.make_node("Clip", ["x"], ["y"], name="c", min=0.0, max=6.0),
               helper.make_node("Clip", ["y"], ["z"], name="c2", max=3.0)],
              [("x", [1, 3, 4, 4])], [("z", None)], opset=7)   # Clip-6 (attributes); opset >= 7 supported
    a, b = load_graph(m).nodes
    assert a.inputs == ("x",) and dict(a.attrs) == {"min": 0.0, "max": 6.0}
    assert b.attr("min") == -math.inf and b.attr("max") == 3.0
    assert isinstance(a.attr("min"), float) and isinstance(a.attr("max"), float)


def test_clip_input_form():
    nodes = [helper.make_node("Constant", [], ["six"], value_float=6.0),
             helper.make_node("Clip", ["x", "zero", "six"], ["y"], name="relu6"),
             helper.make_node("Clip", ["y", "", "six"], ["z"], name="maxonly"),
             helper.make_node("Clip", ["z", "zero"], ["w"], name="minonly"),
             helper.make_node("Clip", ["w"], ["v"], name="none")]
    m = model(nodes, [("x", [1, 3, 4, 4])], [("v", None)],
              [init("zero", np.array(0.0, np.float32))], opset=13)
    g = load_graph(m)
    a, b, c, d = g.nodes
    assert all(n.op_type == "Clip" and len(n.inputs) == 1 for n in g.nodes)
    assert (a.attr("min"), a.attr("max")) == (0.0, 6.0)
    assert (b.attr("min"), b.attr("max")) == (-math.inf, 6.0)
    assert (c.attr("min"), c.attr("max")) == (0.0, math.inf)
    assert (d.attr("min"), d.attr("max")) == (-math.inf, math.inf)
    assert not g.constants   # folded bounds are not kept
    check_graph(g, m)


def test_clip_non_constant_bound():
    m = model([helper.make_node("Clip", ["x", "lo"], ["y"], name="clipx")],
              [("x", [1, 3]), ("lo", [])], [("y", None)], opset=13)
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert "'clipx'" in one_line(e) and "'lo'" in str(e.value)


# --------------------------------------------------------------------------------------------
# element-wise binary
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Mul", "Add", "Sub", "Div"])
def test_binary_broadcast(op):
    m = model([helper.make_node(op, ["x", "c"], ["y"], name="b"),
               helper.make_node("Mul", ["y", "s"], ["z"], name="m")],
              [("x", [2, 4, 3, 3]), ("s", [2, 4, 1, 1])], [("z", None)],
              [init("c", np.abs(rand(4, 1, 1)) + 1)])
    g = load_graph(m)
    b, mm = g.nodes
    assert b.inputs == ("x", "c") and b.attrs == ()
    assert g.types["c"].shape == (4, 1, 1) and g.is_constant("c")
    assert g.types["z"].shape == (2, 4, 3, 3)
    assert g.inputs == ("x", "s")
    check_graph(g, m)


def test_div_non_constant_divisor():
    """A run-time divisor (a normalization written out) is a Div node like any other binary op;
    its kernel is checked against ORT in test_ops_vision."""
    m = model([helper.make_node("Div", ["x", "y"], ["z"], name="div_1")],
              [("x", [1, 4]), ("y", [3, 1])], [("z", None)])
    g = load_graph(m)
    assert [(n.op_type, n.inputs) for n in g.nodes] == [("Div", ("x", "y"))]
    assert g.types["z"].shape == (3, 4)


def test_broadcast_mismatch():
    m = model([helper.make_node("Add", ["x", "y"], ["z"], name="add")],
              [("x", [1, 4]), ("y", [1, 3])], [("z", None)])
    with pytest.raises(ShapeError) as e:
        load_graph(m)
    assert "'add'" in one_line(e)


# --------------------------------------------------------------------------------------------
# pooling / reductions
# --------------------------------------------------------------------------------------------
def test_global_average_pool():
    m = model([helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap")],
              [("x", [2, 5, 7, 3])], [("y", None)])
    g = load_graph(m)
    assert g.types["y"].shape == (2, 5, 1, 1) and g.nodes[0].attrs == ()
    check_graph(g, m)


@pytest.mark.parametrize("axes,keep", [([2, 3], 1), ([-1, -2], 0), ([3, -2], None)])
def test_reduce_mean_attribute_form(axes, keep):
    kw = {"axes": axes} | ({} if keep is None else {"keepdims": keep})
    m = model([helper.make_node("ReduceMean", ["x"], ["y"], name="rm", **kw)],
              [("x", [2, 5, 7, 3])], [("y", None)], opset=13)
    g = load_graph(m)
    n = g.nodes[0]
    k = 1 if keep is None else keep
    assert dict(n.attrs) == {"axes": (2, 3), "keepdims": k} and n.inputs == ("x",)
    assert g.types["y"].shape == ((2, 5, 1, 1) if k else (2, 5))
    check_graph(g, m)


@pytest.mark.parametrize("keep", [0, 1])
def test_reduce_mean_input_form(keep):
    m = model([helper.make_node("ReduceMean", ["x", "ax"], ["y"], name="rm", keepdims=keep)],
              [("x", [2, 5, 7, 3])], [("y", None)], [init("ax", np.array([-2, 3], np.int64))],
              opset=18)
    g = load_graph(m)
    n = g.nodes[0]
    assert n.inputs == ("x",) and dict(n.attrs) == {"axes": (2, 3), "keepdims": keep}
    assert "ax" not in g.constants and "ax" not in g.types
    check_graph(g, m)


@pytest.mark.parametrize("opset,axes", [(13, [1]), (13, None), (18, [1, 2, 3])])
def test_reduce_mean_non_spatial(opset, axes):
    if opset >= 18:
        node = helper.make_node("ReduceMean", ["x", "ax"], ["y"], name="rmc")
        inits = [init("ax", np.array(axes, np.int64))]
    else:
        node = helper.make_node("ReduceMean", ["x"], ["y"], name="rmc",
                                **({} if axes is None else {"axes": axes}))
        inits = []
    m = model([node], [("x", [2, 5, 7, 3])], [("y", None)], inits, opset)
    g = load_graph(m)  # the general reduction (kernel checked against ORT in test_ops_vision)
    n, = g.nodes
    assert n.op_type == "ReduceMean" and n.attr("general") == 1
    assert n.attr("axes") == tuple(axes or range(4))
    check_graph(g, m)


# --------------------------------------------------------------------------------------------
# shape ops
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis,expect_axis,shape", [(None, 1, (2, 60)), (-1, 3, (24, 5)),
                                                    (0, 0, (1, 120))])
def test_flatten(axis, expect_axis, shape):
    kw = {} if axis is None else {"axis": axis}
    m = model([helper.make_node("Flatten", ["x"], ["y"], name="f", **kw)],
              [("x", [2, 3, 4, 5])], [("y", None)])
    g = load_graph(m)
    assert g.nodes[0].attr("axis") == expect_axis and g.types["y"].shape == shape
    check_graph(g, m)


@pytest.mark.parametrize("target,expect", [([0, -1], (2, 60)), ([-1, 0, 2, 10], (2, 3, 2, 10)),
                                           ([0, 0, 20], (2, 3, 20))])
def test_reshape(target, expect):
    m = model([helper.make_node("Reshape", ["x", "shp"], ["y"], name="r")],
              [("x", [2, 3, 4, 5])], [("y", None)], [init("shp", np.array(target, np.int64))])
    g = load_graph(m)
    (n,) = g.nodes
    assert n.inputs == ("x",) and dict(n.attrs) == {"shape": expect}
    assert g.types["y"].shape == expect and "shp" not in g.constants
    check_graph(g, m)


def test_reshape_non_constant_shape():
    m = model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
              [("x", [2, 3]), ("s", [2], TensorProto.INT64)], [("y", None)])
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert "'rs'" in one_line(e) and "'s'" in str(e.value)


def test_reshape_bad_count():
    m = model([helper.make_node("Reshape", ["x", "shp"], ["y"], name="r")],
              [("x", [2, 3])], [("y", None)], [init("shp", np.array([4, -1], np.int64))])
    with pytest.raises(ShapeError):
        load_graph(m)


# --------------------------------------------------------------------------------------------
# matrix ops
# --------------------------------------------------------------------------------------------
def test_gemm_defaults_and_trans():
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc"),
             helper.make_node("Gemm", ["y", "w2"], ["z"], name="fc2", transB=1, alpha=0.5)]
    m = model(nodes, [("x", [2, 8])], [("z", None)],
              [init("w", rand(8, 10)), init("b", rand(10)), init("w2", rand(3, 10))], opset=13)
    g = load_graph(m)
    a, b = g.nodes
    assert dict(a.attrs) == {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}
    assert a.inputs == ("x", "w", "b") and b.inputs == ("y", "w2")
    assert dict(b.attrs) == {"alpha": 0.5, "beta": 1.0, "transA": 0, "transB": 1}
    assert isinstance(a.attr("alpha"), float) and isinstance(a.attr("transA"), int)
    assert g.types["y"].shape == (2, 10) and g.types["z"].shape == (2, 3)
    check_graph(g, m)


def test_matmul():
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
              [("x", [2, 3, 8])], [("y", None)], [init("w", rand(8, 5))])
    g = load_graph(m)
    assert g.types["y"].shape == (2, 3, 5) and g.nodes[0].attrs == ()
    check_graph(g, m)


# --------------------------------------------------------------------------------------------
# Constant nodes, fp16, whole-graph properties
# --------------------------------------------------------------------------------------------
def test_constant_nodes():
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
                 np.full((1, 3, 1, 1), 2.0, np.float32))),
             helper.make_node("Constant", [], ["cf"], value_floats=[1.0, 2.0, 3.0, 4.0]),
             helper.make_node("Constant", [], ["shp"], value_ints=[1, -1]),
             helper.make_node("Mul", ["x", "c"], ["y"]),
             helper.make_node("Add", ["y", "cf"], ["z"]),
             helper.make_node("Reshape", ["z", "shp"], ["r"])]
    m = model(nodes, [("x", [1, 3, 2, 4])], [("r", None)])
    g = load_graph(m)
    assert [n.op_type for n in g.nodes] == ["Mul", "Add", "Reshape"]
    assert [n.name for n in g.nodes] == ["Mul_3", "Add_4", "Reshape_5"]
    np.testing.assert_array_equal(g.constants["c"], np.full((1, 3, 1, 1), 2.0, np.float32))
    np.testing.assert_array_equal(g.constants["cf"], np.arange(1, 5, dtype=np.float32))
    assert set(g.constants) == {"c", "cf"}
    assert g.nodes[2].attr("shape") == (1, 24)
    check_graph(g, m)


def test_float16_kept():
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[1, 1, 1, 1]),
               helper.make_node("Relu", ["y"], ["z"])],
              [("x", [1, 2, 5, 5], TensorProto.FLOAT16)], [("z", None, TensorProto.FLOAT16)],
              [init("w", rand(4, 2, 3, 3, dtype=np.float16))])
    g = load_graph(m)
    assert {t.dtype for t in g.types.values()} == {"float16"}
    assert g.constants["w"].dtype == np.float16
    check_graph(g, m)


def _mobilenet_block(shuffle=False):
    c, e = 4, 8
    inits = [init("w_exp", rand(e, c, 1, 1)), init("w_dw", rand(e, 1, 3, 3)),
             init("w_pw", rand(c, e, 1, 1)), init("b_pw", rand(c))]
    for p in ("bn1", "bn2"):
        inits += [init(f"{p}_s", rand(e)), init(f"{p}_b", rand(e)), init(f"{p}_m", rand(e)),
                  init(f"{p}_v", np.abs(rand(e)) + 1)]
    nodes = [
        helper.make_node("Conv", ["x", "w_exp"], ["t1"], name="expand"),
        helper.make_node("BatchNormalization", ["t1", "bn1_s", "bn1_b", "bn1_m", "bn1_v"], ["t2"]),
        helper.make_node("Clip", ["t2", "lo", "hi"], ["t3"]),
        helper.make_node("Conv", ["t3", "w_dw"], ["t4"], name="dw", group=e, strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["t4", "bn2_s", "bn2_b", "bn2_m", "bn2_v"], ["t5"]),
        helper.make_node("HardSwish", ["t5"], ["t6"]),
        helper.make_node("GlobalAveragePool", ["t6"], ["se0"]),
        helper.make_node("HardSigmoid", ["se0"], ["se1"]),
        helper.make_node("Mul", ["t6", "se1"], ["t7"]),
        helper.make_node("Conv", ["t7", "w_pw", "b_pw"], ["t8"], name="project"),
        helper.make_node("Identity", ["t8"], ["y"]),
    ]
    inits += [init("lo", np.array(0.0, np.float32)), init("hi", np.array(6.0, np.float32))]
    if shuffle:
        nodes = nodes[::-1]
    m = model(nodes, [("x", ["N", c, 8, 8])], [("y", None)], inits, opset=17)
    # old-style model: initializers also listed as graph inputs
    m.graph.input.extend([helper.make_tensor_value_info("w_exp", F32, [e, c, 1, 1])])
    return m


def test_block_every_edge_typed_and_ordered():
    m = _mobilenet_block()
    g = load_graph(m, {"x": (1, 4, 8, 8)})
    assert g.inputs == ("x",)   # initializers excluded even when listed as inputs
    assert g.outputs == ("y",)
    assert [n.op_type for n in g.nodes] == [
        "Conv", "BatchNormalization", "Clip", "Conv", "BatchNormalization", "HardSwish",
        "GlobalAveragePool", "HardSigmoid", "Mul", "Conv", "Identity"]
    assert [n.name for n in g.nodes][:3] == ["expand", "BatchNormalization_1", "Clip_2"]
    assert g.types["t4"].shape == (1, 8, 4, 4) and g.types["y"].shape == (1, 4, 4, 4)
    assert "lo" not in g.constants and "hi" not in g.constants
    m_fixed = onnx.ModelProto()
    m_fixed.CopyFrom(m)
    m_fixed.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    check_graph(g, m_fixed)


def test_unsorted_onnx_nodes_are_toposorted():
    g = load_graph(_mobilenet_block(shuffle=True), {"x": (2, 4, 8, 8)})
    check_graph(g)
    assert g.nodes[0].name == "expand" and g.nodes[-1].op_type == "Identity"


def test_unique_generated_names():
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("Relu", ["a"], ["b"], name="Relu_0"),
             helper.make_node("Relu", ["b"], ["c"], name="dup"),
             helper.make_node("Relu", ["c"], ["d"], name="dup")]
    g = load_graph(model(nodes, [("x", [1, 2])], [("d", None)]))
    names = [n.name for n in g.nodes]
    assert len(set(names)) == 4 and names[1] == "Relu_0" and names[2] == "dup"
    assert names[0] != "Relu_0"


def test_load_from_path_str_bytes_proto(tmp_path):
    m = _mobilenet_block()
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    shapes = {"x": (1, 4, 8, 8)}
    gs = [load_graph(src, shapes) for src in (p, str(p), p.read_bytes(), m)]
    for g in gs[1:]:
        assert g.nodes == gs[0].nodes and dict(g.types) == dict(gs[0].types)


# --------------------------------------------------------------------------------------------
# input shapes
# --------------------------------------------------------------------------------------------
def _dyn_model():
    return model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                 [("x", ["N", 3, 224, 224])], [("y", None)])


def test_symbolic_input_needs_shape():
    with pytest.raises(ShapeError) as e:
        load_graph(_dyn_model())
    assert one_line(e) == ("input 'x' has dynamic shape [N, 3, 224, 224]; "
                           "pass --input-shape x=1x3x224x224")
    g = load_graph(_dyn_model(), {"x": (2, 3, 224, 224)})
    assert g.types["x"].shape == (2, 3, 224, 224) and g.types["y"].shape == (2, 3, 224, 224)


def test_unknown_rank_input_needs_shape():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", None)], [("y", None)])
    with pytest.raises(ShapeError) as e:
        load_graph(m)
    assert "'x'" in one_line(e) and "--input-shape" in str(e.value)
    assert load_graph(m, {"x": (1, 2, 3)}).types["y"].shape == (1, 2, 3)


@pytest.mark.parametrize("shapes,words", [
    ({"y": (1, 3, 224, 224)}, ["'y'", "not a graph input"]),
    ({"x": (1, 3, 224)}, ["rank"]),
    ({"x": (1, 4, 224, 224)}, ["dim 1"]),
    ({"x": (0, 3, 224, 224)}, [">= 1"]),
])
def test_bad_input_shapes(shapes, words):
    with pytest.raises(ShapeError) as e:
        load_graph(_dyn_model(), shapes)
    msg = one_line(e)
    assert all(w in msg for w in words), msg


def test_input_shape_for_initializer():
    m = conv_model((1, 2, 5, 5), (3, 2, 3, 3))
    with pytest.raises(ShapeError) as e:
        load_graph(m, {"w": (3, 2, 3, 3)})
    assert "initializer" in one_line(e)


def test_parse_input_shape():
    assert parse_input_shape("x=1x3x224x224") == ("x", (1, 3, 224, 224))
    assert parse_input_shape(" input:0 = 1X3X8X8 ") == ("input:0", (1, 3, 8, 8))
    assert parse_input_shape("x=1,3,8,8") == ("x", (1, 3, 8, 8))
    assert parse_input_shape("x=7") == ("x", (7,))


@pytest.mark.parametrize("text", ["x", "=1x3", "x=", "x=1x3x", "x=1xx3", "x=1x-3x4", "x=1x0x4",
                                  "x=ax3", "x=1.5x3", "x=NxC"])
def test_parse_input_shape_bad(text):
    with pytest.raises(ShapeError) as e:
        parse_input_shape(text)
    one_line(e)


# --------------------------------------------------------------------------------------------
# load / model errors
# --------------------------------------------------------------------------------------------
def test_missing_file(tmp_path):
    p = tmp_path / "nope.onnx"
    with pytest.raises(ModelLoadError) as e:
        load_graph(p)
    assert str(p) in one_line(e) and "not found" in str(e.value)
    with pytest.raises(ModelLoadError) as e:
        load_graph(tmp_path)
    one_line(e)


def test_truncated_file(tmp_path):
    data = _mobilenet_block().SerializeToString()
    p = tmp_path / "half.onnx"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError) as e:
        load_graph(p, {"x": (1, 4, 8, 8)})
    assert str(p) in one_line(e)


@pytest.mark.parametrize("content", [b"", b"hello, this is not an onnx model\n",
                                     b"ir_version: 8\ngraph { }\n", bytes(range(256))])
def test_not_onnx(tmp_path, content):
    p = tmp_path / "bad.onnx"
    p.write_bytes(content)
    with pytest.raises(ModelLoadError) as e:
        load_graph(p)
    assert str(p) in one_line(e)


def test_bad_model_argument():
    with pytest.raises(ModelLoadError):
        load_graph(42)


def test_unknown_operator():
    m = model([helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="lstm_1", hidden_size=2)],
              [("x", [1, 1, 2])], [("y", None)],
              [init("w", rand(1, 8, 2)), init("r", rand(1, 8, 2))])
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert one_line(e) == "unsupported operator 'LSTM' (node 'lstm_1')"


def test_unnamed_unknown_operator_and_custom_domain():
    m = model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Hardmax", ["a"], ["y"])],
              [("x", [1, 4])], [("y", None)])
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert one_line(e) == "unsupported operator 'Hardmax' (node 'Hardmax_1')"
    m = model([helper.make_node("FusedConv", ["x"], ["y"], name="fc", domain="com.microsoft")],
              [("x", [1, 4])], [("y", None)])
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert "com.microsoft.FusedConv" in one_line(e)


def test_dangling_tensor():
    m = model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")],
              [("x", [1, 4])], [("y", None)])
    with pytest.raises(ModelLoadError) as e:
        load_graph(m)
    assert "'ghost'" in one_line(e) and "'add'" in str(e.value)


def test_output_not_produced():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", [1, 4])], [("z", None)])
    with pytest.raises(ModelLoadError) as e:
        load_graph(m)
    assert "'z'" in one_line(e)


def test_unsupported_dtypes():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", [1, 4], TensorProto.INT32)],
              [("y", None, TensorProto.INT32)])
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert "'x'" in one_line(e) and "int32" in str(e.value)
    m = model([helper.make_node("Add", ["x", "k"], ["y"], name="a")], [("x", [1, 4], TensorProto.DOUBLE)],
              [("y", None, TensorProto.DOUBLE)], [init("k", np.ones(4))])
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert "'x'" in one_line(e) and "float64" in str(e.value)
    m = model([helper.make_node("Mul", ["x", "k"], ["y"], name="a")], [("x", [1, 4])],
              [("y", None)], [init("k", np.ones(4, np.int64))])
    with pytest.raises(UnsupportedModelError) as e:
        load_graph(m)
    assert "'k'" in one_line(e) and "int64" in str(e.value)


def test_declared_output_shape_mismatch():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", [1, 4])], [("y", [1, 5])])
    with pytest.raises(ShapeError) as e:
        load_graph(m)
    assert "'y'" in one_line(e)


def test_external_data(tmp_path):
    m = _mobilenet_block()
    expect = numpy_helper.to_array(next(t for t in m.graph.initializer if t.name == "w_dw"))
    p = tmp_path / "ext.onnx"
    onnx.save_model(m, p, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.data", size_threshold=0)
    g = load_graph(p, {"x": (1, 4, 8, 8)})
    np.testing.assert_array_equal(g.constants["w_dw"], expect)
    (tmp_path / "ext.data").unlink()
    with pytest.raises(ModelLoadError) as e:
        load_graph(p, {"x": (1, 4, 8, 8)})
    one_line(e)


def test_names_with_newlines_stay_one_line():
    m = model([helper.make_node("Add", ["x", "gh\nost"], ["y"], name="a\nb")],
              [("x", [1, 4])], [("y", None)])
    with pytest.raises(ModelLoadError) as e:
        load_graph(m)
    assert "gh\\nost" in one_line(e)
