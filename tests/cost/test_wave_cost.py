"""A chain in image chunks, timed by steps (fusion/cost/wave.py). MODELED."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fusion.core.soc import get_soc
from fusion.cost.twophase import model_twophase, sync_all_us
from fusion.cost.wave import _task, wave_cost
from schedules.lowering import build_program
from schedules.plan import make_plan
from schedules.wave import member_plan, warm_tasks
from schedules.workload import DwSepWorkload, TileConfig

F16 = "float16"


@pytest.fixture(scope="module")
def pair():
    """MobileNetV1's b1 and b2 at batch 32 (112 px), two-phase on 910B2, in two chunks."""
    soc = get_soc("ascend910b2")
    a = DwSepWorkload(32, 32, 64, 112, 112, act1="relu", act2="relu", dtype=F16)
    b = DwSepWorkload(32, 64, 128, 112, 112, stride=(2, 2), act1="relu", act2="relu", dtype=F16)
    plans = [make_plan(a, TileConfig(8, 56, 4, pw_engine="twophase"), soc),
             make_plan(b, TileConfig(4, 56, 8, cib=2, pw_engine="twophase"), soc)]
    assert all(p.fits() for p in plans)
    return [replace(p, chunks=2) for p in plans], [(), ("input",)]


def test_steps_are_bounded_by_their_tasks_and_the_roles(pair):
    plans, in_l2 = pair
    w = wave_cost(plans, in_l2)
    assert w.syncs == len(w.steps) - 1 == len(w.step_us) - 1
    kplans = [member_plan(p) for p in plans]
    progs = [build_program(p) for p in kplans]
    warm = warm_tasks(w.steps, progs)   # a GEMM task whose resident weights are still in L1
    alone = {}
    for s, step in enumerate(w.steps):
        for m, k, c in step:
            busy = sum(1 for a in progs[m].phases[k].assignment if a)
            alone[m, k, c] = _task(kplans[m], progs[m], k, busy, in_l2[m], (s, m, k) in warm)[0]
    assert warm   # b1's and b2's second GEMM
    for step, t in zip(w.steps, w.step_us):
        # sharing the GM bandwidth with the other role's task can only slow a task down
        assert t >= max(alone[task] for task in step) - 1e-9
    # each role runs its tasks one after the other: the wave is no shorter than either role's sum
    for role in ("aiv", "aic"):
        serial = sum(t for (m, k, _), t in alone.items() if progs[m].phases[k].role == role)
        assert w.body_us >= serial - 1e-9


def test_the_wave_overlaps_the_phases(pair):
    """Against the members unchunked (each its DW phase, a SyncAll, its GEMM; a SyncAll between): the
    DW of b2 on chunk 0 beside the GEMM of b1 on chunk 1 makes the chain shorter than the phases'
    sum would be chunk by chunk -- the middle steps take the longer task, not both (MODELED: 5 % at
    least with its extra SyncAlls)."""
    plans, in_l2 = pair
    w = wave_cost(plans, in_l2)
    middle = [t for step, t in zip(w.steps, w.step_us) if len(step) == 2]
    assert len(middle) == len(w.steps) - 2
    sync = sync_all_us(plans[0].soc)
    # (a two-phase body holds its own SyncAll; one more between the members)
    unchunked = sum(model_twophase(replace(p, chunks=1), in_l2=l).body_us for p, l in zip(plans, in_l2)) + sync
    assert w.body_us + w.syncs * sync < 0.95 * unchunked


@pytest.fixture(scope="module")
def v2_b4(tmp_path_factory):
    """MobileNetV2 b1-b4 at batch 4 (56 px, width 0.35) on 910B2: DW blocks and GEMM stages, the
    stages after their producer on the same cores."""
    import onnx

    import fusion
    from models.mobilenet import mobilenet_v2

    p = tmp_path_factory.mktemp("wave_cost") / "v2b4.onnx"
    onnx.save(mobilenet_v2(batch=4, resolution=56, width=0.35), p)
    return fusion.compile(str(p), target="sim:ascend910b2", dtype=F16, outputs="b4_pw_bn", fallback=False), p


