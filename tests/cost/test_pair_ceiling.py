"""The ceiling of DW + PW pair fusion (fusion/cost/pair_ceiling.py): the intermediate's copies are exactly
the ones left out, the ceiling is the pair's per-pipe sums, and the network figure is the one-launch
figure with each pair replaced by its ceiling."""

import pytest

import models
from fusion.core.soc import get_soc
from fusion.cost.baseline import counts
from fusion.cost.pair_ceiling import (CEILING_PIPES, _busy, is_pair, network_ceiling, pair_ceiling, pairs,
                                      whole_network_ceiling, without_copies)
from fusion.cost.primitives import cycles_to_us
from fusion.cost.vendor_baseline import layer_program, model_graph
from fusion.cost.vendor_layers import Layer
from fusion.frontend.onnx_import import load_graph


@pytest.fixture(scope="module", params=["ascend910b2", "ascend310p3"])
def net(request):
    soc = get_soc(request.param)
    return soc, model_graph(load_graph(models.mobilenet_v1(batch=2, resolution=64)), soc, "float16")


def test_the_pairs_are_the_blocks(net):
    _, v = net
    found = pairs(v)
    assert len(found) == 13   # MobileNetV1: 13 DW-separable blocks
    for i in found:
        assert v.layers[i].kind == "dwconv" and v.layers[i + 1].kh == 1 and v.layers[i + 1].cin == v.layers[i].cout


def test_is_pair_needs_the_pw_that_reads_the_dw():
    dw = Layer("dwconv", "d", 1, 32, 32, 16, 16, 16, 16, 3, 3)
    assert is_pair(dw, Layer("conv", "p", 1, 32, 64, 16, 16, 16, 16))
    assert not is_pair(dw, Layer("conv", "p", 1, 32, 64, 16, 16, 14, 14, 3, 3))   # not 1x1
    assert not is_pair(dw, Layer("conv", "p", 1, 48, 64, 16, 16, 16, 16))         # other channels
    assert not is_pair(dw, Layer("conv", "p", 1, 32, 64, 8, 8, 8, 8))             # other pixels


def test_only_the_intermediate_copies_are_left_out(net):
    soc, v = net
    i = pairs(v)[2]
    (dw, pw), (Ld, Lp) = v.kernels[i:i + 2], v.layers[i:i + 2]
    pd = layer_program(soc, Ld, "float16")
    pp = layer_program(soc, Lp, "float16", pw.split)
    cd, cd0 = counts(soc, pd), counts(soc, without_copies(pd, "output"))
    cp, cp0 = counts(soc, pp), counts(soc, without_copies(pp, "input"))
    # the DW result's store and the PW's A load, nothing else
    assert cd["gm_write_bytes"] == pytest.approx(pd.out_bytes) and cd0["gm_write_bytes"] == 0
    assert cd0["gm_read_bytes"] == cd["gm_read_bytes"]
    assert 0 < cp0["gm_read_bytes"] < cp["gm_read_bytes"] and cp0["gm_write_bytes"] == cp["gm_write_bytes"]
    assert cp["gm_read_bytes"] - cp0["gm_read_bytes"] >= Ld.batch * Ld.cout * Ld.out_h * Ld.out_w * 2
    assert cp0["cube_fractals"] == cp["cube_fractals"] and cd0["vector_repeats"] == cd["vector_repeats"]


def test_ceiling_is_the_pairs_work_per_pipe(net):
    soc, v = net
    for i in pairs(v):
        c = pair_ceiling(soc, v, i)
        (dw, pw), (Ld, Lp) = v.kernels[i:i + 2], v.layers[i:i + 2]
        a, b = _busy(soc, Ld, "float16", dw.split, ("output",)), _busy(soc, Lp, "float16", pw.split, ("input",))
        assert c.pipes_us == {p: a[p] + b[p] for p in CEILING_PIPES}
        assert c.body_us == max(c.pipes_us.values()) and c.pipes_us[c.binds] == c.body_us
        # the ceiling is below the pair run one after the other, and above each kernel's busiest pipe
        assert max(max(a.values()), max(b.values())) <= c.body_us < c.pair_body_us
        assert c.pair_body_us == pytest.approx(dw.body_us + pw.body_us)


def test_network_ceiling_replaces_each_pair(net):
    soc, v = net
    s = cycles_to_us(soc, soc.sync_all_cycles)
    c = network_ceiling(soc, v, s)
    cs = [pair_ceiling(soc, v, i) for i in pairs(v)]
    assert c["pairs"] == len(cs) and c["vendor_one_launch_us"] == pytest.approx(v.one_launch_us(soc, s))
    saved = sum(x.pair_body_us - x.body_us for x in cs) + len(cs) * s
    assert c["ceiling_one_launch_us"] == pytest.approx(c["vendor_one_launch_us"] - saved)
    assert c["ceiling_speedup"] == pytest.approx(c["vendor_one_launch_us"] / c["ceiling_one_launch_us"])
    assert c["ceiling_speedup"] > 1
    assert sum(c["binding_pipes"].values()) == len(cs) and c["figures"] == "modeled bound"


def test_whole_network_ceiling(net):
    """Every kernel's work per pipe summed with the tensors between kernels on chip: the network's input
    read and its output written once, the weights read by every kernel; below the pair ceiling."""
    soc, v = net
    s = cycles_to_us(soc, soc.sync_all_cycles)
    w = whole_network_ceiling(soc, v, s)
    n = len(v.kernels)
    assert w["kernels"] == n and w["figures"] == "modeled bound"
    first = _busy(soc, v.layers[0], "float16", v.kernels[0].split, ("output",))
    last = _busy(soc, v.layers[-1], "float16", v.kernels[-1].split, ("input", "residual"))
    mid = [_busy(soc, L, "float16", k.split, ("input", "residual", "output"))
           for k, L in zip(v.kernels[1:-1], v.layers[1:-1])]
    for p in CEILING_PIPES:
        assert w["pipes_us"][p] == pytest.approx(first[p] + last[p] + sum(m[p] for m in mid))
    # the middle kernels move no activations through GM: what they read is their weights
    for k, L in zip(v.kernels[1:-1], v.layers[1:-1]):
        c = counts(soc, without_copies(layer_program(soc, L, "float16", k.split), "input", "residual", "output"))
        assert c["gm_write_bytes"] == 0
    assert w["ceiling_one_launch_us"] == pytest.approx(w["launch_us"] + max(w["pipes_us"].values()))
    assert w["pipes_us"][w["binding_pipe"]] == max(w["pipes_us"].values())
    assert w["launch_us"] > 0 and w["ceiling_speedup"] == pytest.approx(v.one_launch_us(soc, s) / w["ceiling_one_launch_us"])
    assert w["ceiling_speedup"] >= network_ceiling(soc, v, s)["ceiling_speedup"]
    assert network_ceiling(soc, v, s)["whole_network"] == w
