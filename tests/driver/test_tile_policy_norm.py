"""The two-phase tiles of a ConvNeXt block (DW -> channel LayerNorm -> PW): a unit holds all of C1,
so the single-buffered tiles of twice the pixels compete with the double-buffered ones."""

from __future__ import annotations

from dataclasses import replace

import fusion.driver.tile_policy as tp
from fusion.cost import model_block
from fusion.cost.vendor_baseline import block_kernels
from schedules.targets import parse_target
from schedules.workload import DwSepWorkload

# convnext_atto's first stage at 128 px (benchmarks/results/timm_zoo.md), fp32 on sim:910b2
STAGE0 = DwSepWorkload(1, 40, 160, 32, 32, (7, 7), (1, 1), (3, 3, 3, 3), "none", "gelu", False, "float32",
                       ln_eps=1e-6)


def test_norm_block_weighs_single_buffered_two_phase_tiles(monkeypatch):
    monkeypatch.setattr(tp, "_TWO_PHASE_BEST", {})
    target = parse_target("sim")
    # the norm in the DW units (norm_phase=False; the norm phase: test_norm_phase_policy.py)
    both = tp._two_phase_best(STAGE0, target, tp.TileOverride(), norm_phase=False)
    db = tp._two_phase_best(STAGE0, target, tp.TileOverride(double_buffer=True), norm_phase=False)
    sb = tp._two_phase_best(STAGE0, target, tp.TileOverride(double_buffer=False), norm_phase=False)
    assert both[1] == min(db[1], sb[1])
    # the faster of the two wins (the single-buffered one did until the GEMM phase's cores stopped
    # being capped by the DW units', schedules/twophase.gemm_cap: MODELED)
    assert sb is not None and both[0].tile.double_buffer == (db[1] <= sb[1])
    # and with it the fused block beats the vendor-like DW + norm + PW kernels (it did not before)
    vendor = sum(k.time_us for k in block_kernels(STAGE0, target.soc))
    # (the double-buffered tile no longer loses to it since phase 3 runs on per-tile flags: MODELED)
    assert model_block(both[0], timeline=False).time_us < vendor
    # a block without a norm keeps the double-buffered search alone (--no-double-buffer still sb)
    plain = replace(STAGE0, ln_eps=None, act1="relu")
    assert tp._two_phase_best(plain, target, tp.TileOverride())[0].tile.double_buffer
