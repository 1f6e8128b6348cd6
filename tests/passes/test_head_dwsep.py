"""passes/head_dwsep.py: a classifier head (global average pool -> flatten -> Gemm) becomes a DW -> PW
block on the Ascend targets; whole graphs before/expected, numerics against ONNX Runtime on odd
shapes, the head fused and chained, and a head left unfused restored to its original nodes."""

from dataclasses import replace

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from factories import assert_graph_equal
from fusion.driver.compiler import compile_model
from fusion.frontend.onnx_import import load_graph
from fusion.verify.ascend_check import check_ascend
from fusion.verify.check import check_model
from passes.head_dwsep import head_as_dwsep, restore_unfused

N, C, H, W, M = 2, 40, 5, 3, 10


def _head(form: str, n=N, c=C, h=H, w=W, m=M, seed=0):
    """conv 1x1 + relu (a producer on NC1HWC0, as a network's last conv) -> head in `form`:
    gap_flatten (torchvision: GlobalAveragePool -> Flatten -> Gemm transB=1), mean_gemm (timm:
    ReduceMean(2, 3) keepdims=0 -> Gemm transB=0, no bias)."""
    rng = np.random.default_rng(seed)
    inits = {"cw": rng.normal(0, 0.3, (c, 8, 1, 1)), "cb": rng.normal(0, 0.1, c),
             "fw": rng.normal(0, 0.2, (m, c) if form == "gap_flatten" else (c, m)), "fb": rng.normal(0, 0.1, m)}
    nodes = [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c"], ["a"], name="act")]
    if form == "gap_flatten":
        nodes += [helper.make_node("GlobalAveragePool", ["a"], ["p"], name="pool"),
                  helper.make_node("Flatten", ["p"], ["f"], name="flat", axis=1),
                  helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1)]
    else:
        del inits["fb"]
        axes = helper.make_tensor("axes", TensorProto.INT64, [2], [2, 3])
        nodes += [helper.make_node("ReduceMean", ["a", "axes"], ["p"], name="pool", keepdims=0),
                  helper.make_node("Gemm", ["p", "fw"], ["y"], name="fc")]
    inits_p = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()]
    if form != "gap_flatten":
        inits_p.append(axes)
    g = helper.make_graph(nodes, "head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, 8, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, m])], inits_p)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model, inits


def test_gap_flatten_gemm_becomes_dw_pw_flatten_before_expected():
    model, inits = _head("gap_flatten")
    got, heads = head_as_dwsep(load_graph(model))
    assert [h.dw_name for h in heads] == ["pool"]
    rng_free = {"cw": inits["cw"], "cb": inits["cb"], "fb": inits["fb"],
                "pool__w_head": np.full((C, 1, H, W), 1.0 / (H * W)), "pool__b_head": np.zeros(C),
                "fc__w_head": np.asarray(inits["fw"]).reshape(M, C, 1, 1)}
    nodes = [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c"], ["a"], name="act"),
             helper.make_node("Conv", ["a", "pool__w_head", "pool__b_head"], ["p"], name="pool",
                              kernel_shape=[H, W], group=C),
             helper.make_node("Conv", ["p", "fc__w_head", "fb"], ["y__1x1"], name="fc", kernel_shape=[1, 1]),
             helper.make_node("Flatten", ["y__1x1"], ["y"], name="flat", axis=1)]
    g = helper.make_graph(nodes, "head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, 8, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, M])],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in rng_free.items()])
    expected = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    expected.ir_version = 8
    exp = load_graph(expected)   # the pass marks its DW as a head (the vendor pair it is gated against)
    exp = exp.rewrite([n.with_attrs(head=True) if n.name == "pool" else n for n in exp.nodes])
    assert_graph_equal(got, exp, rtol=1e-6)


@pytest.mark.parametrize("why, kw", [("wider than MAX_SIDE", dict(h=9, w=3)), ("alpha != 1", None)])
def test_heads_outside_the_pattern_stay(why, kw):
    model, _ = _head("gap_flatten", **(kw or {}))
    if kw is None:
        fc = next(n for n in model.graph.node if n.name == "fc")
        fc.attribute.append(helper.make_attribute("alpha", 0.5))
    g = load_graph(model)
    got, heads = head_as_dwsep(g)
    assert heads == [] and got is g, why


@pytest.mark.parametrize("form", ["gap_flatten", "mean_gemm"])
@pytest.mark.parametrize("target, dtype", [("sim:ascend910b2", "float16"), ("sim:ascend310p3", "float32")])
def test_head_fused_matches_onnxruntime(form, target, dtype):
    """On the Ascend targets the head is a fused block wherever the fuse gate takes it; either way
    the compiled model computes what ORT does."""
    model, _ = _head(form)
    cm = compile_model(model, target=target, dtype=dtype)
    names = {n.name for n in cm.graph.nodes}
    if any(set(b.members) >= {"pool", "fc"} for b in cm.fused_blocks):
        assert "fc" not in names or cm.graph.node("fc").op_type != "Gemm"
    else:   # left unfused: the original nodes again
        assert {"pool", "fc"} <= names and cm.graph.node("fc").op_type == "Gemm"
    r = check_model(model, cm, seed=3)
    assert r.passed, r.to_json()


def test_llvm_keeps_pool_and_gemm():
    model, _ = _head("gap_flatten")
    cm = compile_model(model, target="llvm")
    assert cm.graph.node("fc").op_type == "Gemm" and cm.graph.node("pool").op_type == "GlobalAveragePool"


def test_restore_puts_back_an_unfused_head():
    model, _ = _head("mean_gemm")
    g = load_graph(model)
    rewritten, heads = head_as_dwsep(g)
    restored, back = restore_unfused(rewritten, g, heads)
    assert back == {"pool"}
    assert_graph_equal(restored, g)


@pytest.mark.parametrize("soc", [pytest.param("ascend910b2", marks=pytest.mark.slow), "ascend310p3"])
def test_fused_head_runs_on_the_emulator(soc):
    """The head's fused kernel (DW H x W of 1/(H*W), then the classifier on the cube) as emitted Ascend C,
    against ORT and with counters equal to the model (check_ascend)."""
    model, _ = _head("gap_flatten", n=1, c=48, h=4, w=4, m=24, seed=5)
    cm = compile_model(model, target=f"ascend:{soc}", dtype="float16")
    assert any(set(b.members) >= {"pool", "fc"} for b in cm.fused_blocks), [b.members for b in cm.fused_blocks]
    r = check_ascend(cm, model)
    assert r.passed, r.to_json()


def test_fused_head_exports_to_onnx(capsys, tmp_path):
    """--emit-onnx: the fused head's node writes the model's (N, M) output (through the flatten the
    pass added), and ONNX Runtime runs the export within the fp16 tolerance of the original."""
    import onnx
    import onnxruntime as ort
    from conftest import run_cli
    from fusion.driver.onnx_export import FILE_NAME
    from fusion.verify.onnx_run import session

    model, _ = _head("gap_flatten", n=2, c=48, h=4, w=4, m=24, seed=6)
    path = tmp_path / "head.onnx"
    onnx.save(model, path)
    code, _, err = run_cli(capsys, "compile", str(path), "-t", "sim", "--dtype", "float16", "--no-chain",
                           "-o", str(tmp_path / "o"), "--emit-onnx")
    assert code == 0, err
    x = np.random.default_rng(3).standard_normal((2, 8, 4, 4)).astype(np.float32)
    (got,) = session(str(tmp_path / "o" / FILE_NAME)).run(None, {"x": x})
    (ref,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert got.shape == ref.shape == (2, 24)
    assert np.abs(got - ref).max() <= 2e-2 * np.abs(ref).max()


def test_a_head_is_gated_against_the_vendors_pool_and_gemm():
    """The fuse gate and bench compare a fused head with what the vendor runs: a pool kernel and a
    GEMM kernel (not a 7x7 depthwise conv and a 1x1 conv)."""
    from fusion.core.soc import get_soc
    from fusion.cost.vendor_baseline import block_kernels
    from schedules.workload import DwSepWorkload

    wl = DwSepWorkload(1, 1280, 1000, 7, 7, kernel=(7, 7), pads=(0, 0, 0, 0), act1="none", act2="none",
                       dtype="float16", head=True)
    assert [k.kind for k in block_kernels(wl, get_soc("ascend910b2"))] == ["pool", "gemm"]
    assert [k.kind for k in block_kernels(replace(wl, head=False), get_soc("ascend910b2"))] == ["dwconv", "conv"]
    assert wl.key() != replace(wl, head=False).key()
