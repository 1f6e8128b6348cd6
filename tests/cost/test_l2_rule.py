"""The L2 rule of the cost model (schedules/l2.py, fusion/cost/block_l2.py): hits kept tensor by
tensor past L2's capacity as the vendor-like kernels keep theirs, the two-phase hand-off in L2
exactly when the vendor pair's intermediate is, re-reads at L2 bandwidth, weights streamed by every
core reaching HBM once, and the write-back L2 absorbs left out of a kernel's HBM floor. Every
number is MODELED.
"""

import dataclasses

import pytest

from fusion import cost as cm
from fusion.cost import model_fused
from fusion.core.soc import get_soc
from factories import B910, P310
from mbv1_blocks import BLOCKS, MID, TRAFFIC, mbv1, tile as pinned_tile
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig
from tile_search_reference import tune_fused


# (soc, block, first batch whose working set, with the pinned fastest tile, exceeds L2)
L2_OVERFLOW_BATCH = [("ascend310p3", "b1", 7), ("ascend310p3", "b3", 11), ("ascend310p3", "b4", 21),
                     ("ascend910b2", "b1", 63)]


@pytest.mark.parametrize("soc_name,block,batch", L2_OVERFLOW_BATCH,
                         ids=[f"{a}-{b}-n{c}" for a, b, c in L2_OVERFLOW_BATCH])
def test_l2_overflow_loses_hits_tensor_by_tensor(soc_name, block, batch):
    """A working set over L2 keeps, tensor by tensor, the hits the vendor-like kernels keep
    (schedules/l2._l2_policy): the input's halo re-reads, the weights' re-reads where the weights
    fit in half of L2; with no L2, none."""
    soc = get_soc(soc_name)
    cin, cout, h, s = BLOCKS[block]
    tile = pinned_tile(next(r[3] for r in TRAFFIC if r[:3] == (soc_name, block, "fast")))

    def l2_of(n):
        f = cm._Fused(make_plan(DwSepWorkload(n, cin, cout, h, h, stride=(s, s), dtype="float16"), tile, soc))
        return cm._fused_l2(f)

    assert l2_of(batch - 1).fits and not l2_of(batch).fits
    if soc_name == "ascend910b2":
        return   # (batch 63 is too slow to model here; the policy alone is checked)
    for n in (batch, 2 * batch):
        wl = DwSepWorkload(n, cin, cout, h, h, stride=(s, s), dtype="float16")
        cost = model_fused(make_plan(wl, tile, soc), timeline=False)
        l2 = l2_of(n)
        assert not cost.l2_fits
        # the input's halo re-reads hit (as the vendor DW kernel's), the weights' where they fit in
        # half of L2 (as the vendor GEMM's B in its L2 passes)
        assert cost.hbm_traffic["input"] == l2.unique["input"] < cost.traffic["input"], n
        assert l2.unique["weights"] <= soc.l2_bytes / 2
        assert cost.hbm_traffic["weights"] == l2.unique["weights"] < cost.traffic["weights"], n
        assert cost.hbm_bytes + cost.l2_hit_bytes == cost.gm_bytes
    # and with no L2 at all, every DMA byte of them from HBM
    wl = DwSepWorkload(batch, cin, cout, h, h, stride=(s, s), dtype="float16")
    none = model_fused(make_plan(wl, tile, dataclasses.replace(soc, l2_bytes=0)), timeline=False)
    assert none.hbm_traffic == none.traffic and none.l2_hit_bytes == 0


def test_two_phase_handoff_in_l2_exactly_when_the_vendor_pairs_intermediate_is():
    """The two-phase kernel's hand-off (written in the DW phase, read in the GEMM phase) has the LRU
    reuse distance of the vendor-like pair's DW output (written by the DW kernel, read by the PW
    kernel): one rule for both (schedules/l2.produced_in_l2), at every batch, L2 fitting or not."""
    from fusion.cost.twophase import model_twophase
    from schedules.l2 import produced_in_l2
    soc = get_soc("ascend310p3")
    seen = set()
    for n in (1, 4, 6, 8, 12):
        wl = mbv1(*BLOCKS["b1"])
        wl = dataclasses.replace(wl, batch=n)
        # cob 1: four N tiles, the GEMM reads each A block four times
        cost = model_twophase(make_plan(wl, TileConfig(14, 56, 1, 1, True, "twophase"), soc), timeline=False)
        dw_out = n * wl.cin * wl.out_height * wl.out_width * 2
        in_l2 = produced_in_l2(soc, dw_out, False)
        assert (cost.hbm_traffic["handoff"] == 0) == in_l2, n
        assert cost.traffic["handoff"] == 5 * dw_out
        if not in_l2:   # written to HBM and read back once; the re-reads per N tile hit
            assert cost.hbm_traffic["handoff"] == 2 * dw_out
        seen.add((cost.l2_fits, in_l2))
    # both sides of the working-set limit, and of the hand-off's
    assert {(True, True), (False, True), (False, False)} <= seen


