"""GELU (erf and tanh forms) and Mish as fused kernel activations on every target: the forms
torch.onnx.export writes (Div/Erf/Add/Mul/Mul, the tanh spelling, opset-20 Gelu, Softplus/Tanh/Mul),
the NumPy reference, the shared step list (Ascend C body = TE compute = instruction count), the
Ascend C kernels on the emulator (both SoCs) and the AscendNPU IR refusal, against ONNX Runtime on
odd shapes (21->37 @9x7)."""

import math

import numpy as np
import pytest

import models
from fusion.cli.explain import explain
from fusion.codegen.npuir.emit import act_refusal
from fusion.core.soc import get_soc
from fusion.cost import model_block
from fusion.driver.compiler import compile_model
from fusion.driver.tile_policy import TileOverride
from fusion.frontend.onnx_import import load_graph
from fusion.verify.ascend_check import check_ascend
from fusion.verify.check import check_model
from passes import optimize
from passes.fuse_dwsep import FUSED_OP
from schedules.activations import (ascendc_body, kind_steps, numpy_ref, run_steps, scratch_chunk,
                                   vector_instructions)
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig

KINDS = ("gelu", "gelutanh", "mish")


def block(act, opset=13, dtype="float32", residual=False):
    c = 24 if residual else 21
    return models.dwsep_block(c, 24 if residual else 37, 9, 7, act1=act, act2=act, residual=residual,
                              dtype=dtype, opset=opset, seed=3)


@pytest.mark.parametrize("kind", KINDS)
def test_steps_in_fp32_match_the_exact_function(kind):
    """The kernels' fp32 steps (erf rational, mish without cancellation) against float64."""
    x = np.concatenate([np.linspace(-20, 20, 4001), [-1e4, -90.0, 90.0, 1e4]]).astype(np.float32)
    with np.errstate(over="ignore"):
        y = run_steps(kind, x, np.float32, np.exp, np.maximum, np.minimum)
    ref = numpy_ref(x.astype(np.float64), kind)
    assert y.dtype == np.float32 and np.all(np.isfinite(y))
    err = np.abs(y - ref) / np.maximum(np.abs(ref), 1.0)
    assert err.max() < 3e-6, (kind, float(err.max()), float(x[err.argmax()]))


def test_reference_values():
    x = np.array([-3.0, -1.0, 0.0, 1.0, 2.0])
    gelu = [v * (1 + math.erf(v / math.sqrt(2))) / 2 for v in x]
    assert np.allclose(numpy_ref(x, "gelu"), gelu, rtol=1e-14)
    assert np.allclose(numpy_ref(x, "mish"), x * np.tanh(np.log1p(np.exp(x))), rtol=1e-14)
    assert abs(numpy_ref(np.array([1.0]), "gelutanh")[0] - 0.8411919906082768) < 1e-12


@pytest.mark.parametrize("kind", KINDS)
def test_table_entries_agree(kind):
    body = ascendc_body(kind)
    ops = [s[0] for s in kind_steps(kind)]
    assert vector_instructions(kind) == len(ops)
    assert sum(body.count(f"{op}(") for op in set(ops)) == len(ops)   # one call per step
    assert scratch_chunk(kind, 16) in (8, 16)
    with pytest.raises(ValueError):
        scratch_chunk("gelu", 8)   # two 32-B parts do not fit: refused, never a zero-length loop


@pytest.mark.parametrize("act, opset", [("gelu", 13), ("gelutanh", 13), ("gelu", 20), ("gelutanh", 20),
                                        ("mish", 13)])
def test_exported_forms_fuse(act, opset):
    g, refusals = optimize(load_graph(block(act, opset)), get_soc("ascend910b2"))
    fused = [n for n in g.nodes if n.op_type == FUSED_OP]
    assert len(fused) == 1 and not [r for r in refusals if r.pass_name == "fuse_dwsep"], refusals
    assert (fused[0].attr("act1"), fused[0].attr("act2")) == (act, act)
    assert [n.op_type for n in g.nodes] == [FUSED_OP] or set(n.op_type for n in g.nodes) <= {
        FUSED_OP, "ToNC1HWC0", "ToNCHW"}


