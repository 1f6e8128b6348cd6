"""910B two-phase kernel, phase 3 on cross-core flags (issue 30): the AIVs of AIC g's group finish
each tile's epilogue as soon as the AIC signals it, instead of after a second all-core SyncAll.
The emulator runs the kernel: its outputs match the reference (ONNX Runtime for a whole model),
its counters the program's, and every core's cross-core sets / waits and SyncAlls are the ones the
program's flag-gated phase names (schedules/program_twophase.epi_phase). The simulator times the
same flags: the epilogue overlaps the GEMM, and the body is shorter than with the barrier."""

from __future__ import annotations

import dataclasses
import re

import pytest

import models
import fusion.cost.twophase as cost_twophase
from fusion.codegen.ascendc import emit_kernel
from fusion.core.soc import SOCS
from fusion.driver.compiler import compile_model
from fusion.driver.tile_policy import TileOverride
from fusion.verify.ascend_check import check_ascend
from fusion.verify.emu_run import build_all
from schedules.plan import make_plan
from schedules.program_twophase import build_twophase, phase
from schedules.twophase import EPI_LAG
from schedules.workload import DwSepWorkload as W, TileConfig
from factories import run_twophase_checked

F16 = "float16"
SOC = SOCS["ascend910b2"]
# residual blocks whose act2 comes before the Add (y = relu6(PW) + res: neither the Fixpipe nor the
# GEMM's K can finish them, schedules/twophase.res_in_cube), odd shapes, few cores so one AIC runs
# many tiles: 14 tiles of 16 rows (the second AIV's part empty), and 20 tiles of 48 rows (parts of
# 32 and 16 rows; more tiles than a flag counter holds, so the pacing is exercised)
CASES = [
    (W(1, 24, 24, 9, 11, act1="relu6", act2="relu6", residual=True, dtype=F16), TileConfig(3, 4, 1, 1, True, "twophase", 2)),
    (W(1, 40, 40, 19, 23, act1="relu6", act2="relu6", residual=True, dtype=F16), TileConfig(3, 4, 2, 1, True, "twophase", 2)),
]


@pytest.fixture(scope="module")
def kernels():
    eks = [emit_kernel(make_plan(wl, tile, SOC), f"epif{i}") for i, (wl, tile) in enumerate(CASES)]
    built, _ = build_all(eks)
    return list(zip(eks, built))


def _expected_sync(prog) -> dict[str, tuple[int, int, int]]:
    """Per core ("AIC0", "AIV3", ...): (cross-core sets, waits, SyncAlls) the program's phases name:
    a flag-gated unit is one wait on its consumer and one signal of its producer tile; the
    producer waits for the answer to each tile but the last EPI_LAG (and the consumers answer those)."""
    gemm, epi = phase(prog, "gemm"), phase(prog, "epi")
    assert epi.gate == "flags" and prog.barriers == 1
    out = {}
    for g, tiles in enumerate(gemm.assignment):
        n = len(tiles)
        out[f"AIC{g}"] = (n, max(0, n - EPI_LAG), 1)
    for c, units in enumerate(epi.assignment):
        # each unit waits for the tile it finishes, in its producer's order
        g = c // (len(epi.assignment) // len(gemm.assignment))
        assert [epi.deps[u] for u in units] == list(gemm.assignment[g])
        out[f"AIV{c}"] = (max(0, len(units) - EPI_LAG), len(units), 1)
    return out


@pytest.mark.parametrize("i", range(len(CASES)))
def test_emulator_runs_the_flags_the_program_names(kernels, i):
    wl, _tile = CASES[i]
    ek, built = kernels[i]
    prog, run = run_twophase_checked(ek, built, wl)   # counters and numerics
    expect = _expected_sync(prog)
    got = {core.name: (row["cross_flag_sets"], row["cross_flag_waits"], row["sync_alls"])
           for core, row in zip(run.cores, run.per_core)}
    for name, sets_waits_syncs in got.items():   # cores outside the groups: the phase-1 SyncAll only
        assert sets_waits_syncs == expect.get(name, (0, 0, 1)), name
    assert max(n for n, _w, _s in expect.values()) > EPI_LAG   # the pacing ran


def test_no_second_sync_all_in_the_kernel_text(kernels):
    ek, _ = kernels[1]
    code = "\n".join(line.split("//")[0] for line in ek.source.splitlines())
    assert len(re.findall(r"\bSyncAll<false>\(\)", code)) == 2   # phase 1 -> 2, once on each core type
    assert "CrossCoreWaitFlag(3)" in code and "CrossCoreSetFlag<2, PIPE_FIX>(3)" in code


def test_check_ascend_odd_residual_block_matches_onnxruntime():
    """`check -t ascend:910b2` on a residual block with relu6 before its Add (24 -> 24 at 9 x 11):
    the two-phase kernel with its per-tile epilogue matches ONNX Runtime, GM bytes equal the model's."""
    m = models.dwsep_block(24, 24, h=9, w=11, act1="relu6", act2="relu6", residual=True)
    cm = compile_model(m, target="ascend:910b2", dtype=F16, tile=TileOverride(pw_engine="twophase"))
    (blk,) = cm.fused_blocks
    assert blk.plan.variant == "two-phase" and phase(build_twophase(blk.plan), "epi").gate == "flags"
    res = check_ascend(cm, m, seed=0)
    assert res.passed, res
    assert res.blocks[0].gm_bytes_match, res.blocks[0]


def _phase_spans(note: str) -> dict[str, tuple[float, float]]:
    return {n: (float(a), float(b)) for n, a, b in re.findall(r"(\w+) ([0-9.]+)-([0-9.]+) us", note)}


def test_simulator_overlaps_the_epilogue_with_the_gemm(monkeypatch):
    """The step simulator times the flags, not a barrier: the epilogue starts before the GEMM phase
    ends, and the body is shorter than the same program with a SyncAll before phase 3 (MODELED)."""
    wl, tile = CASES[1]
    plan = make_plan(wl, tile, SOC)
    flags = cost_twophase.model_twophase(plan, timeline=False)
    spans = _phase_spans(next(n for n in flags.notes if n.startswith("phases")))
    assert spans["epi"][0] < spans["gemm"][1] < spans["epi"][1]
    prog = build_twophase(plan)
    barrier = dataclasses.replace(prog, phases=prog.phases[:-1] + (dataclasses.replace(prog.phases[-1], gate="sync"),))
    monkeypatch.setattr(cost_twophase, "build_program", lambda p: barrier)
    synced = cost_twophase.model_twophase(plan, timeline=False)
    assert "SyncAll" in next(n for n in synced.notes if n.startswith("phases")).split("gemm")[1]
    assert flags.time_us < synced.time_us
    # the same steps either way: the counts do not change, only the time
    assert flags.counts == synced.counts
