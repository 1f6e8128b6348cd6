"""A chain's gemm_only GEMM stage on its fastest GEMM tile (fusion/driver/stage_tiles.py): the
two-phase search picks a stage's tile timing its identity-copy phase, which a gemm_only stage
does not run; in the chain its N tile, M-tile rows and weight streaming are chosen again by the
stage's body. The retiled stages' kernels run in the chain on the emulator (slow test)."""

from __future__ import annotations

import json
from dataclasses import replace

import onnx
import pytest

import fusion
from conftest import run_cli
from fusion.driver.chain import member_cost
from fusion.driver.stage_tiles import fastest_gemm_tile, gemm_candidates
from models.mobilenet import mobilenet_v2
from schedules.plan import make_plan

F16 = "float16"


@pytest.fixture(scope="module")
def v2_56_full(tmp_path_factory):
    """MobileNetV2 at 56 px, width 0.35, whole: its late expansions and head run at 4 x 4 and 2 x 2."""
    p = tmp_path_factory.mktemp("stagetiles") / "v2s56.onnx"
    onnx.save(mobilenet_v2(resolution=56, width=0.35), p)
    return str(p)


def _body(chain, k, plan):
    c = member_cost(chain, k, plan)
    return c.time_us - c.launch_us


def test_stages_take_their_fastest_gemm_tile(v2_56_full):
    cm = fusion.compile(v2_56_full, target="sim:ascend910b2", dtype=F16)
    (c,) = cm.chains
    at = {n: k for k, n in enumerate(c.blocks)}
    retiled = [n for n in c.stages if not cm.chain_plans[n].local_in
               and cm.chain_plans[n].tile != cm.chain_stages[n].plan.tile]
    assert "head" in retiled
    for n in retiled:
        p = cm.chain_plans[n]   # (its workload may differ from the stage's own: a relu6 deferred)
        own = replace(make_plan(p.workload, cm.chain_stages[n].plan.tile, p.soc), gemm_only=True, x_max=p.x_max)
        assert p.gemm_only and p.fits()
        best = min(_body(c, at[n], q) for q in gemm_candidates(p))
        assert _body(c, at[n], p) == pytest.approx(best) and best < _body(c, at[n], own)


def test_fastest_gemm_tile_leaves_local_and_copying_stages(v2_56_full):
    cm = fusion.compile(v2_56_full, target="sim:ascend910b2", dtype=F16)
    (c,) = cm.chains
    local = next(n for n in c.stages if cm.chain_plans[n].local_in)
    body = pytest.fail   # neither is timed: both are returned as they are
    assert fastest_gemm_tile(cm.chain_plans[local], body) is cm.chain_plans[local]
    copying = replace(cm.chain_plans["head"], gemm_only=False)
    assert fastest_gemm_tile(copying, body) is copying


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
def test_retiled_stages_run_in_the_chain_on_the_emulator(v2_56_full, emu_cache, capsys, soc):
    """The whole model on the emulator: the chain (its retiled stages reading x in several M tiles,
    pad rows into the boundary slack) bitwise equal to its members run one by one, counters their
    sum, the model PASS vs ORT."""
    code, out, _ = run_cli(capsys, "check", v2_56_full, "-t", soc.replace("ascend", "ascend:"), "--dtype", F16,
                           "--no-db", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["passed"]
    (c,) = res["chains"]
    assert "head" in c["stages"] and c["max_abs"] == 0.0 and c["counters_match"]
