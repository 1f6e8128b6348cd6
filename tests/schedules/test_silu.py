"""SiLU / Swish (x * sigmoid(x), written by torch.onnx.export as Sigmoid + Mul) as a fused kernel
activation on every target: the pattern, the TE compute (llvm, sim), the NumPy reference, the cost
model's count, the Ascend C body on the emulator (both SoCs, every variant a default plan takes)
and the AscendNPU IR module, each against ONNX Runtime on odd shapes."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import models
from fusion.verify.ascend_check import check_ascend
from fusion.verify.check import check_model
from fusion.cost import model_block
from fusion.driver.compiler import compile_model
from fusion.cli.explain import explain
from fusion.frontend.onnx_import import load_graph
from fusion.core.soc import get_soc
from fusion.driver.tile_policy import TileOverride
from passes import optimize
from passes.fuse_dwsep import FUSED_OP
from schedules.activations import ascendc_body, needs_scratch, numpy_ref, vector_instructions
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig


def silu_block(act1="silu", act2="silu", cin=21, cout=37, h=9, w=7, residual=False, dtype="float32"):
    return models.dwsep_block(cin, cout, h, w, act1=act1, act2=act2, residual=residual, dtype=dtype, seed=3)


def test_numpy_reference_is_silu_and_stable():
    x = np.array([-1000.0, -20.0, -1.0, 0.0, 1.5, 30.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        y = numpy_ref(x, "silu")
    assert np.allclose(y, x / (1 + np.exp(-np.clip(x, -700, None))), rtol=1e-12, atol=1e-300)
    assert y[0] == 0 and abs(y[-1] - 30.0) < 1e-11


def test_table_entries_agree():
    body = ascendc_body("silu")
    assert vector_instructions("silu") == 4 == sum(body.count(f"{op}(") for op in ("Muls", "Exp", "Adds", "Div"))
    assert needs_scratch("silu")


@pytest.mark.parametrize("residual", [False, True])
def test_sigmoid_mul_is_fused_as_silu(residual):
    cin = cout = 24 if residual else None
    m = silu_block(cin=cin or 21, cout=cout or 37, residual=residual)
    g, refusals = optimize(load_graph(m), get_soc("ascend910b2"))
    fused = [n for n in g.nodes if n.op_type == FUSED_OP]
    assert len(fused) == 1 and not [r for r in refusals if r.pass_name == "fuse_dwsep"]
    f = fused[0]
    assert (f.attr("act1"), f.attr("act2"), bool(f.attr("residual"))) == ("silu", "silu", residual)
    assert {"dw_act_sig", "dw_act", "pw_act_sig", "pw_act"} <= set(f.attr("members"))


def test_sigmoid_whose_output_is_read_elsewhere_is_not_silu():
    """A Sigmoid also read by another node is no activation of the kernel; the refusal names SiLU."""
    m = silu_block(act2="none")
    gate = next(n.output[0] for n in m.graph.node if n.name == "dw_act_sig")
    m.graph.node.append(helper.make_node("Relu", [gate], ["z"], name="extra"))
    m.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    chains, _, _ = explain(m, "llvm")
    assert not chains[0].fused and "SiLU x*Sigmoid(x)" in chains[0].reason, chains[0].reason


@pytest.mark.parametrize("target", ["llvm", "sim:ascend910b2", "sim:ascend310p3"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_silu_blocks_match_onnxruntime(target, dtype):
    m = silu_block()
    cm = compile_model(m, target=target, dtype=dtype, fallback=False)
    assert len(cm.fused_blocks) == 1 and cm.fused_blocks[0].workload.act1 == "silu"
    res = check_model(m, cm, seed=1)
    assert res.passed, res.to_json()
    # the activation matters on these inputs: the same block with relu differs by far more
    other = compile_model(silu_block("relu", "relu"), target="llvm", dtype=dtype)
    assert not check_model(m, other, seed=1).within_tolerance


@pytest.mark.parametrize("soc, dtype, tile", [
    ("910b2", "float32", None),                                     # vector PW
    ("910b2", "float16", None),                                     # the default (two-phase here)
    ("910b2", "float16", TileConfig(3, 7, 2, 0, True, "cube")),     # the AIC + AIV MIX kernel
    ("310p3", "float16", TileConfig(3, 7, 2, 0, True, "cube")),     # the coupled cube kernel
    ("310p3", "float32", None)])
def test_silu_ascend_c_on_the_emulator(soc, dtype, tile):
    ov = None if tile is None else TileOverride(tile.th, tile.tw, tile.cob, tile.cib, tile.double_buffer,
                                                tile.pw_engine)
    m = silu_block(residual=False)
    cm = compile_model(m, target=f"ascend:{soc}", dtype=dtype, tile=ov, fallback=False, chain=False)
    assert len(cm.fused_blocks) == 1
    res = check_ascend(cm, m, seed=2)
    assert res.passed, res.to_json()
    for b in res.blocks:   # the emulator's counters are the cost model's, instruction for instruction
        assert b.counters["vector_instructions"] == b.model_vector_instructions, b.describe()


def test_silu_program_counts_its_instructions():
    """The kernel program (cost, tuner bound, emitters) charges SiLU's four instructions per
    scratch chunk, where the five-instruction hard-swish of the same chunks charges five."""
    soc = get_soc("ascend910b2")
    tile = TileConfig(4, 8, 3, 0, True, "vector")
    count = {a: model_block(make_plan(DwSepWorkload(1, 32, 48, 8, 8, act1=a, act2=a), tile, soc),
                            timeline=False).counts["vector_instrs"] for a in ("none", "hardswish", "silu")}
    assert 5 * (count["silu"] - count["none"]) == 4 * (count["hardswish"] - count["none"]) > 0
