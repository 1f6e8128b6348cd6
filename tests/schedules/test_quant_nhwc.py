"""The channels-last int8 kernels of VNNI CPUs (schedules/quant_nhwc*.py, quant_layout.py): exact
against ONNX Runtime's int8 kernels on odd shapes (channels not a multiple of 4 or 16, stride 2,
dilation, asymmetric padding, int8 activations), the layout decision, and the NCHW fallback where
VNNI is absent."""

import logging

import numpy as np
import pytest
from onnx import TensorProto, helper

import schedules.quant_layout as ql
from fusion.driver.compiler import compile_model
from fusion.frontend.onnx_import import load_graph
from fusion.verify.check import check_model
from fusion.verify.reference import run_ort
from models.quantized import dwsep_int8, quantize_qdq
from passes.quant_fuse import quant_fuse
from passes.quant_gemm import quant_gemm
from schedules.quant_nhwc_ops import quant_kernel
from schedules.quant_vnni import has_vnni

logging.getLogger("root").setLevel(logging.ERROR)   # ORT's quantizer warns about pre-processing
VNNI = has_vnni()


def _conv_model(cin, cout, h, w, k, s, pads, seed=0):
    """Conv(k×k, stride s, pads) + Relu, float; quantized by the caller."""
    rng = np.random.default_rng(seed)
    wt = helper.make_tensor("W", TensorProto.FLOAT, [cout, cin, k, k],
                            (rng.standard_normal((cout, cin, k, k)) * 0.3).astype(np.float32).ravel())
    bt = helper.make_tensor("B", TensorProto.FLOAT, [cout], rng.standard_normal(cout).astype(np.float32))
    oh, ow = (h + pads[0] + pads[2] - k) // s + 1, (w + pads[1] + pads[3] - k) // s + 1
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[k, k], strides=[s, s],
                          pads=[pads[0], pads[1], pads[2], pads[3]]),
         helper.make_node("Relu", ["c"], ["y"])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, oh, ow])], [wt, bt])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _kinds(m, fuse=True):
    g, _ = quant_fuse(load_graph(m), fuse=fuse)
    return {n.name: quant_kernel(n, g).schedule for n in g.nodes if n.op_type in ("QConv", "QDwSep", "QAdd")}


def _exact(m, fuse=True, blocks=None):
    cm = compile_model(m, target="llvm", fuse=fuse)
    if blocks is not None:
        assert len(cm.int8_blocks) == blocks
    r = check_model(m, cm)
    assert r.max_abs == 0.0 and r.passed, r
    return cm


@pytest.mark.parametrize("per_channel,act", [(False, "int8"), (True, "uint8")])
def test_fused_block_odd_channels_stride2(per_channel, act):
    # 5 DW channels (packed tile padded to 8), 20 outputs (neither 16 nor 8 lanes), 9x7, stride 2
    m = dwsep_int8(per_channel=per_channel, activation_type=act, cin=5, cout=20, h=9, w=7, stride=2)
    assert _kinds(m)["dw"] == ("quant_nhwc_dwsep_vnni" if VNNI else "quant_dwsep")
    _exact(m, blocks=1)


@pytest.mark.parametrize("swap", [False, True])
def test_dilated_asymmetric_residual_fused_and_unfused(swap):
    m = dwsep_int8(per_channel=True, cin=32, cout=32, h=11, w=13, kernel=5, dilation=2,
                   pads=(4, 3, 4, 5), residual=True, act2="relu6")
    if swap:   # the block's output as the Add's second input (the epilogue keeps QLinearAdd's order)
        add = next(n for n in m.graph.node if n.op_type == "Add")
        add.input[0], add.input[1] = add.input[1], add.input[0]
    cm = _exact(m, blocks=1)
    if VNNI:   # the residual QAdd runs in the block's epilogue (passes/quant_residual)
        assert "QAdd" not in cm.graph.op_counts() and len(cm.int8_blocks[0][1]) == 3
    if VNNI:   # unfused: the standalone DW, the 1x1 reading its NHWC input directly, QAdd
        assert set(_kinds(m, fuse=False).values()) == {"quant_nhwc_dw_vnni", "quant_nhwc_direct_vnni",
                                                       "quant_nhwc_ew"}
    _exact(m, fuse=False, blocks=0)


@pytest.mark.parametrize("act", ["uint8", "int8"])
def test_dense_kxk_conv_three_channels_padded(act):
    # the stem's form: 3 input channels (packed to 4), 3x3 stride 2, asymmetric padding, 17 outputs
    m = quantize_qdq(_conv_model(3, 17, 15, 13, 3, 2, (1, 0, 2, 1)), per_channel=True, activation_type=act)
    if VNNI:
        assert set(_kinds(m).values()) == {"quant_nhwc_dense_vnni"}
    _exact(m)


