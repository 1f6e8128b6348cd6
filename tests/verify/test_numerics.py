"""Fused and unfused kernels against ONNX Runtime: the six MobileNetV1 blocks, odd shapes and
whole MobileNetV1/V2, on llvm and sim, fp32 (≤ 1e-4) and fp16 (≤ 2e-2) relative to output range."""

import pytest

import models
from factories import dw_blocks, is_head
from fusion import compile as mf_compile
from fusion.verify.check import check_model
from fusion.core.tolerance import TOLERANCE

BLOCKS = [b["name"] for b in models.MOBILENET_V1_BLOCKS] + [b["name"] for b in models.ODD_BLOCKS]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("target", ["llvm", "sim", "sim:ascend310p3"])
@pytest.mark.parametrize("name", BLOCKS)
def test_block_matches_ort(name, target, dtype):
    m = models.build(name)
    cm = mf_compile(m, target=target, dtype=dtype)
    assert len(cm.fused_blocks) == 1 and not cm.refusals
    r = check_model(m, cm)
    assert r.max_rel <= TOLERANCE[dtype], r


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("target", ["llvm", "sim"])
@pytest.mark.parametrize("net,chains", [("mobilenet_v1", 13), ("mobilenet_v2", 17)])
def test_network_matches_ort(net, chains, target, dtype):
    m = models.build(net)
    cm = mf_compile(m, target=target, dtype=dtype)
    assert len(dw_blocks(cm)) == chains
    # the classifier head fuses as a block on the Ascend targets where its fp16 plan fits the UB
    assert any(is_head(b) for b in cm.fused_blocks) == (target == "sim" and dtype == "float16")
    assert not [r for r in cm.refusals if r.pass_name == "fuse_dwsep"]
    r = check_model(m, cm)
    assert r.max_rel <= TOLERANCE[dtype], r


@pytest.mark.parametrize("net,chains", [("mobilenet_v1", 13), ("mobilenet_v2", 17)])
def test_prefolded_networks_fuse_every_chain(net, chains):
    m = models.build(net, fold_bn=True)
    cm = mf_compile(m, target="sim")
    assert len(dw_blocks(cm)) == chains and not cm.refusals
    assert check_model(m, cm).passed


def test_forced_odd_tiles_batch2_residual():
    """Tiles that divide nothing, stride 1 residual, batch 2, several channel blocks."""
    from fusion.driver.compiler import TileOverride
    m = models.dwsep_block(cin=40, cout=40, h=17, w=13, batch=2, residual=True, act1="relu6",
                           act2="none", seed=3)
    for tile in (TileOverride(5, 3, 2, 1), TileOverride(17, 13, 1, 1), TileOverride(1, 1, 1, 2)):
        cm = mf_compile(m, target="llvm", tile=tile)
        assert cm.fused_blocks[0].tile_source == "forced"
        assert check_model(m, cm).passed


@pytest.mark.parametrize("act", ["relu", "relu6", "hardswish"])
@pytest.mark.parametrize("form", ["op", "hardsigmoid", "clip"])
def test_hardswish_spellings_fuse(act, form):
    opset = 14 if form == "op" else 13
    m = models.dwsep_block(cin=24, cout=32, h=15, act1="hardswish", act2=act, hswish_form=form,
                           opset=opset)
    cm = mf_compile(m, target="llvm")
    assert len(cm.fused_blocks) == 1 and cm.fused_blocks[0].workload.act1 == "hardswish"
    assert check_model(m, cm).passed


def test_asymmetric_pads_and_auto_pad():
    for kw in (dict(pads=(0, 1, 2, 1)), dict(auto_pad="SAME_UPPER", stride=2), dict(auto_pad="VALID")):
        m = models.dwsep_block(cin=16, cout=24, h=12, **kw)
        cm = mf_compile(m, target="llvm")
        assert len(cm.fused_blocks) == 1
        assert check_model(m, cm).passed, kw


def test_unfused_path_matches_ort():
    m = models.build("mobilenet_v2", resolution=96)
    cm = mf_compile(m, target="llvm", fuse=False)
    assert not cm.fused_blocks
    assert check_model(m, cm).passed
