"""A chain in image chunks whose AICs load the next member's resident PW weights beside their own
GEMM tiles (schedules/wave.ahead_loads / ahead_layout, emit_chain's SetAhead): the layout, the
simulator's figure and the emitted kernel on the emulator."""

from __future__ import annotations

from dataclasses import replace

import onnx
import pytest

import fusion
import fusion.codegen.ascendc.emit_chain as emit_chain_mod
from fusion.codegen.ascendc.emit_chain import emit_chain
from fusion.codegen.ascendc.emit_kernel import emit_kernel
from fusion.core.errors import MegafuseError
from fusion.cost.wave import wave_cost
from fusion.driver.chain import in_l2
from fusion.driver.chain_wave import waved, with_ahead
from fusion.emu import EmulationError
from schedules.lowering import build_program
from factories import check_with_plans
from schedules.wave import ahead_loads, chain_steps, l1_own, member_plan, warm_tasks, warm_tasks_all

F16 = "float16"


def _compile(tmp_path_factory, name, model, outputs):
    p = tmp_path_factory.mktemp("ahead") / f"{name}.onnx"
    onnx.save(model, p)
    return fusion.compile(str(p), target="ascend:910b2", dtype=F16, outputs=outputs, fallback=False)


@pytest.fixture(scope="module")
def v2_b4(tmp_path_factory):
    """MobileNetV2 b1-b4 at batch 4 (56 px, width 0.35) on 910B2: each fused block's weights loaded
    by its expansion stage's task (a stage's tail above its buffers)."""
    from models.mobilenet import mobilenet_v2

    return _compile(tmp_path_factory, "v2b4", mobilenet_v2(batch=4, resolution=56, width=0.35), "b4_pw_bn")


@pytest.fixture(scope="module")
def v1_b7(tmp_path_factory):
    """MobileNetV1 b1-b7 at batch 4 (64 px, width 0.5) on 910B2: regions above and below the task
    before's buffers both occur."""
    from models.mobilenet import mobilenet_v1

    return _compile(tmp_path_factory, "v1b7", mobilenet_v1(batch=4, resolution=64, width=0.5), "b7_pw_bn")


def _ahead(cm):
    (c,) = cm.chains
    plans = with_ahead(c, waved(c, cm.chain_plans, 2, False))
    kplans = [member_plan(plans[n]) for n in c.blocks]
    progs = [build_program(p) for p in kplans]
    return c, plans, kplans, progs, chain_steps(2, kplans, progs)


@pytest.mark.parametrize("which", ["v2_b4", "v1_b7"])
def test_regions_are_disjoint_and_the_wave_shorter(which, request):
    """Each target's bResQue (its lead + offset) lies in an L1 region the member before holds and does
    not use (its lead below its buffers or its tail above them); every plan fits; the targets run warm;
    the simulator times the wave shorter than without the loads ahead (MobileNetV1), no longer (V2)."""
    cm = request.getfixturevalue(which)
    c, plans, kplans, progs, steps = _ahead(cm)
    ahead = ahead_loads(steps, progs, kplans)
    assert ahead and all(p.fits() and member_plan(p).fits() for p in plans.values())
    kinds = set()
    for s, (s2, (m, k, _)) in ahead.items():
        p, q = kplans[m - 1], kplans[m]
        off, nb, _ = l1_own(q)
        lo, hi = q.l1_lead + off, q.l1_lead + off + nb
        own_lo, own_hi = p.l1_lead, p.l1_lead + l1_own(p)[2]
        assert hi <= own_lo or lo >= own_hi                              # not p's buffers
        assert (hi <= p.l1_lead) if not p.l1_tail else (hi <= own_hi + p.l1_tail)   # inside p's region
        kinds.add("below" if not p.l1_tail else "above")
        assert (s2, m, k) in warm_tasks_all(steps, progs, kplans) and (s2, m, k) not in warm_tasks(steps, progs)
    if which == "v1_b7":
        assert kinds == {"below", "above"}
    l2 = [in_l2(c, k, kp) for k, kp in enumerate(kplans)]
    before = wave_cost([replace(p, w_pw_ahead=False, w_pw_next=False, l1_lead=0, l1_tail=0) for p in plans.values()], l2)
    after = wave_cost(list(plans.values()), l2)
    # V2's tiny expansion stages: every step waits for its DW task, the loads change nothing
    assert after.body_us < before.body_us if which == "v1_b7" else after.body_us <= before.body_us


def test_loaded_ahead_on_the_emulator(v2_b4, emu_cache, monkeypatch):
    """The chain kernel with the loads ahead equals its members' kernels run chunk by chunk, bit for
    bit; its GM reads are their sum less the same-member warm bytes only (a load ahead moves, it is
    not saved). Without the SetAhead calls (the targets still run warm) the emulator finds the
    targets' weights never loaded: what the check above rests on."""
    c, plans, kplans, progs, steps = _ahead(v2_b4)
    kernels = [emit_kernel(kp, n) for kp, n in zip(kplans, c.blocks)]
    ec = emit_chain(c.name, kernels, c.residual_from, c.stages, 2)
    assert ec.source.count("op.SetAhead(") == len(ahead_loads(steps, progs, kplans)) == len(c.stages)
    res, cc = check_with_plans(v2_b4, plans)
    assert res.passed and cc.max_abs == 0.0 and cc.counters_match and cc.warm_reads > 0
    assert cc.counters["gm_read_bytes"] == cc.blocks_counters["gm_read_bytes"] - cc.warm_reads
    monkeypatch.setattr(emit_chain_mod, "_ahead_call", lambda *a: "")
    try:
        res, cc = check_with_plans(v2_b4, plans)
        broken = not (res.passed and cc.max_abs == 0.0)
    except EmulationError as e:
        broken = "never written" in str(e) or "uninitialized" in str(e)
    assert broken


@pytest.mark.slow
def test_loaded_below_and_above_on_the_emulator(v1_b7, emu_cache):
    """MobileNetV1 b1-b7: the regions below the task before's buffers (in its lead) and above them."""
    _, plans, *_ = _ahead(v1_b7)
    res, cc = check_with_plans(v1_b7, plans)
    assert res.passed and cc.max_abs == 0.0 and cc.counters_match


def test_an_overlapping_region_is_refused(v2_b4):
    """A target whose bResQue would not lie inside the task before's region is refused at emission."""
    c, plans, kplans, *_ = _ahead(v2_b4)
    m = next(k for k, p in enumerate(kplans) if p.w_pw_ahead)
    bad = list(kplans)
    bad[m] = replace(kplans[m], l1_lead=0)
    kernels = [emit_kernel(kp, n) for kp, n in zip(bad, c.blocks)]
    with pytest.raises(MegafuseError, match="do not fit its L1 region"):
        emit_chain(c.name, kernels, c.residual_from, c.stages, 2)