def test_layout_decision():
    m = dwsep_int8(per_channel=True, cin=24, cout=24, h=13, w=11, residual=True)
    g, _ = quant_fuse(load_graph(m))
    cl = ql.channels_last(g)
    if not VNNI:
        assert cl == frozenset()
        return
    q, block, add, dq = g.nodes
    # the quantized input, the block's output and the residual sum: int8 between int8 kernels
    assert cl == {q.outputs[0], block.outputs[0], add.outputs[0]}
    assert not cl & set(g.outputs) and dq.outputs[0] not in cl


def test_nchw_fallback_without_vnni(monkeypatch):
    monkeypatch.setattr(ql, "has_vnni", lambda: False)
    m = dwsep_int8(per_channel=True, cin=24, cout=24, h=13, w=11, residual=True)
    assert not any(k.startswith("quant_nhwc") for k in _kinds(m).values())
    _exact(m, blocks=1)


def test_quantize_rounds_half_to_even_4d():
    # the NHWC quantize kernel rounds through 1.5*2^23: ties, saturation, both dtypes
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0, 126.5, -126.5, 127.5, 254.5, -2.5],
                 np.float32).reshape(1, 3, 2, 2)
    for dt, zp in ((TensorProto.UINT8, 0), (TensorProto.UINT8, 3), (TensorProto.INT8, 0), (TensorProto.INT8, -5)):
        m = helper.make_model(helper.make_graph(
            [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], "q",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 2, 2])],
            [helper.make_tensor("s", TensorProto.FLOAT, [], [1.0]), helper.make_tensor("z", dt, [], [zp])]),
            opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        cm = compile_model(m, target="llvm")
        if VNNI:
            assert cm.program.steps[0].out_shape == (1, 2, 2, 3)   # stored NHWC
        np.testing.assert_array_equal(cm.run({"x": x})["y"], run_ort(m, {"x": x})["y"])


def _gemm_model(n, k, o, trans_b, seed=0):
    rng = np.random.default_rng(seed)
    shape = (o, k) if trans_b else (k, o)
    wt = helper.make_tensor("W", TensorProto.FLOAT, shape, (rng.standard_normal(shape) * 0.2).astype(np.float32).ravel())
    bt = helper.make_tensor("B", TensorProto.FLOAT, [o], rng.standard_normal(o).astype(np.float32))
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W", "B"], ["y"], transB=trans_b)], "gemm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, o])], [wt, bt])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("trans_b,per_channel,act,vnni", [
    (1, True, "uint8", True), (0, False, "int8", True), (1, True, "int8", False)])
def test_qgemm_exact(monkeypatch, trans_b, per_channel, act, vnni):
    # K = 37 (packed to 40), O = 21 (no whole 8 lanes), batch 3; vnni=False: the plain int32 kernel
    import schedules.quant_nhwc_ops as qo
    if not vnni:
        monkeypatch.setattr(qo, "has_vnni", lambda: False)
    m = quantize_qdq(_gemm_model(3, 37, 21, trans_b), per_channel=per_channel, activation_type=act)
    g = quant_gemm(quant_fuse(load_graph(m))[0])
    qg = next(n for n in g.nodes if n.op_type == "QGemm")
    assert quant_kernel(qg, g).schedule == ("quant_nhwc_gemm_vnni" if vnni and VNNI else "quant_nhwc_gemm")
    cm = _exact(m)
    assert "QGemm" in cm.graph.op_counts() and "Gemm" not in cm.graph.op_counts()
    assert "QGemm" not in compile_model(m, target="sim").graph.op_counts()   # the CPU's kernel only


def test_parallel_row_tiles_exact(monkeypatch):
    # the large layers' path (row tiles on the pool's threads), forced on a small block of its own
    # shape (the kernel caches key on the computation, not on this threshold)
    import schedules.quant_nhwc_schedule as qs
    monkeypatch.setattr(qs, "PARALLEL_MIN_US", 0.0)
    m = dwsep_int8(per_channel=True, cin=40, cout=48, h=10, w=9, stride=2, residual=False)
    _exact(m, blocks=1)
    _exact(m, fuse=False, blocks=0)


@pytest.mark.parametrize("act,hw", [("uint8", (7, 7)), ("int8", (5, 3))])
def test_qglobalavgpool_exact(act, hw):
    # DQ -> GlobalAveragePool -> Q as ORT's QLinearGlobalAveragePool: the integer pool on llvm
    rng = np.random.default_rng(1)
    c = 20
    wt = helper.make_tensor("W", TensorProto.FLOAT, [c, 3, 3, 3], (rng.standard_normal((c, 3, 3, 3)) * 0.4).astype(np.float32).ravel())
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "W"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["p"]),
         helper.make_node("Flatten", ["p"], ["y"])], "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, *hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c])], [wt])
    m = quantize_qdq(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8),
                     activation_type=act)
    cm = _exact(m)
    assert "QGlobalAvgPool" in cm.graph.op_counts() and "GlobalAveragePool" not in cm.graph.op_counts()
