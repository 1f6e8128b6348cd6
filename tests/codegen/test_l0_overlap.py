"""The overlap of L1 -> L0 loads (MTE1) with the Mmads that the cost model credits is the emitted
kernel's: the emulator counts, per A2 / B2 (L0A / L0B) queue, the AllocTensors and how many took
the other buffer than the one before (fusion/emu/include/megafuse_emu/pipe.h, ping/pong). Where
the plan gives L0A / L0B two copies (schedules/steps.l0_copies == 2: the two-phase GEMM loop,
templates/twophase_gemm.h; the MIX AIC, aic_class.h, where two fit), every load after a queue's
first on a core goes into the other buffer, so it can run while the Mmad before it does; where it
gives one (single-buffered plans, the 310P cube kernel), every load waits for the buffer the Mmad
before it still reads, and the model runs them one after the other. MODELED figures are not asserted here, only the kernel's structure
against the plan the model reads."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.codegen.ascendc import emit_kernel
from fusion.core.soc import SOCS
from schedules.steps import l0_copies
from fusion.verify.emu_run import build_all, run_emitted
from schedules.plan import make_plan
from schedules.program_twophase import build_twophase, phase
from schedules.workload import DwSepWorkload as W, TileConfig

F16 = "float16"
WL = W(1, 40, 56, 9, 9, dtype=F16)   # C1 = 3 (K in several blocks), Cout not a multiple of 16
# (tile, SoC, the L0 copies the plan gives): the two-phase GEMM and the 910B MIX AIC double-buffer
# L0 where two copies fit (schedules/plan.l0_operand_copies); single-buffered plans and the 310P
# cube kernel (its bias GEMM budgets one copy) hold one
CASES = {
    "two-phase": (TileConfig(3, 5, 2, 1, True, "twophase"), "ascend910b2", 2),
    "mix": (TileConfig(3, 3, 1, 1, True, "cube"), "ascend910b2", 2),
    "mix-single-buffered": (TileConfig(3, 3, 1, 1, False, "cube"), "ascend910b2", 1),
    "cube-310p": (TileConfig(3, 3, 1, 1, True, "cube"), "ascend310p3", 1),
}


def _args(wl: W) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    kh, kw = wl.kernel
    a = {"x": rng.standard_normal((wl.batch, wl.c1, wl.height, wl.width, 16)),
         "w_dw": rng.standard_normal((wl.c1, kh, kw, 16)) / 3,
         "b_dw": rng.standard_normal((wl.c1, 16)),
         "w_pw": rng.standard_normal((wl.co1, wl.c1, 16, 16)) / np.sqrt(wl.cin),
         "b_pw": rng.standard_normal((wl.co1, 16))}
    return {k: np.ascontiguousarray(v.astype("float32" if k in ("b_dw", "b_pw") else wl.dtype)) for k, v in a.items()}


@pytest.fixture(scope="module")
def runs():
    eks = {name: emit_kernel(make_plan(WL, tile, SOCS[soc]), f"l0{name.replace('-', '_')}")
           for name, (tile, soc, _) in CASES.items()}
    built, _ = build_all(list(eks.values()))
    out = {}
    for (name, ek), b in zip(eks.items(), built):
        _y, counters, res = run_emitted(ek, b, _args(WL))
        out[name] = (ek, counters, [row for r in res for row in r.per_core])
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_l0_queues_ping_pong_as_the_model_assumes(runs, name):
    ek, counters, per_core = runs[name]
    plan = ek.plan
    want_copies = CASES[name][2]
    assert l0_copies(plan) == want_copies
    assert counters["l0_allocs"] > 0
    for row in per_core:
        if not row["l0_allocs"]:
            continue
        if want_copies == 2:
            # every allocation but each queue's (A2, B2) first on the core takes the other buffer
            assert row["l0_alloc_switches"] == row["l0_allocs"] - 2, row
        else:
            assert row["l0_alloc_switches"] == 0, row


def test_two_phase_l0_allocs_are_the_programs_k_steps(runs):
    """One A2 and one B2 allocation per K step of every GEMM tile (the program's L1 -> L0 moves)."""
    ek, counters, _ = runs["two-phase"]
    gemm = phase(build_twophase(ek.plan), "gemm")
    moves = sum(1 for core in gemm.assignment for u in core for it in gemm.units[u] for s in it
                if getattr(s, "path", "").startswith("L1->L0"))
    assert moves > 2 * len([c for c in gemm.assignment if c])   # more than one K step per core
    assert counters["l0_allocs"] == moves
