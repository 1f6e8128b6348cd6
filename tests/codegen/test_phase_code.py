"""Every core class's Process() is rendered from the lowered program's phases
(fusion/codegen/ascendc/phase_code.py): each phase's call on its role's class, in phase order, a
SyncAll on every class where the next phase is gated by one (a hard SyncAll needs every AIC and AIV
to call it the same number of times), none before a flag-gated phase."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

import fusion.codegen.ascendc.phase_code as pc
from factories import B910, P310
from fusion.codegen.ascendc import emit_kernel
from fusion.codegen.ascendc.cxx import const_name
from schedules.lowering import build_program
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload as W, TileConfig

F16 = "float16"
TILE = TileConfig(3, 4, 2, 1, True, "twophase")
CASES = {
    "fixpipe": W(1, 40, 56, 9, 7, dtype=F16),
    "epilogue phase": W(1, 24, 24, 9, 11, act1="relu6", act2="none", residual=True, dtype=F16),
    "se": W(2, 40, 24, 9, 7, act1="silu", act2="none", dtype=F16, se_mid=10, se_act="silu", se_gate="sigmoid"),
    "norm phase": W(1, 64, 96, 8, 8, kernel=(7, 7), pads=(3, 3, 3, 3), act1="none", act2="gelu", dtype=F16,
                    ln_eps=1e-6),
}


def _plan(name, soc):
    wl = CASES[name]
    return make_plan(wl, replace(TILE, norm_phase=wl.ln_eps is not None), soc)


def _calls(text: str) -> list[str]:
    return re.findall(r"(\w+Phase|PreloadB|SyncAll)(?:<\w+>)?\(", text)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("soc", [B910, P310], ids=lambda s: s.name)
def test_process_bodies_follow_the_phases(name, soc):
    plan = _plan(name, soc)
    prog = build_program(plan)
    roles = ("core",) if soc.coupled else ("aiv", "aic")
    for role in roles:
        calls = [c for c in _calls(pc.process_body(prog, role)) if c != "PreloadB"]
        assert calls.count("SyncAll") == prog.barriers   # the same on every class
        want = []
        for k, ph in enumerate(prog.phases):
            if ph.role == role:
                want.append(pc.KINDS[ph.name].fn)
            if k + 1 < len(prog.phases) and prog.phases[k + 1].gate == "sync":
                want.append("SyncAll")
        assert calls == want


def test_the_emitted_classes_run_those_bodies():
    plan = _plan("se", B910)
    src = emit_kernel(plan, "pc").source
    aiv, aic = (src.split("class TwoPhaseAiv")[1].split("class TwoPhaseAic")[0], src.split("class TwoPhaseAic")[1])
    body = lambda cls: cls.split("void Process()")[1].split("}")[0]   # noqa: E731
    assert _calls(body(aiv)) == ["DwPhase", "SyncAll", "SePhase", "SyncAll"]
    pre = ["PreloadB"] if plan.b_resident else []   # the AIC's resident PW weights, before any wait
    assert _calls(body(aic)) == pre + ["SyncAll", "SyncAll", "GemmPhase"]
    assert "void SePhase(" in aiv and "void SePhase(" not in aic   # a phase's methods live in its role's class


def test_a_new_phase_kind_is_one_entry(monkeypatch):
    """A phase kind the project does not have, registered in this test only, is called between
    the SyncAlls around it on its role's class, and waited for by the other class."""
    plan = _plan("fixpipe", B910)
    prog = build_program(plan)
    dw = prog.phases[0]
    grown = replace(prog, phases=(dw, replace(dw, name="copy")) + prog.phases[1:])
    monkeypatch.setitem(pc.KINDS, "copy", pc.PhaseCode("CopyPhase", lambda p: "", "the copy is complete"))
    assert _calls(pc.process_body(grown, "aiv")) == ["DwPhase", "SyncAll", "CopyPhase", "SyncAll"]
    pre = ["PreloadB"] if plan.b_resident else []
    assert _calls(pc.process_body(grown, "aic")) == pre + ["SyncAll", "SyncAll", "GemmPhase"]
    assert "the copy is complete" in pc.process_body(grown, "aic")


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("soc", [B910, P310], ids=lambda s: s.name)
def test_pipeline_queue_depths_are_the_emitted_queues(name, soc):
    """The overlap the simulator credits a phase (its pipeline's ring depths) is the emitted
    kernel's: every ring that is a kernel buffer has the depth of the buffer's emitted copies
    constant (TQue<..., k<Name>Copies> / the TBuf's slots)."""
    plan = _plan(name, soc)
    header = emit_kernel(plan, "pq").tiling_header
    emitted = {m.group(1): int(m.group(2)) for m in re.finditer(r"constexpr uint32_t (k\w+)Copies = (\d+);", header)}
    rings = {(s.ring, s.depth) for ph in build_program(plan).phases for s in ph.pipeline
             if s.ring and const_name(s.ring) in emitted}
    assert rings, "no phase ring is a kernel buffer"
    for ring, depth in rings:
        assert emitted[const_name(ring)] == depth, ring