# ------------------------------------------------------------------------------------------
# L2 / HBM traffic of the one-phase kernels
# ------------------------------------------------------------------------------------------
def _weights(wl):
    b = 2 if wl.dtype == "float16" else 4
    w_dw = wl.c1 * 9 * 16 * b + wl.c1 * 16 * 4
    w_pw = wl.co1 * wl.c1 * 16 * 16 * b
    return w_dw, w_pw, wl.co1 * 16 * 4


def test_weights_streamed_by_every_core_are_hbm_traffic_once(each_soc):
    soc = each_soc
    w_dw, w_pw, b_pw = _weights(MID)
    w_all = w_dw + w_pw + b_pw
    # resident weights (one co-step): every core loads all of them once
    cost = model_fused(make_plan(MID, TileConfig(4, 14, 8, 1, True, "vector"), soc), timeline=False)
    p = cost.cores_used
    assert p == soc.vector_cores > 1
    assert cost.traffic["weights"] == p * w_all                 # DMA: P x W
    assert cost.hbm_traffic["weights"] == w_all                 # HBM: W
    # streamed PW weights (8 co-steps): every tile reloads all PW weight blocks
    plan = make_plan(MID, TileConfig(4, 14, 1, 1, True, "vector"), soc)
    streamed = model_fused(plan, timeline=False)
    assert streamed.traffic["weights"] == p * (w_dw + b_pw) + plan.n_tiles * w_pw
    assert streamed.hbm_traffic["weights"] == w_all
    for c in (cost, streamed):
        assert c.hbm_traffic["input"] == c.min_gm_bytes - w_all - c.traffic["output"] < c.traffic["input"]
        assert c.hbm_bytes == c.min_gm_bytes and c.l2_hit_bytes == c.gm_bytes - c.min_gm_bytes
        # the same plan without L2 pays the re-reads at HBM bandwidth: never faster
        no_l2 = model_fused(make_plan(MID, plan.tile if c is streamed else TileConfig(4, 14, 8, 1, True, "vector"),
                                      dataclasses.replace(soc, l2_bytes=0)), timeline=False)
        assert no_l2.hbm_bytes == no_l2.gm_bytes == c.gm_bytes
        assert c.time_us <= no_l2.time_us


def test_working_set_over_l2_keeps_the_hits_of_what_fits_half_of_it():
    for soc in (B910, P310):
        for eng in ("vector", "cube"):
            tile = TileConfig(4, 14, 2, 1, True, eng)
            big = model_fused(make_plan(MID, tile, soc), timeline=False)
            l2 = cm._fused_l2(cm._Fused(make_plan(MID, tile, soc)))

            def at(l2_bytes):
                return model_fused(make_plan(MID, tile, dataclasses.replace(soc, l2_bytes=l2_bytes)), timeline=False)

            exact, small = at(big.l2_working_set_bytes), at(big.l2_working_set_bytes - 1)
            assert big.l2_fits and exact.l2_fits and not small.l2_fits
            assert exact.time_us == big.time_us and exact.hbm_bytes == big.hbm_bytes
            # one byte short: every tensor still fits in half of L2, so no hit is lost
            assert small.hbm_bytes == big.hbm_bytes and small.l2_hit_bytes == big.l2_hit_bytes > 0
            # the weights no longer fit in half of L2: their re-reads (every core's copy) go to HBM;
            # the input's halo re-reads still hit
            mid = at(2 * l2.unique["weights"] - 2)
            assert mid.hbm_traffic["weights"] == mid.traffic["weights"] > big.hbm_traffic["weights"]
            assert mid.hbm_traffic["input"] == big.hbm_traffic["input"] < mid.traffic["input"]
            # no L2 at all: every DMA byte from / to HBM
            none = at(0)
            assert none.hbm_bytes == none.gm_bytes == big.gm_bytes and none.l2_hit_bytes == 0
            assert none.hbm_traffic == none.traffic
            assert big.hbm_bytes <= mid.hbm_bytes < none.hbm_bytes and big.time_us <= none.time_us


