"""A chain in image chunks (schedules/wave.py): the steps' order, the legality, the chunk plans."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fusion.core.soc import get_soc
from schedules.lowering import build_program
from schedules.plan import make_plan
from schedules.wave import ROLES, chunk_plan, member_plan, roles, warm_bytes, warm_tasks, wave_refusal, wave_steps
from schedules.workload import DwSepWorkload, TileConfig

F16 = "float16"


def _plan(soc="ascend910b2", batch=4, act2="relu", **kw):
    wl = DwSepWorkload(batch, 32, 64, 14, 14, act1="relu", act2=act2, dtype=F16, **kw)
    return make_plan(wl, TileConfig(7, 14, 4, pw_engine="twophase"), get_soc(soc))


@pytest.mark.parametrize("member_roles,chunks", [
    ((("aiv", "aic"),) * 3, 2),
    ((("aiv", "aic"), ("aic",), ("aiv", "aic"), ("aic",)), 2),
    ((("aiv", "aic"),) * 2 + (("aic",),), 4),
])
def test_steps_keep_each_chunks_order_and_one_task_per_role(member_roles, chunks):
    steps = wave_steps(member_roles, chunks)
    done = {}
    for s, step in enumerate(steps):
        assert len({member_roles[m][k] for m, k, _ in step}) == len(step) <= len(ROLES)
        assert len({c for _, _, c in step}) == len(step)   # two tasks of one chunk never share a step
        for m, k, c in step:
            done[m, k, c] = s
    order = [(m, k) for m, rs in enumerate(member_roles) for k in range(len(rs))]
    assert len(done) == len(order) * chunks   # every task once
    for c in range(chunks):   # a chunk's tasks in program order, each after its predecessor's step
        at = [done[m, k, c] for m, k in order]
        assert at == sorted(at) and len(set(at)) == len(at)


def test_two_chunks_overlap_dw_and_gemm():
    """Three DW blocks in two chunks: the first and last steps hold one task, every other a DW
    beside a GEMM -- 7 steps where the chain runs 6 phases per chunk."""
    steps = wave_steps((("aiv", "aic"),) * 3, 2)
    assert len(steps) == 7
    assert [len(s) for s in steps] == [1, 2, 2, 2, 2, 2, 1]


def test_a_joined_stage_runs_in_its_producers_gemm_task():
    """MobileNetV2's pattern (DW block, GEMM stage, DW block, GEMM stage) in two chunks: a joined
    stage's GEMM follows its producer's GEMM in the same step on the same chunk, so the steps are
    those of the DW blocks alone (5) where four separate AIC tasks per chunk take 9."""
    rs = (("aiv", "aic"), ("aic",), ("aiv", "aic"), ("aic",))
    assert len(wave_steps(rs, 2)) == 9
    steps = wave_steps(rs, 2, frozenset({1, 3}))
    assert len(steps) == 5
    for step in steps:
        for m, k, c in step:
            if m in (1, 3):   # right after its producer's GEMM, same chunk
                i = step.index((m, k, c))
                assert i and step[i - 1] == (m - 1, 1, c)
    assert sorted(t for st in steps for t in st) == sorted((m, k, c) for c in range(2) for m, r in enumerate(rs)
                                                          for k in range(len(r)))
    with pytest.raises(ValueError, match="another role"):
        wave_steps(rs, 2, frozenset({2}))   # a DW cannot join a GEMM task


def test_chunk_plan_is_the_plan_at_a_fraction_of_the_batch():
    p = _plan(batch=4)
    q = chunk_plan(p, 2)
    assert q.workload == replace(p.workload, batch=2) and q.tile == p.tile and q.chunks == 1
    assert member_plan(p) is p   # not chunked: its own
    assert member_plan(replace(p, chunks=2)) == q
    assert roles(build_program(member_plan(replace(p, chunks=2)))) == ("aiv", "aic")
    assert chunk_plan(p, 3) is None   # 4 images do not split in 3


def test_refusals_name_the_rule():
    assert wave_refusal(_plan(), 2) is None
    assert "same cores" in wave_refusal(_plan("ascend310p3"), 2)
    assert "does not split" in wave_refusal(_plan(batch=3), 2)
    assert "does not split" in wave_refusal(_plan(batch=1), 2)
    # an act2 the Fixpipe cannot apply: the epilogue runs on the AIVs behind cross-core flags
    assert "phases dw+gemm+epi" in wave_refusal(_plan(act2="hardswish"), 2)
    assert "producer" in wave_refusal(replace(_plan(), local_in=True), 2)


def test_warm_tasks_are_a_blocks_second_gemm_right_after_its_first():
    """schedules/wave.warm_tasks: an AIC task alone, right after the same block's same phase alone on
    another chunk, with resident PW weights -- never the first, never after another block's task or a
    joined stage (their buffers overwrote the L1 the weights were in), never without a preload."""
    soc = get_soc("ascend910b2")
    wl = DwSepWorkload(4, 32, 64, 14, 14, act1="relu", act2="relu", dtype=F16)
    res = make_plan(wl, TileConfig(7, 14, 4, pw_engine="twophase"), soc)
    stream = make_plan(wl, TileConfig(7, 14, 4, pw_engine="twophase", b_stream=True), soc)
    assert res.b_resident and not stream.b_resident
    for plans in ([res, res, res], [res, stream, res]):
        kplans = [member_plan(replace(p, chunks=2)) for p in plans]
        progs = [build_program(p) for p in kplans]
        steps = wave_steps(tuple(roles(p) for p in progs), 2)
        warm = warm_tasks(steps, progs)
        aic = [(s, t) for s, st in enumerate(steps) for t in st if progs[t[0]].phases[t[1]].role == "aic"]
        want = {(s, m, k) for (p, (m0, k0, c0)), (s, (m, k, c)) in zip(aic, aic[1:])
                if (m0, k0) == (m, k) and c0 != c and kplans[m].b_resident}
        assert warm == want and len(warm) == sum(p.b_resident for p in plans)
        assert warm_bytes(2, kplans, progs) == sum(
            st.nbytes for _, m, k in warm for pre in progs[m].phases[k].preload for st in pre)
    # a GEMM stage joined to its producer's task: the stage's buffers overwrote the L1 where the
    # producer's weights were, so its second task is cold; the stage alone after itself is warm
    st = DwSepWorkload(4, 64, 64, 14, 14, kernel=(1, 1), pads=(0, 0, 0, 0), act1="none", act2="relu", dtype=F16)
    stage = replace(make_plan(st, TileConfig(14, 14, 4, pw_engine="twophase"), soc), gemm_only=True)
    kplans = [member_plan(replace(res, chunks=2)), member_plan(replace(stage, chunks=2))]
    progs = [build_program(p) for p in kplans]
    assert stage.b_resident and roles(progs[1]) == ("aic",)
    joined = wave_steps(tuple(roles(p) for p in progs), 2, frozenset({1}))
    assert not warm_tasks(joined, progs)
    alone = wave_steps(tuple(roles(p) for p in progs), 2)
    assert {m for _, m, _ in warm_tasks(alone, progs)} == {0, 1}
