"""passes/stem_layout: a dense conv feeding a blocked region writes NC1HWC0 itself (llvm), no
ToNC1HWC0 node; its kernel (schedules/cpu_conv.conv_to_blocked_kernel) matches ONNX Runtime on
odd shapes (channel tails, stride 2, asymmetric pads), with its activation folded in."""

import numpy as np
import pytest

import models
from factories import F32, assert_graph_equal, conv_attrs, graph
from fusion.core.ir import NC1HWC0, make_node
from fusion.driver.compiler import compile_model
from fusion.verify.check import check_model
from passes.stem_layout import convs_write_blocked

DENSE = ((1, 3, 8, 8), F32)
STEM = ((1, 20, 4, 4), F32)
BLOCKED = ((1, 2, 4, 4, 16), F32, NC1HWC0, 20)
W = {"w": np.ones((20, 3, 3, 3), np.float32), "b": np.arange(20, dtype=np.float32)}
W_TYPES = {"w": ((20, 3, 3, 3), F32), "b": ((20,), F32)}


def _stem(outputs=("y",), group=1, extra=()):
    """x -> Conv 3x3 s2 (3 -> 20) -> t -> ToNC1HWC0 -> tb -> Relu -> y (blocked) [-> extra]."""
    conv = conv_attrs((3, 3), group=group, pads=(1, 1, 1, 1), strides=(2, 2))
    w = W if group == 1 else {"w": np.ones((20, 1, 3, 3), np.float32), "b": W["b"]}
    return graph([make_node("stem", "Conv", ["x", "w", "b"], ["t"], **conv),
                  make_node("to", "ToNC1HWC0", ["t"], ["tb"]),
                  make_node("act", "Relu", ["tb"], ["y"]), *extra], ["x"], outputs,
                 {"x": DENSE if group == 1 else ((1, 20, 8, 8), F32), "t": STEM, "tb": BLOCKED, "y": BLOCKED,
                  "z": STEM} | {k: (v.shape, F32) for k, v in w.items()}, w)


def test_conv_writes_blocked_before_expected():
    expected = graph([make_node("stem", "Conv", ["x", "w", "b"], ["tb"],
                                **conv_attrs((3, 3), pads=(1, 1, 1, 1), strides=(2, 2))),
                      make_node("act", "Relu", ["tb"], ["y"])], ["x"], ["y"],
                     {"x": DENSE, "tb": BLOCKED, "y": BLOCKED} | W_TYPES, W)
    assert_graph_equal(convs_write_blocked(_stem()), expected)


@pytest.mark.parametrize("case", ["second use", "graph output", "grouped conv"])
def test_conv_keeps_the_conversion_when_illegal(case):
    g = {"second use": lambda: _stem(("y", "z"), extra=[make_node("r", "Relu", ["t"], ["z"])]),
         "graph output": lambda: _stem(("y", "t")),
         "grouped conv": lambda: _stem(group=20)}[case]()
    assert convs_write_blocked(g) is g


@pytest.mark.parametrize("resolution,width", [(33, 0.35), (40, 0.5)])
def test_stem_writes_blocked_and_matches_ort(resolution, width):
    m = models.build("mobilenet_v1", resolution=resolution, width=width)
    cm = compile_model(m, target="llvm")
    g = cm.graph
    stem = g.nodes[0]
    assert stem.op_type == "Conv" and stem.attr("epilogue_act") == "relu"
    assert g.types[stem.outputs[0]].layout == NC1HWC0
    assert "ToNC1HWC0" not in g.op_counts()
    res = check_model(m, cm)
    assert res.passed, res.describe() if hasattr(res, "describe") else res


def test_other_targets_keep_the_conversion():
    m = models.build("mobilenet_v1", resolution=33, width=0.35)
    g = compile_model(m, target="sim").graph
    assert "ToNC1HWC0" in g.op_counts()