def test_l2_hits_use_l2_bandwidth_and_per_core_cap():
    soc = dataclasses.replace(B910, dma_setup_cycles=0)
    nb, active = 1 << 20, 72
    hbm = cm.dma_us(soc, nb, 1, "in", active)
    hit = cm.dma_us(soc, nb, 1, "in", active, hit=1.0)
    half = cm.dma_us(soc, nb, 1, "in", active, hit=0.5)
    assert hbm == pytest.approx(nb / (soc.hbm_gbps * 1e3 / active), rel=1e-12)          # HBM share
    per_core = soc.gm_to_ub_gibps * 2**30 / 1e6
    assert hit == pytest.approx(nb / min(per_core, soc.l2_gbps * 1e3 / active), rel=1e-12)
    assert half == pytest.approx((hbm + hit) / 2, rel=1e-12)
    # dma_bandwidth's default is the fastest any byte can move (a lower bound uses it)
    assert cm.dma_bandwidth(soc, "in", active) == max(cm.dma_bandwidth(soc, "in", active, "hbm"),
                                                      cm.dma_bandwidth(soc, "in", active, "l2"))
    # L2 = 4 x HBM (refitted: the devkit's "L2 read bandwidth about 3-4x GM"; was 5x)
    assert soc.l2_gbps == 4 * soc.hbm_gbps and P310.l2_gbps == pytest.approx(4 * P310.hbm_gbps)


def test_tune_fused_by_hbm_traffic():
    wl, kw = mbv1(*BLOCKS["b4"]), {"max_tiles_per_axis": 8}
    _plan, cost = tune_fused(wl, B910, max_traffic_ratio=1.15, traffic="hbm", **kw)
    fastest = tune_fused(wl, B910, **kw)[1]
    assert cost.hbm_traffic_ratio <= 1.15 and cost.time_us == fastest.time_us
    assert tune_fused(wl, B910, max_traffic_ratio=1.15, **kw) is None   # by DMA traffic: no plan
    with pytest.raises(ValueError):
        tune_fused(wl, B910, traffic="l3")


def test_writes_l2_absorbs_are_not_in_the_kernels_hbm_floor():
    """A write L2 absorbs reaches HBM behind the kernels after it (the vendor-like kernels'
    accounting, fusion/cost/baseline.time_program): MobileNetV2's first expansion conv on 310P3,
    a GEMM stage writing 2.4 MB, was bound by that write-back at 168 GB/s (14.4 us) where its pipes
    need less; without L2 the write-back is the kernel's again (on MTE3, at up to the HBM bandwidth:
    reads and writes are each bounded by it, not charged together, results.l2_floor_us)."""
    from fusion.cost.twophase import model_twophase
    from fusion.driver.tile_policy import two_phase_plan
    from schedules.targets import parse_target

    wl = DwSepWorkload(1, 16, 96, 112, 112, kernel=(1, 1), pads=(0, 0, 0, 0), act1="none", act2="relu6",
                       dtype="float16")
    plan = two_phase_plan(wl, parse_target("sim:ascend310p3"), in_chain=True)
    cost = model_twophase(plan, timeline=False)
    gbps = P310.hbm_gbps * 1e3
    assert cost.l2_fits and cost.hbm_write_bytes >= cost.traffic["output"] > 0
    assert cost.body_us < cost.hbm_bytes / gbps                      # the write-back is deferred
    assert cost.body_us >= cost.hbm_read_bytes / gbps - 1e-9
    assert cost.body_us >= cost.roofline_us and cost.roofline_pct <= 100.0
    no_l2 = model_twophase(make_plan(wl, plan.tile, dataclasses.replace(P310, l2_bytes=0)), timeline=False)
    assert no_l2.body_us >= max(no_l2.hbm_read_bytes, no_l2.hbm_write_bytes) / gbps - 1e-9
    assert no_l2.body_us < no_l2.hbm_bytes / gbps     # reads and writes not charged together
    assert no_l2.body_us > cost.body_us


def test_one_bandwidth_floor_on_both_sides():
    """Every body, vendor-like as fused, is at least its DMA bytes at the shared L2 bandwidth
    (results.l2_floor_us): MobileNetV1 b1's PW kernel at batch 8 on 910B2 moves 19.4 MB, more than
    its cores' pipes take at 5968 GB/s. Its HBM bytes are never more than its DMAs move (the GEMM's
    passes of B are capped by them: VGG16's fc1 counted 5 GB)."""
    from fusion.cost.baseline import time_program
    from fusion.cost.results import l2_floor_us
    from fusion.cost.vendor_baseline import block_kernels
    from schedules.baseline_program import gemm_program

    soc = get_soc("ascend910b2")
    pw = block_kernels(DwSepWorkload(8, 32, 64, 112, 112, dtype="float16"), soc)[1]
    assert pw.body_us == pytest.approx(l2_floor_us(soc, pw.gm_bytes), rel=1e-12)
    assert pw.body_us > max(pw.mte2_us, pw.mte3_us, pw.cube_us, pw.vector_us, pw.mte1_us)
    fc = time_program(P310, gemm_program(P310, "fc1", 1, 25088, 4096, "float16", (1, 8)))
    assert fc.hbm_bytes <= fc.gm_bytes
