"""The fusion gate and the tile policy agree (issue 31): a block the gate fuses always gets a tile
(single-buffered where only that fits), a block no tile fits is refused with the figures, never a
"no tile fits" error on a model that compiles with fusion off; explain takes compile's tile options;
"N consumers" refusals say what the consumers are."""

import json

import onnx
import pytest
from conftest import run_cli
from onnx import TensorProto, helper

import models
from fusion.driver.compiler import compile_model
from fusion.core.errors import MegafuseError
from fusion.cli.explain import explain
from schedules.targets import parse_target
from fusion.driver.tile_policy import TileOverride, choose_tile, fit_refusal
from schedules.workload import DwSepWorkload

MNAS = DwSepWorkload(1, 1152, 320, 7, 7, act1="relu", act2="none", dtype="float32")
TARGETS = ("sim:ascend910b2", "sim:ascend310p3", "ascend:ascend910b2", "ascend:ascend310p3", "llvm")
OVERRIDES = (TileOverride(), TileOverride(double_buffer=False), TileOverride(pw_engine="cube"),
             TileOverride(pw_engine="vector"))


@pytest.fixture(scope="module")
def mnas_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("wide") / "mnas.onnx"
    onnx.save(models.build("mnasnet_1152_320_h7"), p)
    return str(p)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gate_and_policy_agree(target, dtype):
    """fit_refusal None <=> choose_tile plans a tile that fits; else the refusal has the figures."""
    tgt = parse_target(target)
    for wl in (MNAS.__class__(**{**MNAS.__dict__, "dtype": dtype}),
               DwSepWorkload(1, 2048, 64, 5, 5, dtype=dtype), DwSepWorkload(1, 4096, 16, 3, 3, dtype=dtype)):
        for ov in OVERRIDES:
            why = fit_refusal(wl, tgt, ov)
            if why is None:
                assert choose_tile(wl, tgt, ov).plan.fits(), (wl.describe(), ov)
            else:
                assert "KiB >" in why and tgt.soc.name in why
                with pytest.raises(MegafuseError, match="no tile fits"):
                    choose_tile(wl, tgt, ov)


def test_mnasnet_block_plans_single_buffered_where_double_does_not_fit():
    """The reported failure: on 910B2 at fp32 no double-buffered 1x1 tile of the vector PW fits."""
    tgt = parse_target("ascend:ascend910b2")
    choice = choose_tile(MNAS, tgt)
    assert choice.plan.fits() and not choice.plan.tile.double_buffer
    llvm = choose_tile(MNAS, parse_target("llvm"))
    assert llvm.plan.fits()


@pytest.mark.parametrize("target", ["sim:ascend910b2", "sim:ascend310p3", "ascend:ascend910b2",
                                    "ascend:ascend310p3"])
@pytest.mark.parametrize("fallback", [True, False])
def test_mnasnet_block_compiles_at_fp32(mnas_path, target, fallback):
    cm = compile_model(mnas_path, target=target, fallback=fallback)
    if not fallback:
        assert len(cm.fused_blocks) == 1 and cm.fused_blocks[0].plan.fits()
    else:
        assert len(cm.fused_blocks) + len(cm.refusals) == 1


def test_forced_engine_that_never_fits_is_refused_with_figures(mnas_path, capsys):
    """The cube plan holds all of K in L0A: at 1152 fp32 channels no tile fits; the block runs
    unfused with that reason (fusion off compiles, so this is no error)."""
    cm = compile_model(mnas_path, target="sim:ascend910b2", tile=TileOverride(pw_engine="cube"))
    assert not cm.fused_blocks and "L0A 72.0 KiB > 64.0 KiB" in cm.refusals[0].reason
    code, out, _ = run_cli(capsys, "compile", mnas_path, "--pw-engine", "cube", "--no-fallback")
    assert code == 0 and "no tile fits ascend910b2" in out


def test_explain_takes_the_tile_options(mnas_path, capsys):
    code, out, _ = run_cli(capsys, "explain", mnas_path, "--json")
    assert code == 0 and json.loads(out)["fused"] == 1
    code, out, _ = run_cli(capsys, "explain", mnas_path, "--pw-engine", "cube", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["fused"] == 0 and "L0A" in doc["chains"][0]["reason"]
    chains, _, _ = explain(mnas_path, "sim:ascend910b2", tile=TileOverride(pw_engine="cube"))
    assert not chains[0].fused and chains[0].kind == "profitability"


def _two_consumer_model(extra: str) -> onnx.ModelProto:
    """A DW block whose DW output (no activation) is also read by `extra`."""
    m = models.dwsep_block(cin=16, cout=16, h=8, act1="none", fold_bn=True)
    dw = next(n for n in m.graph.node if n.name == "dw")
    pw = next(n for n in m.graph.node if n.name == "pw")
    t = dw.output[0]
    if extra == "residual":
        m.graph.node.append(helper.make_node("Add", [t, "x"], ["z"], name="res_add"))
    elif extra == "split":
        m.graph.node.append(helper.make_node("Split", [t], ["z", "z2"], name="shuffle_split", axis=1, num_outputs=2)
                            if m.opset_import[0].version >= 18 else
                            helper.make_node("Split", [t], ["z", "z2"], name="shuffle_split", axis=1))
        m.graph.output.append(helper.make_tensor_value_info("z2", TensorProto.FLOAT, None))
    else:   # an SE gate after a DW whose activation is Sigmoid-gated
        m.graph.node.append(helper.make_node("GlobalAveragePool", [t], ["z"], name="se_pool"))
    m.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    assert pw.input[0] == t
    return m


@pytest.mark.parametrize("extra, words", [("residual", "residual Add 'res_add'"),
                                           ("split", "Slice 'shuffle_split/0' (a channel shuffle"),   # the importer's Split
                                           ("se", "squeeze-and-excitation")])
def test_consumer_refusals_name_the_consumers(extra, words):
    chains, _, _ = explain(_two_consumer_model(extra), "llvm")
    assert not chains[0].fused and words in chains[0].reason, chains[0].reason
    if extra != "se":
        assert "consumers (Conv 'pw'; " in chains[0].reason and "writes one output" in chains[0].reason


def test_block_too_wide_for_vector_pw_fuses_where_the_two_phase_kernel_fits(tmp_path):
    """MnasNet's 1152 -> 192 5x5 block at fp32: no vector-PW tile fits 910B2's UB, the two-phase
    kernel's does. sim plans it (the gate asks the tile policy, not the vector-PW minimum); the
    Ascend C target has no fp32 two-phase / cube kernel, so there it is refused with the figures."""
    p = tmp_path / "k5.onnx"
    onnx.save(models.build("mnasnet_1152_192_k5_h7"), p)
    sim = compile_model(str(p), target="sim:ascend910b2", fallback=False)
    assert len(sim.fused_blocks) == 1 and sim.fused_blocks[0].plan.tile.pw_engine == "twophase"
    asc = compile_model(str(p), target="ascend:ascend910b2", fallback=False)
    assert not asc.fused_blocks and "no tile fits ascend910b2" in asc.refusals[0].reason
    assert "pw:vector UB" in asc.refusals[0].reason
