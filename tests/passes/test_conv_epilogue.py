"""passes/conv_epilogue: a conv absorbs its activation and residual Add (llvm target), only when
the tensors that become internal have no other use; the merged kernels match ONNX Runtime."""

import numpy as np

import models
from factories import assert_graph_equal, graph
from fusion.verify.check import check_model
from fusion.driver.compiler import compile_model
from fusion.core.ir import TensorType, make_node
from passes.conv_epilogue import fold_conv_epilogues

S = (1, 4, 6, 6)


def _graph(nodes, outputs):
    types = {t: TensorType(S, "float32") for n in nodes for t in (*n.inputs, *n.outputs) if t and t not in ("w", "b")}
    types["w"] = TensorType((4, 4, 1, 1), "float32")
    consts = {"w": np.ones((4, 4, 1, 1), np.float32)}
    if any("b" in n.inputs for n in nodes):   # a conv bias
        types["b"], consts["b"] = TensorType((4,), "float32"), np.arange(4, dtype=np.float32)
    return graph(nodes, ("x", "r"), outputs, types, consts)


CONV = dict(kernel=(1, 1), group=1, strides=(1, 1), pads=(0, 0, 0, 0))


def _conv(out="c"):
    return make_node("conv", "Conv", ["x", "w"], [out], **CONV)


def test_activation_and_residual_fold_into_the_conv():
    g = _graph([_conv(), make_node("act", "Relu6", ["c"], ["a"]), make_node("add", "Add", ["r", "a"], ["y"])], ["y"])
    out = fold_conv_epilogues(g)
    # one Conv: no bias (""), the residual as its 4th input, the act and the Add as attributes
    expected = _graph([make_node("conv", "Conv", ["x", "w", "", "r"], ["y"], epilogue_act="relu6", residual=True,
                                 **CONV)], ["y"])
    assert_graph_equal(out, expected)
    assert out.nodes[0].inputs == ("x", "w", "", "r") and out.nodes[0].outputs == ("y",)


def test_a_used_intermediate_stays_a_node():
    # the activation's output is also a graph output: the Add cannot be absorbed, the act can
    g = _graph([_conv(), make_node("act", "Relu", ["c"], ["a"]), make_node("add", "Add", ["r", "a"], ["y"])],
               ["y", "a"])
    out = fold_conv_epilogues(g)
    expected = _graph([make_node("conv", "Conv", ["x", "w", ""], ["a"], epilogue_act="relu", residual=False, **CONV),
                       make_node("add", "Add", ["r", "a"], ["y"])], ["y", "a"])
    assert_graph_equal(out, expected)
    # the conv output has two users: nothing folds
    g2 = _graph([_conv(), make_node("act", "Relu", ["c"], ["a"]), make_node("add", "Add", ["c", "a"], ["y"])], ["y"])
    assert fold_conv_epilogues(g2) is g2
    # a Conv that already has a bias keeps it, and a lone act after it folds
    g3 = _graph([make_node("conv", "Conv", ["x", "w", "b"], ["c"], **CONV), make_node("act", "Relu", ["c"], ["y"])],
                ["y"])
    expected = _graph([make_node("conv", "Conv", ["x", "w", "b"], ["y"], epilogue_act="relu", residual=False,
                                 **CONV)], ["y"])
    assert_graph_equal(fold_conv_epilogues(g3), expected)


def test_unfused_llvm_mobilenet_v2_runs_one_kernel_per_conv_and_matches_ort():
    m = models.build("mobilenet_v2", resolution=32, width=0.35)
    cm = compile_model(m, target="llvm", fuse=False)
    kinds = cm.graph.op_counts()
    assert "Relu6" not in kinds and "Add" not in kinds, kinds   # every act and residual in a conv
    assert len(cm.program.steps) == len(cm.graph.nodes)
    assert check_model(m, cm).passed
