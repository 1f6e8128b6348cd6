"""int8 (QDQ) models: what ORT's quantizer writes, the import, the quant_fuse pass, and the
compiled kernels against ONNX Runtime's int8 kernels (exact)."""

import logging

import numpy as np
import onnx
import pytest
from conftest import run_cli
from onnx import TensorProto, helper, numpy_helper

from fusion.verify.check import check_model
from fusion.driver.compiler import compile_model
from fusion.core.errors import MegafuseError, UnsupportedModelError
from fusion.frontend.onnx_import import load_graph
from fusion.verify.reference import run_ort
from fusion.verify.quant_check import int8_tolerance
from models.quantized import dwsep_int8, mobilenet_v2_int8
from passes.quant_fuse import quant_fuse

logging.getLogger("root").setLevel(logging.ERROR)   # ORT's quantizer warns about pre-processing


@pytest.fixture(scope="module")
def pc_block():
    return dwsep_int8(per_channel=True, cin=24, cout=24, h=13, w=11, residual=True)


def _inits(m):
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def test_ort_writes_qdq_as_expected(pc_block):
    ops = [n.op_type for n in pc_block.graph.node]
    assert "Relu" not in ops and "Clip" not in ops           # absorbed into the output ranges
    assert ops.count("Conv") == 2 and ops.count("Add") == 1
    inits = _inits(pc_block)
    w = inits["dw_W_quantized"]
    assert w.dtype == np.int8 and inits["dw_W_scale"].shape == (24,)   # per channel, axis 0
    dq_w = next(n for n in pc_block.graph.node if n.input[0] == "dw_W_quantized")
    assert helper.get_attribute_value(dq_w.attribute[0]) == 0
    b = inits["dw_B_quantized"]
    assert b.dtype == np.int32
    np.testing.assert_array_equal(inits["dw_B_quantized_scale"],
                                  (inits["x_scale"] * inits["dw_W_scale"]).astype(np.float32))
    assert inits["x_zero_point"].dtype == np.uint8
    pt = _inits(dwsep_int8(cin=16, cout=16, h=8))
    assert pt["dw_W_scale"].size == 1                         # the per-tensor default


def test_import_and_pass_structure(pc_block):
    g = load_graph(pc_block)
    assert g.op_counts()["QuantizeLinear"] == 4 and g.op_counts()["Conv"] == 2
    q = g.quant[g.node("dw").inputs[1]]
    assert q.values.dtype == np.int8 and q.axis == 0 and q.scale.shape == (24,)
    g2, why = quant_fuse(g)
    assert [n.op_type for n in g2.nodes] == ["QuantizeLinear", "QDwSep", "QAdd", "DequantizeLinear"]
    assert g2.nodes[1].attr("members") == ("dw", "pw") and not why
    g3, _ = quant_fuse(g, fuse=False)
    assert [n.op_type for n in g3.nodes].count("QConv") == 2


@pytest.mark.parametrize("per_channel,act,residual,stride", [
    (True, "uint8", True, 1), (False, "uint8", False, 2), (True, "int8", True, 1), (False, "int8", False, 1)])
def test_block_exact_vs_ort(per_channel, act, residual, stride):
    m = dwsep_int8(per_channel=per_channel, activation_type=act, cin=24, cout=24 if residual else 40,
                   h=13, w=11, stride=stride, residual=residual, act2="relu6" if residual else "relu")
    for target in ("llvm", "sim"):
        cm = compile_model(m, target=target)
        assert len(cm.int8_blocks) == 1
        r = check_model(m, cm)
        assert r.max_abs == 0.0 and r.int8 is not None and r.int8.tolerance == 0.0 and r.passed


