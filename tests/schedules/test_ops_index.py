"""Operators with integer or boolean run-time tensors (ArgMax/ArgMin, comparisons, Where with a
run-time condition, Gather with run-time indices) and InstanceNormalization / LpPool, compiled as
unfused kernels on llvm, sim and ascend and compared with ONNX Runtime on odd shapes (the
reference's input sensitivity asserted by test_ops_vision._check)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import fusion
from fusion.verify.check import compare, ort_reference, random_inputs
from fusion.core.tolerance import TOLERANCE
from fusion.core.errors import ShapeError, UnsupportedModelError
from fusion.frontend.onnx_import import load_graph
from fusion.verify.sensitivity import relative_change

from factories import check_ops_model as _check
from test_ops_vision import node, rand

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def model(nodes, inputs, outputs=(("y", F32),), inits=(), opset=13):
    g = helper.make_graph(
        list(nodes), "g", [helper.make_tensor_value_info(n, F32, s) for n, s in inputs],
        [helper.make_tensor_value_info(o, t, None) for o, t in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m




X = [2, 5, 7, 3]
CASES = {
    "argmax_axis1": model([node("ArgMax", ["x"], axis=1)], [("x", X)], outputs=(("y", I64),)),
    "argmin_last_nokeep": model([node("ArgMin", ["x"], axis=-1, keepdims=0, select_last_index=1)],
                                [("x", X)], outputs=(("y", I64),)),
    # ties: Floor makes equal values, so first vs last index differ
    "argmax_ties_first_last": model([node("Floor", ["x"], ["f"]), node("ArgMax", ["f"], ["a"], axis=2),
                                     node("ArgMax", ["f"], ["b"], axis=2, select_last_index=1)],
                                    [("x", [3, 4, 9])], outputs=(("a", I64), ("b", I64))),
    "instance_norm": model([node("InstanceNormalization", ["x", "s", "b"], epsilon=1e-3)], [("x", X)],
                           inits=[("s", rand(5)), ("b", rand(5))]),
    "instance_norm_3d": model([node("InstanceNormalization", ["x", "s", "b"])], [("x", [3, 4, 11])],
                              inits=[("s", rand(4)), ("b", rand(4))]),
    "lppool_p2": model([node("LpPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
                       [("x", [1, 5, 13, 11])]),
    "lppool_p1": model([node("LpPool", ["x"], kernel_shape=[2, 3], strides=[2, 1], p=1)],
                       [("x", [2, 3, 9, 7])]),
    "lppool_p2_ceil_dil_opset18": model([node("LpPool", ["x"], kernel_shape=[2, 2], strides=[2, 2],
                                              dilations=[2, 1], ceil_mode=1)], [("x", [1, 3, 12, 9])], opset=18),
    # run-time Where: the condition is computed from the input
    "where_greater_bcast": model([node("Greater", ["x", "c"], ["m"]), node("Where", ["m", "x", "x2"])],
                                 [("x", [2, 5, 7]), ("x2", [5, 7])], inits=[("c", rand(7))]),
    "where_logic_const_branch": model([node("Less", ["x", "z"], ["lt"]), node("GreaterOrEqual", ["x2", "z"], ["ge"]),
                                       node("And", ["lt", "ge"], ["a"]), node("Not", ["a"], ["na"]),
                                       node("Where", ["na", "k", "x"])],
                                      [("x", [3, 1, 9]), ("x2", [3, 4, 1])],
                                      inits=[("z", np.float32(0.1)), ("k", rand(4, 9))]),
    "comparison_outputs": model([node("Floor", ["x"], ["f"]), node("Floor", ["x2"], ["f2"]),
                                 node("Equal", ["f", "f2"], ["eq"]), node("LessOrEqual", ["x", "x2"], ["le"]),
                                 node("Or", ["le", "eq"], ["y"])],
                                [("x", [4, 5]), ("x2", [4, 5])], outputs=(("y", BOOL),)),
    # run-time Gather: the indices are an ArgMax of the input
    "gather_argmax_indices": model([node("ArgMax", ["x2"], ["i"], axis=1, keepdims=0),
                                    node("Gather", ["x", "i"], axis=1)], [("x", [2, 7, 5]), ("x2", [3, 7])]),
    "gather_2d_indices_axis0": model([node("ArgMin", ["x2"], ["i"], axis=0),
                                      node("Gather", ["x", "i"], axis=0)], [("x", [6, 5]), ("x2", [6, 2, 3])]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_ort(case):
    m = CASES[case]
    _check(m, "llvm")
    cm = _check(m, "sim")
    assert not cm.fused_blocks and len(cm.program.steps) >= 1


# fp16 storage (fp32 arithmetic); the comparisons read the inputs directly, so no fp16 rounding
# moves a value across a threshold
FP16 = ["argmax_axis1", "instance_norm", "lppool_p2", "lppool_p1", "where_greater_bcast",
        "gather_argmax_indices"]


@pytest.mark.parametrize("case", FP16)
def test_op_fp16(case):
    _check(CASES[case], "sim", "float16")


@pytest.mark.parametrize("soc", ["ascend310p3", "ascend910b3"])
@pytest.mark.parametrize("case", ["argmax_ties_first_last", "instance_norm", "lppool_p2",
                                  "where_logic_const_branch", "gather_2d_indices_axis0"])
def test_op_on_ascend(case, soc):
    _check(CASES[case], f"ascend:{soc}")


def test_integer_tensor_into_float_op_is_one_line_error():
    m = model([node("ArgMax", ["x"], ["i"], axis=1), node("Relu", ["i"])], [("x", X)])
    with pytest.raises(UnsupportedModelError, match="'i' has dtype int64") as e:
        load_graph(m)
    assert "\\n" not in str(e.value)


@pytest.mark.parametrize("nodes, inits, match", [
    ([node("Where", ["x", "x", "x"])], [], "not bool"),
    ([node("Gather", ["x", "x"], axis=1)], [], "not int64/int32"),
    ([node("LpPool", ["x"], kernel_shape=[2, 2], p=0)], [], "p=0"),
    ([node("InstanceNormalization", ["x", "s", "s"])], [("s", rand(3))], "3 values for 5 channels"),
])
def test_bad_forms_are_refused(nodes, inits, match):
    with pytest.raises((UnsupportedModelError, ShapeError), match=match):
        load_graph(model(nodes, [("x", X)], inits=inits))