def test_twice_gelu_is_not_gelu():
    """x (1 + erf(x / sqrt 2)) without the 0.5 is another function: not taken as an activation."""
    m = block("gelu")
    for n in m.graph.node:
        if n.name == "dw_act":
            n.input[1] = "gelu_one"
    g, refusals = optimize(load_graph(m), get_soc("ascend910b2"))
    f = [n for n in g.nodes if n.op_type == FUSED_OP]
    assert not f or f[0].attr("act1") != "gelu"


@pytest.mark.parametrize("target", ["llvm", "sim:ascend910b2", "sim:ascend310p3"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("act", KINDS)
def test_blocks_match_onnxruntime(act, target, dtype):
    m = block(act, dtype=dtype)
    cm = compile_model(m, target=target, dtype=dtype, fallback=False)
    assert len(cm.fused_blocks) == 1 and cm.fused_blocks[0].workload.act2 == act
    res = check_model(m, cm, seed=1)
    assert res.passed, res.to_json()


def test_a_wrong_activation_fails_the_check():
    other = compile_model(block("gelutanh"), target="llvm", dtype="float32")
    res = check_model(block("mish"), other, seed=1)
    assert not res.within_tolerance


@pytest.mark.parametrize("act, soc, dtype, tile", [
    ("gelu", "910b2", "float32", None),                                    # vector PW
    ("mish", "910b2", "float16", None),                                    # two-phase
    ("gelutanh", "910b2", "float16", TileConfig(3, 7, 2, 0, True, "cube")),  # AIC + AIV MIX
    ("gelu", "310p3", "float16", TileConfig(3, 7, 2, 0, True, "cube")),    # coupled cube
    ("mish", "310p3", "float32", None),
    ("gelutanh", "310p3", "float32", TileConfig(1, 1, 1, 1, False, "vector"))])  # 16-element scratch
def test_ascend_c_on_the_emulator(act, soc, dtype, tile):
    ov = None if tile is None else TileOverride(tile.th, tile.tw, tile.cob, tile.cib, tile.double_buffer,
                                                tile.pw_engine)
    m = block(act, dtype=dtype)
    cm = compile_model(m, target=f"ascend:{soc}", dtype=dtype, tile=ov, fallback=False, chain=False)
    assert len(cm.fused_blocks) == 1
    res = check_ascend(cm, m, seed=2)
    assert res.passed, res.to_json()
    for b in res.blocks:
        assert b.counters["vector_instructions"] == b.model_vector_instructions, b.describe()


def test_program_counts_the_chunks():
    """GELU's 42 instructions run per half-scratch chunk: more chunks than SiLU's one-part body."""
    soc = get_soc("ascend910b2")
    tile = TileConfig(4, 8, 3, 0, True, "vector")
    count = {a: model_block(make_plan(DwSepWorkload(1, 32, 48, 8, 8, act1=a, act2=a), tile, soc),
                            timeline=False).counts["vector_instrs"] for a in ("none", "silu", "gelu")}
    gelu, silu = count["gelu"] - count["none"], count["silu"] - count["none"]
    assert gelu % 42 == 0 and silu % 4 == 0 and gelu // 42 > silu // 4 > 0


def test_npuir_lowers_gelutanh_and_refuses_two_scratch_kinds():
    assert act_refusal("gelutanh") is None
    for kind in ("gelu", "mish"):
        assert "2 fp32 scratch" in act_refusal(kind)


def test_npuir_target_runs_gelu_and_mish_blocks_unfused_with_the_reason():
    chains, _, _ = explain(block("mish"), "npuir:910b2")
    assert not chains[0].fused and "'mish' is not emitted in AscendNPU IR" in chains[0].reason
    chains, _, _ = explain(block("gelutanh"), "npuir:910b2")
    assert chains[0].fused