def test_quantize_linear_rounds_half_to_even_and_saturates():
    x = np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0, 126.5]], np.float32)
    for dt, zp, want in ((TensorProto.UINT8, 0, [0, 2, 2, 0, 0, 255, 0, 126]),
                         (TensorProto.INT8, 0, [0, 2, 2, 0, -2, 127, -128, 126])):
        m = helper.make_model(helper.make_graph(
            [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], "q",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
            [helper.make_tensor("s", TensorProto.FLOAT, [], [1.0]), helper.make_tensor("z", dt, [], [zp])]),
            opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        got = compile_model(m, target="llvm").run({"x": x})["y"]
        np.testing.assert_array_equal(got[0], np.array(want, np.float32))
        np.testing.assert_array_equal(got, run_ort(m, {"x": x})["y"])


def test_small_mobilenet_v2_every_block_fused_and_exact():
    m = mobilenet_v2_int8(per_channel=True, resolution=32, width=0.35, num_classes=10)
    cm = compile_model(m, target="llvm")
    assert len(cm.int8_blocks) == 17
    assert not any(n.op_type == "Conv" for n in cm.graph.nodes)
    r = check_model(m, cm)
    assert r.passed and r.max_abs == 0.0
    # on llvm the head is integer too (QGlobalAvgPool, QGemm as ORT runs it): exact required
    assert r.int8.float_ops == () and {"QGemm", "QGlobalAvgPool"} <= set(cm.graph.op_counts())
    sim = compile_model(m, target="sim")   # elsewhere the pool and Gemm stay float: 1 step, named
    assert int8_tolerance(sim.graph, run_ort(m, {"x": np.zeros((1, 3, 32, 32), np.float32)})).float_ops == (
        "Gemm", "GlobalAveragePool")


def test_refusals_are_one_line(capsys, tmp_path, pc_block):
    path = tmp_path / "q.onnx"
    onnx.save(pc_block, path)
    for argv, what in ((["-t", "npuir"], "not supported on -t npuir"),
                       (["-t", "llvm", "--dtype", "float16"], "--dtype float16")):
        code, out, err = run_cli(capsys, "check", str(path), *argv)
        assert code == 2 and err.count("\n") == 1 and what in err and err.startswith("megafuse: error:")
    code, out, err = run_cli(capsys, "bench", str(path), "-t", "sim", "--trace", str(tmp_path / "t.json"))
    assert code == 2 and err.count("\n") == 1 and "--trace is not supported for int8" in err
    code, out, _ = run_cli(capsys, "bench", str(path), "-t", "sim:310p3")   # fusion/report/bench_int8.py
    assert code == 0 and "[MODELED]" in out and "vendor-like int8 unfused" in out
    code, out, _ = run_cli(capsys, "check", str(path), "-t", "llvm")
    assert code == 0 and "int8: 0 output step(s)" in out and "exact required" in out


def test_per_channel_runtime_dequantize_is_refused():
    m = helper.make_model(helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "s2", "z2"], ["y"], axis=1)], "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])],
        [helper.make_tensor("s1", TensorProto.FLOAT, [], [0.1]), helper.make_tensor("z1", TensorProto.UINT8, [], [0]),
         helper.make_tensor("s2", TensorProto.FLOAT, [2], [0.1, 0.2]),
         helper.make_tensor("z2", TensorProto.UINT8, [2], [0, 0])]),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(UnsupportedModelError, match="per-channel DequantizeLinear of a run-time tensor"):
        load_graph(m)
    with pytest.raises(MegafuseError):
        compile_model(m, target="ascend")


def test_vnni_path_taken_when_the_cpu_has_it(pc_block):
    from schedules.quant_ops import quant_kernel
    from schedules.quant_vnni import has_vnni

    g, _ = quant_fuse(load_graph(pc_block))
    spec = quant_kernel(g.nodes[1], g)
    assert spec.schedule == ("quant_dwsep_vnni" if has_vnni() else "quant_dwsep")
    # the exactness of both paths: test_block_exact_vs_ort (24/40 outputs: VNNI where available)


def test_bench_opt_level_all_refuses_int8_on_sim(capsys, tmp_path, pc_block):
    path = tmp_path / "q.onnx"
    onnx.save(pc_block, path)
    code, _, err = run_cli(capsys, "bench", str(path), "-t", "sim", "--opt-level", "all")
    assert code == 2 and err.count("\n") == 1 and "does not model int8" in err