@pytest.mark.parametrize("join", [False, True])
def test_bench_charges_the_chain_in_chunks_its_steps_and_syncalls(v2_b4, join):
    """bench's one-launch figure moves by exactly what the chain's time moves when its members run
    in image chunks: the steps' bodies and every SyncAll between them (none dropped)."""
    from fusion.driver.chain_wave import waved
    from fusion.report.bench import bench_sim

    cm, p = v2_b4
    (c,) = cm.chains
    before = dict(cm.chain_plans)
    flat, _ = bench_sim(cm, str(p))
    try:
        cm.chain_plans.update(waved(c, cm.chain_plans, 2, join))
        wave, _ = bench_sim(cm, str(p))
    finally:
        cm.chain_plans.update(before)
    (ch0,), (ch1,) = flat["chains"], wave["chains"]
    assert ch1["chunks"] == 2 and ch1["syncs"] == ch1["steps"] - 1
    assert ch1["syncs"] > ch0["syncs"] or join
    moved = ch1["time_us"] - ch0["time_us"]
    assert wave["bodies"]["fused_one_launch_us"] - flat["bodies"]["fused_one_launch_us"] == pytest.approx(moved, abs=1e-6)


@pytest.mark.parametrize("barrier", ["local", "aic"])
def test_a_joined_stage_runs_after_its_producers_gemm_in_one_step(v2_b4, barrier):
    """A GEMM stage joined to its producer's GEMM task: that step lasts at least the two GEMMs one
    after the other (each alone) and, where the stage does not follow on the same cores, the AICs'
    barrier between them (a SyncAll's time); the wave has fewer steps than with the stage in its own."""
    from fusion.driver.chain import in_l2
    from fusion.driver.chain_wave import waved

    cm, _ = v2_b4
    (c,) = cm.chains
    joined, apart = waved(c, cm.chain_plans, 2, True), waved(c, cm.chain_plans, 2, False)
    if barrier == "aic":
        joined = {n: replace(p, local_in=False) for n, p in joined.items()}
    sync = sync_all_us(cm.target.soc)
    lists = {j: ([p[n] for n in c.blocks], [in_l2(c, k, p[n]) for k, n in enumerate(c.blocks)])
             for j, p in ((True, joined), (False, apart))}
    w, w0 = wave_cost(*lists[True]), wave_cost(*lists[False])
    assert len(w.steps) < len(w0.steps)
    assert w.aic_barriers == (2 * len(c.stages) if barrier == "aic" else 0) and w0.aic_barriers == 0
    kplans = [member_plan(p) for p in lists[True][0]]
    progs = [build_program(p) for p in kplans]
    pairs = 0
    warm = warm_tasks(w.steps, progs)   # (their resident weights still in L1: no load)
    for s, (step, t) in enumerate(zip(w.steps, w.step_us)):
        aic = [(m, k) for m, k, _ in step if progs[m].phases[k].role == "aic"]
        pairs += len(aic) == 2
        alone = sum(_task(kplans[m], progs[m], k, sum(1 for a in progs[m].phases[k].assignment if a),
                          lists[True][1][m], (s, m, k) in warm)[0] for m, k in aic)
        assert t >= alone + (sync if barrier == "aic" and len(aic) == 2 else 0.0) - 1e-9
    assert pairs == 2 * sum(p.joined for p in kplans) == 2 * len(c.stages)   # each joined stage once per chunk


def test_a_warm_gemm_task_skips_its_resident_load(pair):
    """A GEMM task whose resident PW weights are still in L1 (schedules/wave.warm_tasks) does not load
    them again: shorter by at most that load, and its traffic less by exactly those bytes; the wave
    charges it in the step after the same block's GEMM on the other chunk."""
    plans, in_l2 = pair
    p = member_plan(plans[1])
    prog = build_program(p)
    k = next(k for k, ph in enumerate(prog.phases) if ph.role == "aic")
    ph = prog.phases[k]
    assert p.b_resident and any(ph.preload)
    busy = sum(1 for c in ph.assignment if c)
    cold, acc_c, _ = _task(p, prog, k, busy, in_l2[1])
    warm, acc_w, _ = _task(p, prog, k, busy, in_l2[1], warm=True)
    assert warm < cold
    pre = sum(s.nbytes for core in ph.preload for s in core)
    assert acc_c.reads - acc_w.reads == pre
    w = wave_cost(plans, in_l2)
    steps = list(w.steps)
    kplans = [member_plan(q) for q in plans]
    assert {(s, m) for s, m, _ in warm_tasks(w.steps, [build_program(q) for q in kplans])} == {
        (s, m) for s, st in enumerate(steps) for m, kk, c in st
        if kplans[m].b_resident and kk == len(build_program(kplans[m]).phases) - 1
        and any(t[:2] == (m, kk) and t[2] != c for t in steps[s - 1])}
