"""What a chain changes in its members' cost (fusion/driver/chain.py chain_plans, member_costs) and the
SuperKernel-like vendor column of bench (fusion/vendor_baseline.VendorNetwork.one_launch_us)."""

import json

import pytest

from conftest import run_cli
from factories import mobilenet_v1_file


@pytest.fixture(scope="module")
def small_v1(tmp_path_factory):
    return mobilenet_v1_file(tmp_path_factory, "plans")


def _compile(path, target="sim:ascend910b2", **kw):
    import fusion

    return fusion.compile(path, target=target, dtype="float16", outputs="b4_pw_act", **kw)


def test_chain_plans_trade_launch_for_body_and_make_the_chain_faster(small_v1):
    from fusion.driver.chain import chain_cost, chain_member_plan, member_costs
    from fusion.driver.tile_policy import two_phase_plan

    cm = _compile(small_v1)
    (c,) = cm.chains
    blocks = {b.name: b for b in cm.fused_blocks}
    own = {n: chain_member_plan(blocks[n], cm.target) for n in c.blocks}   # b4: two-phase, not its MIX plan
    assert own["b4_fused"].two_phase and not blocks["b4_fused"].plan.two_phase
    soc = cm.target.soc
    t_own = chain_cost(c, member_costs(c, own), soc).time_us
    t_chain = chain_cost(c, member_costs(c, cm.chain_plans), soc).time_us
    assert set(cm.chain_plans) == set(c.blocks)
    assert t_chain <= t_own
    for n in c.blocks:
        p = cm.chain_plans[n]
        assert p.two_phase
        # the in-chain plan is the body-optimal one (or the standalone plan, where that wins overall)
        assert p in (own[n], two_phase_plan(blocks[n].workload, cm.target, in_chain=True))


def test_forced_tiles_are_kept_in_a_chain(small_v1):
    from fusion.driver.tile_policy import TileOverride

    cm = _compile(small_v1, tile=TileOverride(th=4, tw=4, pw_engine="twophase"))
    assert cm.chains and all(b.tile_source == "forced" for b in cm.fused_blocks)
    for c in cm.chains:
        for n in c.blocks:
            assert cm.chain_plans[n] == next(b.plan for b in cm.fused_blocks if b.name == n)


def test_members_after_the_first_read_their_input_from_l2(small_v1):
    from fusion.driver.chain import member_costs
    from fusion.cost import model_block, model_fused

    cm = _compile(small_v1)
    (c,) = cm.chains
    costs = member_costs(c, cm.chain_plans)
    first, second = c.blocks[0], c.blocks[1]
    # the first member: the network rule (its input was written by the kernel before the chain)
    assert costs[first].time_us == pytest.approx(model_block(cm.chain_plans[first], first, timeline=False).time_us)
    alone = model_fused(cm.chain_plans[second], second, timeline=False)
    assert costs[second].hbm_bytes < alone.hbm_bytes          # x is no first touch from HBM
    assert costs[second].time_us <= alone.time_us
    assert costs[second].gm_bytes == alone.gm_bytes           # the same DMA, served by L2
    # the same rule for a one-phase plan (model_block: a block's input written by the kernel before)
    one_phase = next(b.plan for b in cm.fused_blocks if not b.plan.two_phase)
    warm = model_fused(one_phase, "b", timeline=False, in_l2=("input",))
    cold = model_fused(one_phase, "b", timeline=False)
    assert warm.hbm_bytes < cold.hbm_bytes and warm.gm_bytes == cold.gm_bytes and warm.time_us <= cold.time_us


def test_a_member_input_too_large_for_l2_comes_from_hbm():
    """The network rule for every member, not only the first (schedules/l2.produced_in_l2): a tensor the
    member before wrote hits L2 where it -- and a residual -- fits in half of it. 310P3's 16 MB at
    batch 8: MobileNetV2 b2's 96-channel 112 x 112 input (19 MB) does not; 910B2's 192 MB holds it."""
    from dataclasses import replace

    from fusion.core.soc import get_soc
    from fusion.driver.chain import Chain, in_l2
    from schedules.l2 import input_tensor_bytes
    from schedules.plan import make_plan
    from schedules.workload import DwSepWorkload, TileConfig

    c = Chain("c", ("a", "b", "c"), ("x1", "x2"), residual_from=(None, None, 0))
    for soc_name, batch, want in (("ascend310p3", 8, ()), ("ascend310p3", 1, ("input",)),
                                  ("ascend910b2", 8, ("input",))):
        soc = get_soc(soc_name)
        wl = DwSepWorkload(batch, 96, 24, 112, 112, stride=(2, 2), act1="relu6", act2="none", dtype="float16")
        p = make_plan(wl, TileConfig(8, 8, 1, 1, True, "twophase"), soc)
        assert (input_tensor_bytes(wl) > soc.l2_bytes / 2) == (want == ())
        assert in_l2(c, 1, p) == want
        # with a residual both must fit: at batch 1 on 310P3 the 2.4 MB input and its residual do
        r = in_l2(c, 2, replace(p, workload=replace(wl, residual=True, stride=(1, 1), cout=96)))
        assert r == (() if want == () else ("input", "residual"))


def test_superkernel_column(small_v1, capsys, tmp_path):
    from fusion.report.bench import vendor_network
    from fusion.cost.twophase import sync_all_us

    out = tmp_path / "r.json"
    code, text, _ = run_cli(capsys, "bench", small_v1, "-t", "sim:ascend910b2", "--dtype", "float16", "--no-db",
                            "--outputs", "b4_pw_act", "--json", str(out))
    assert code == 0 and "SuperKernel-like launch" in text
    r = json.loads(out.read_text())
    # one launch + every vendor kernel's body + one sync between consecutive kernels
    bodies = r["vendor_latency_us"] - r["vendor_launch_us"]
    syncs = (r["vendor_kernels"] - 1) * sync_all_us(_compile(small_v1).target.soc)
    assert bodies + syncs < r["vendor_superkernel_us"] < bodies + syncs + r["vendor_launch_us"] / r["vendor_kernels"] * 2
    assert r["speedup_vs_vendor_superkernel"] == pytest.approx(r["vendor_superkernel_us"] / r["fused_in_vendor_network_us"])
    v = vendor_network(_compile(small_v1), small_v1)
    ks = v.kernels
    soc = _compile(small_v1).target.soc
    # one MIX launch: the most AICs a cube kernel uses + the most AIVs a vector kernel uses
    cores = max(k.cores for k in ks if k.engine == "cube") + max(k.cores for k in ks if k.engine == "vector")
    assert cores > max(k.cores for k in ks)
    assert v.one_launch_us(soc, 0.5) == pytest.approx(soc.launch_base_us + soc.launch_per_core_us * cores
                                                      + sum(k.body_us for k in ks) + (len(ks) - 1) * 0.5)
    # 310P has no hard all-core sync: no such column
    code, text, _ = run_cli(capsys, "bench", small_v1, "-t", "sim:ascend310p3", "--dtype", "float16", "--no-db",
                            "--outputs", "b4_pw_act", "--json", str(out))
    assert code == 0 and "vendor_superkernel_us" not in json.loads(out.read_text())
