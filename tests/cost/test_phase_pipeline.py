"""A multi-phase kernel is its phases (docs/design.md, "A multi-phase kernel is its phases"): the
simulator times any phase from its pipeline (schedules/steps.StageSpec), with no code of its own
per phase kind. Checked by hand on a made-up phase, and by adding a phase kind the project does
not have ("copy": the workspace copied through UB, a SyncAll each side) in this test only."""

from __future__ import annotations

from dataclasses import replace

import pytest

import fusion.cost.twophase as tp
from fusion.cost.pipes import _sim
from factories import B910, P310, SMALL_WL
from schedules.lowering import build_program
from schedules.plan import make_plan
from schedules.steps import Copy, Phase, StageSpec, VectorOp
from schedules.workload import TileConfig

IN = Copy("handoff", "in", "buf", "ws", 4096, 1)
OP = VectorOp("copy", "buf", 2048, 4, 16)
OUT = Copy("handoff", "out", "buf", "ws", 4096, 1)
IT = (IN, OP, OUT)


def _phase(depth: int) -> Phase:
    pipeline = (StageSpec("MTE2", "in", "buf", depth), StageSpec("vector", "op", "out", depth), StageSpec("MTE3", "out"))
    return Phase("copy", "aiv", ((IT,), (IT,)), ((0, 1),), (), pipeline=pipeline)


@pytest.mark.parametrize("depth, end", [(1, 7.0), (2, 6.0)])
def test_a_phase_is_timed_from_its_pipeline(depth, end):
    # MTE2 1, vector 2, MTE3 1 us per iteration; two units on one core.
    # depth 1: unit 1's load waits for unit 0's op to free the one buffer (3), its op for unit 0's
    # store to free `out` (4): 3-4, 4-6, 6-7.  depth 2: 1-2, 3-5 (the vector unit is free at 3), 5-6.
    ph = _phase(depth)
    timed = {IT: (1.0, 0.0, 0.0, 2.0, 1.0)}
    seq = [(j, 0.0, tp._unit_steps(ph, ph.units[u], timed)) for j, u in enumerate(ph.assignment[0])]
    assert _sim(seq, True).end == pytest.approx(end)


def test_accumulator_ring_is_held_by_the_iteration_that_writes_out():
    k_step = (IN, OP)   # a K step that accumulates; the last one also writes the tile out
    ph = Phase("k", "aic", ((k_step, k_step, IT),), ((0,),), (),
               pipeline=(StageSpec("MTE2", "a k{q}", "a_l1", 2), StageSpec("cube", "mmad", "acc", 2, when_out=True),
                         StageSpec("MTE3", "y")))
    timed = {k_step: (1.0, 0.0, 1.0, 0.0, 0.0), IT: (1.0, 0.0, 1.0, 0.0, 1.0)}
    steps = tp._unit_steps(ph, ph.units[0], timed)
    assert [st[1][3] for st in steps] == [None, None, "acc"]   # the accumulator is read out once
    assert [st[0][2] for st in steps] == ["a k0", "a k1", "a k2"]


@pytest.mark.parametrize("soc", [B910, P310], ids=lambda s: s.name)
def test_a_new_phase_kind_needs_no_simulator_code(monkeypatch, soc):
    """The "copy" phase between the DW phase and the GEMM: its bytes are in the counts, and the body
    grows by at least its SyncAll and its busiest core's serial copy time."""
    plan = make_plan(SMALL_WL, TileConfig(4, 4, 1, 1, True, "twophase"), soc)
    base = tp.model_twophase(plan, timeline=False)
    prog = build_program(plan)
    dw = prog.phases[0]
    n = 2 * len(dw.assignment)
    unit = (Copy("handoff", "in", "x_tile", "dw_ws", 4096, 1), VectorOp("copy", "x_tile", 2048, 4, 16),
            Copy("handoff", "out", "x_tile", "dw_ws", 4096, 1))
    pipeline = (StageSpec("MTE2", "in", "x_tile", 1), StageSpec("vector", "op", "x_tile", 1), StageSpec("MTE3", "out"))
    extra = Phase("copy", dw.role, tuple((unit,) for _ in range(n)),
                  tuple((c, c + len(dw.assignment)) for c in range(len(dw.assignment))), (), pipeline=pipeline)
    grown = replace(prog, phases=(dw, extra) + prog.phases[1:])
    monkeypatch.setattr(tp, "build_program", lambda p: grown)
    cost = tp.model_twophase(plan, timeline=False)
    assert cost.gm_read_bytes == base.gm_read_bytes + n * 4096
    assert cost.gm_write_bytes == base.gm_write_bytes + n * 4096
    assert cost.traffic["handoff"] == base.traffic["handoff"] + 2 * n * 4096
    assert cost.counts["dma_transfers"] == base.counts["dma_transfers"] + 2 * n
    assert cost.counts["vector_instrs"] == base.counts["vector_instrs"] + n * 4
    assert cost.body_us > base.body_us + tp.sync_all_us(soc)
    # the phase note places it between the DW phase and the GEMM, a SyncAll each side
    note = next(x for x in cost.notes if x.startswith("phases (MODELED)"))
    assert ", SyncAll" in note.split("copy ")[0] and "SyncAll" in note.split("copy ")[1].split("gemm")[0]


def test_a_new_step_kind_is_its_class_alone():
    """A step kind the project does not have, defined here: its `fold` is all the counts and the
    timers need (schedules/steps.fold_steps; fusion/cost/steps.iteration_us times the copies only)."""
    from dataclasses import dataclass
    from fusion.cost.results import _Acc
    from fusion.cost.steps import iteration_us
    from schedules.steps import VEC_INSTRS, count_steps

    @dataclass(frozen=True)
    class Fence:   # say, a vector-side fence that issues one instruction
        def fold(self, v, soc, dtype):
            v[VEC_INSTRS] += 1

    assert count_steps(B910, (OP, Fence(), Fence()))["vector_instrs"] == OP.instrs + 2
    acc = _Acc()
    t = iteration_us(B910, "float16", acc, (OP, Fence()), 1, lambda c: 0.0)
    base = iteration_us(B910, "float16", _Acc(), (OP,), 1, lambda c: 0.0)
    assert t[3] == pytest.approx(base[3] + B910.vector_instr_cycles / (B910.clock_ghz * 1e3))
    assert acc.counts["vector_instrs"] == OP.instrs + 1
