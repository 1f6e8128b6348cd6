"""ConvNeXt's block (DW 7x7 → channel LayerNorm → PW → GELU → PW → layer scale → + x) as timm's
conv_mlp variant exports it: DW + LN + first PW + GELU are one fused kernel on llvm and sim (the
LN's scale and shift folded into the PW), checked against ONNX Runtime on odd shapes; the second
PW with the layer scale and the residual runs as its own conv; AscendNPU IR refuses the block in one
line and runs it unfused (the Ascend C kernel: tests/codegen/test_ascendc_norm.py)."""

import numpy as np
import pytest

import models
from fusion.cli.explain import explain
from fusion.core.soc import get_soc
from fusion.driver.compiler import compile_model
from fusion.frontend.onnx_import import load_graph
from fusion.verify.check import check_model
from passes import optimize
from passes.channel_norm import match_channel_norm
from passes.fuse_dwsep import FUSED_OP
from schedules.reference import reference_block
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig
from fusion.cost import model_block
from fusion.driver.tile_policy import TileOverride

DIM, H, W = 21, 9, 7   # one ragged channel block (21 = 16 + 5): the padded lanes stay out of the stats


def block(form="op", dtype="float32"):
    return models.convnext_block(DIM, H, W, mlp_ratio=2, ln_form=form, dtype=dtype, seed=2)


@pytest.mark.parametrize("form", ["op", "spelled"])
def test_dw_norm_pw_gelu_is_one_fused_block(form):
    g, refusals = optimize(load_graph(block(form)), get_soc("ascend910b2"))
    fused = [n for n in g.nodes if n.op_type == FUSED_OP]
    assert len(fused) == 1 and not [r for r in refusals if r.pass_name == "fuse_dwsep"], refusals
    f = fused[0]
    assert (f.attr("act1"), f.attr("act2")) == ("none", "gelu") and f.attr("ln_eps") == pytest.approx(1e-6, rel=1e-6)
    # the second PW (layer scale folded in) and the residual stay outside the kernel
    rest = [n.op_type for n in g.nodes if n.op_type not in (FUSED_OP, "ToNC1HWC0", "ToNCHW")]
    assert rest.count("Conv") == 1 and "LayerNormalization" not in rest and "Transpose" not in rest


def test_norm_over_another_axis_is_not_a_channel_norm():
    m = block("op")
    for n in m.graph.node:
        if n.op_type == "Transpose" and n.name == "norm_to_nhwc":
            n.attribute[0].ints[:] = [0, 3, 2, 1]    # LN over H, not C
        if n.op_type == "Transpose" and n.name == "norm_to_nchw":
            n.attribute[0].ints[:] = [0, 3, 2, 1]
    g = load_graph(m)
    dw = next(n for n in g.nodes if n.name == "dw")
    assert match_channel_norm(g, dw.outputs[0]) is None


@pytest.mark.parametrize("form", ["op", "spelled"])
@pytest.mark.parametrize("target, dtype", [("llvm", "float32"), ("sim:ascend910b2", "float32"),
                                           ("sim:ascend310p3", "float16")])
def test_matches_onnxruntime(form, target, dtype):
    m = block(form)
    cm = compile_model(m, target=target, dtype=dtype, fallback=False)
    assert len(cm.fused_blocks) == 1 and cm.fused_blocks[0].workload.ln_eps == pytest.approx(1e-6, rel=1e-6)
    res = check_model(m, cm, seed=1)
    assert res.passed, res.to_json()


def test_reference_normalizes_over_channels():
    wl = DwSepWorkload(1, 3, 2, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0), "none", "none", False, "float32", 1e-6)
    d = {"x": np.array([1.0, 2.0, 6.0]).reshape(1, 3, 1, 1), "w_dw": np.ones((3, 1, 1, 1)), "b_dw": np.zeros(3),
         "w_pw": np.array([[1.0, 0, 0], [0, 0, 1.0]]).reshape(2, 3, 1, 1), "b_pw": np.zeros(2)}
    y = reference_block(wl, d).reshape(-1)
    x = np.array([1.0, 2.0, 6.0])
    z = (x - 3.0) / np.sqrt(x.var() + 1e-6)
    assert np.allclose(y, [z[0], z[2]], rtol=1e-6)   # the intermediate is rounded to fp32 storage


def test_kernel_without_the_norm_fails_the_check():
    """The check sees the norm: the same weights with the LN dropped (an identity) differ."""
    m, other = block("op"), block("op")
    nodes = list(other.graph.node)
    ln = next(n for n in nodes if n.op_type == "LayerNormalization")
    ln.op_type = "Identity"
    del ln.input[1:]
    del ln.attribute[:]
    cm = compile_model(other, target="llvm")
    assert not check_model(m, cm, seed=1).within_tolerance


@pytest.mark.parametrize("target", ["npuir:910b2"])
def test_npuir_refuses_in_one_line(target):
    chains, _, _ = explain(block("op"), target)
    assert not chains[0].fused and "channel LayerNorm" in chains[0].reason and "\n" not in chains[0].reason
    assert target.split(":")[0] in chains[0].reason


@pytest.mark.parametrize("engine", ["vector", "twophase"])
def test_plans_hold_the_norm_and_the_program_charges_it(engine):
    """Both kernels a norm block may get hold every channel of a tile (cib = C1) and the two stats
    buffers; the modeled program charges the norm's vector work on top of the same block without it."""
    soc = get_soc("ascend910b2")
    wl = DwSepWorkload(1, 40, 160, 8, 8, (7, 7), (1, 1), (3, 3, 3, 3), "none", "gelu", False, "float16", 1e-6)
    plain = DwSepWorkload(1, 40, 160, 8, 8, (7, 7), (1, 1), (3, 3, 3, 3), "none", "gelu", False, "float16")
    tile = TileConfig(2, 4, 2, 1, True, engine)
    p, q = make_plan(wl, tile, soc), make_plan(plain, TileConfig(2, 4, 2, 0, True, engine), soc)
    assert p.cib == wl.c1 and {"ln_sum", "ln_sqdev"} <= {b.name for b in p.buffers}
    assert model_block(p, timeline=False).counts["vector_instrs"] > model_block(q, timeline=False).counts["vector_instrs"]


def test_two_phase_norm_block_matches_onnxruntime():
    m = block("op")
    cm = compile_model(m, target="sim:ascend310p3", dtype="float16", fallback=False,
                       tile=TileOverride(pw_engine="twophase"))
    assert cm.fused_blocks[0].plan.variant == "two-phase"
    assert check_model(m, cm, seed=1).passed
