"""A chain member on its fastest GEMM tile (fusion/driver/gemm_tiles.py): in the chain each member's
N tile, M-tile rows and weight streaming are chosen again by its body (the two-phase search leaves
the rows to their rule and times a GEMM stage with the identity copy it does not run there). The
retiled members' kernels run in the chain on the emulator (slow test)."""

from __future__ import annotations

import json
from dataclasses import replace

import onnx
import pytest

import fusion
from conftest import run_cli
from fusion.driver.chain import member_cost
from fusion.driver.gemm_tiles import fastest_gemm_tile, gemm_candidates
from schedules.plan import make_plan

F16 = "float16"


def _body(chain, k, plan):
    c = member_cost(chain, k, plan)
    return c.time_us - c.launch_us


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
def test_members_take_their_fastest_gemm_tile(v2_56, soc):
    cm = fusion.compile(v2_56, target=f"sim:{soc}", dtype=F16)
    (c,) = cm.chains
    plans = cm.chain_plans
    producers = {c.blocks[k - 1] for k in range(1, len(c.blocks)) if plans[c.blocks[k]].local_in}
    free = [(k, n) for k, n in enumerate(c.blocks) if not plans[n].local_in and n not in producers]
    assert free
    for k, n in free:   # no candidate is faster than what each runs
        assert _body(c, k, plans[n]) <= min(_body(c, k, q) for q in gemm_candidates(plans[n])) + 1e-9
    # the head stage: its own (two-phase search) tile, as gemm_only, is slower than its chain tile
    k, p = c.blocks.index("head"), plans["head"]
    own = replace(make_plan(p.workload, cm.chain_stages["head"].plan.tile, p.soc), gemm_only=True, x_max=p.x_max)
    assert p.tile != own.tile and _body(c, k, p) < _body(c, k, own)


def test_fastest_gemm_tile_leaves_local_stages_and_one_phase_plans(v2_56):
    cm = fusion.compile(v2_56, target="sim:ascend910b2", dtype=F16)
    (c,) = cm.chains
    local = next(n for n in c.stages if cm.chain_plans[n].local_in)
    body = pytest.fail   # neither is timed: both are returned as they are
    assert fastest_gemm_tile(cm.chain_plans[local], body) is cm.chain_plans[local]
    blk = next(b for b in cm.fused_blocks if b.name in c.blocks)
    one_phase = make_plan(blk.workload, replace(blk.plan.tile, pw_engine="vector", gemm_bm=0, b_stream=False), blk.plan.soc)
    assert not one_phase.two_phase and fastest_gemm_tile(one_phase, body) is one_phase


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
def test_retiled_members_run_in_the_chain_on_the_emulator(v2_56, emu_cache, capsys, soc):
    """The whole model on the emulator: the chain (its retiled blocks, and its retiled stages
    reading x in several M tiles, pad rows into the boundary slack) bitwise equal to its members
    run one by one, counters their sum, the model PASS vs ORT."""
    code, out, _ = run_cli(capsys, "check", v2_56, "-t", soc.replace("ascend", "ascend:"), "--dtype", F16,
                           "--no-db", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["passed"]
    (c,) = res["chains"]
    assert "head" in c["stages"] and c["max_abs"] == 0.0 and c["counters_match"]


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
def test_retiled_blocks_run_in_the_chain_on_the_emulator(tmp_path, emu_cache, capsys):
    """MobileNetV1 at 96 px (width 0.5) on 310P3: blocks whose GEMM phase takes other M-tile rows in
    the chain (gemm_bm, which only the chain's passes set and V1 has no GEMM stage to pair with);
    the chain bitwise equal to its members run one by one, counters their sum, PASS vs ORT."""
    from models.mobilenet import mobilenet_v1

    p = tmp_path / "v1s96.onnx"
    onnx.save(mobilenet_v1(resolution=96, width=0.5), p)
    cm = fusion.compile(str(p), target="sim:ascend310p3", dtype=F16)
    assert sum(q.tile.gemm_bm > 0 for q in cm.chain_plans.values()) >= 5
    code, out, _ = run_cli(capsys, "check", str(p), "-t", "ascend:310p3", "--dtype", F16, "--no-db", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["passed"]
    (c,) = res["chains"]
    assert c["max_abs"] == 0.0 and c["counters_match"]


def test_candidates_lower_to_distinct_programs(v2_56):
    """The search times each program once: no two candidates share same_program's key, and the
    key decides the body (a candidate dropped as a twin has the body of the one kept)."""
    from fusion.driver.gemm_tiles import same_program
    from fusion.driver.chain_local import with_tile
    from fusion.cost.fused import model_fused
    cm = fusion.compile(v2_56, target="sim:ascend910b2", dtype="float16", fallback=True)
    plan = next(p for p in cm.chain_plans.values() if p.two_phase and not p.local_in and not p.gemm_only)
    cands = list(gemm_candidates(plan))
    keys = [same_program(q) for q in cands]
    assert len(keys) == len(set(keys)) and len(cands) > 4
    kept = {same_program(q): q for q in cands}
    twins = 0
    for bm in sorted({q.gemm_rows for q in cands}):
        q = with_tile(plan, cob=plan.cob, gemm_bm=bm, b_stream=True)
        if q is not None and same_program(q) in kept and q.tile != kept[same_program(q)].tile:
            twins += 1
            assert model_fused(q, "m", timeline=False).time_us == model_fused(kept[same_program(q)], "m", timeline=False).time_us
    assert twins
