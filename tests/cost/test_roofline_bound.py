"""Every printed efficiency is <= 100 %: the roofline (fusion/cost/roofline.py) is a lower bound of
the step simulator's body for the MobileNetV1 / V2 blocks on both SoCs at batch 1 and 32 -- with the
block's input in L2 as in a network (model_block), on the one-phase and two-phase plans."""

import dataclasses

import pytest

from fusion.cost import model_block
from fusion.cost.roofline import compute_floor_us, memory_floor_us
from fusion.core.soc import get_soc
from schedules.targets import parse_target
from fusion.driver.tile_policy import two_phase_plan
from schedules.plan import make_plan, suggest_tile
from schedules.workload import DwSepWorkload, TileConfig

V1 = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (1024, 2), (1024, 1)]
V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def v1_blocks():
    cin, h, out = 32, 112, []
    for c, s in V1:
        out.append(DwSepWorkload(1, cin, c, h, h, stride=(s, s), act1="relu", act2="relu", dtype="float16"))
        h, cin = (h - 1) // s + 1, c
    return out


def v2_blocks():
    cin, h, out = 32, 112, []
    for t, c, n, s0 in V2:
        for r in range(n):
            s = s0 if r == 0 else 1
            out.append(DwSepWorkload(1, cin * t, c, h, h, stride=(s, s), act1="relu6", act2="none",
                                     residual=s == 1 and cin == c, dtype="float16"))
            h, cin = (h - 1) // s + 1, c
    return list(dict.fromkeys(out))   # repeated blocks once


def _plans(wl, soc_name):
    target = parse_target(f"sim:{soc_name}")
    soc = target.soc
    base = suggest_tile(wl, soc, like=TileConfig(1, 1, pw_engine="cube"), min_tiles=soc.vector_cores)
    plans = [make_plan(wl, base, soc)] if base is not None else []
    two = two_phase_plan(dataclasses.replace(wl, batch=1), target)
    if two is not None:
        plans.append(make_plan(wl, two.tile, soc))
    return [p for p in plans if p.fits()]


@pytest.mark.parametrize("soc_name", ["ascend910b2", "ascend310p3"])
@pytest.mark.parametrize("batch", [1, 32])
@pytest.mark.parametrize("net", ["v1", "v2"])
def test_roofline_is_a_lower_bound_of_the_body(net, batch, soc_name):
    n = 0
    for wl in (v1_blocks() if net == "v1" else v2_blocks()):
        for plan in _plans(dataclasses.replace(wl, batch=batch), soc_name):
            cost = model_block(plan, timeline=False)
            assert cost.roofline_us <= cost.body_us * (1 + 1e-9), (wl.describe(), plan.tile.describe())
            assert 0 < cost.roofline_pct <= 100
            n += 1
    assert n >= 8


def test_the_bound_is_the_simulators_facts():
    soc = get_soc("ascend310p3")
    # bytes in L2 at the start may move at L2 bandwidth; the rest must reach HBM, reads and writes
    # each at up to its bandwidth (the DMA model's per-direction share; no floor charges them together)
    hbm_us = soc.hbm_gbps * 1e3   # bytes the HBM moves in one µs
    assert memory_floor_us(soc, hbm_us, 0) == pytest.approx(0.5)
    assert memory_floor_us(soc, hbm_us, hbm_us) == pytest.approx(hbm_us / (soc.l2_gbps * 1e3))
    # fp16 vector lanes are twice fp32's: the peak the simulator can reach on an fp16 kernel
    f32 = compute_floor_us(soc, 10**6, 0, 4, "float32")
    assert compute_floor_us(soc, 10**6, 0, 4, "float16") == pytest.approx(f32 / 2)
