"""The pool DW form (schedules/dw_forms.pool_form, templates/compute_dw_pool.h): a head block's
global average pool, written as a DW whose taps are all 1 / (kh kw), summed in halves instead of
one MulAdd per tap, its taps not loaded. On the emulator: GM bytes, vector instructions and repeats
equal to the program, the output the NumPy reference's (uniform taps, as the pass writes them)."""

from __future__ import annotations

import pytest

from factories import B910, P310, run_twophase_checked
from fusion.codegen.ascendc import emit_kernel
from fusion.verify.emu_run import build_all
from schedules.dw_forms import grouped_dw_ops, pool_form
from schedules.loops import halvings
from schedules.plan import make_plan
from schedules.program_twophase import build_twophase
from schedules.workload import DwSepWorkload as W, TileConfig

HEAD = W(1, 200, 40, 7, 7, kernel=(7, 7), pads=(0, 0, 0, 0), act1="none", act2="none", dtype="float16", head=True)
HEAD5 = W(1, 72, 24, 5, 5, kernel=(5, 5), pads=(0, 0, 0, 0), act1="none", act2="relu", dtype="float16", head=True)
CASES = [(HEAD, TileConfig(1, 1, 2, 8, True, "twophase"), B910), (HEAD5, TileConfig(1, 1, 1, 3, True, "twophase"), B910),
         (HEAD, TileConfig(1, 1, 2, 8, True, "twophase"), P310), (HEAD5, TileConfig(1, 1, 1, 3, True, "twophase"), P310)]


def test_pool_form_counts_by_hand():
    # 13 blocks = 2 groups of <= 8; 49 pixels summed in halves: 24, 12, 6, 3, 2, 1 pixels added
    ops = {op.op: op for op in grouped_dw_ops(B910, HEAD, 1, 1, 13)}
    assert halvings(49) == [24, 12, 6, 3, 2, 1]
    assert (ops["dw_sum"].instrs, ops["dw_sum"].repeats) == (2 * 6, 2 * 48)
    assert (ops["dw_scale"].instrs, ops["dw_scale"].repeats) == (2, 2)
    assert "dw_taps" not in ops
    # not for a DW that is not a whole-input head pool
    assert not pool_form(W(1, 200, 40, 7, 7, kernel=(7, 7), pads=(0, 0, 0, 0), act1="none", dtype="float16"), 1, 1)
    assert not pool_form(W(1, 64, 40, 7, 7, kernel=(3, 3), act1="none", dtype="float16", head=True), 1, 1)


def test_pool_form_loads_no_taps():
    plan = make_plan(HEAD, CASES[0][1], B910)
    assert plan.dw_grouped and pool_form(HEAD, plan.th, plan.tw)
    assert build_twophase(plan).weight_reads["w_dw"] == 0


@pytest.fixture(scope="module")
def kernels():
    eks = [emit_kernel(make_plan(wl, tile, soc), f"pool{i}") for i, (wl, tile, soc) in enumerate(CASES)]
    built, _ = build_all(eks)
    return list(zip(eks, built))


@pytest.mark.parametrize("i", range(len(CASES)))
def test_pool_form_on_the_emulator(kernels, i):
    ek, built = kernels[i]
    assert "m -= m / 2" in ek.source and "MulAddDst" not in ek.source.split("ComputeDw")[1].split("HandOff")[0]
    run_twophase_checked(ek, built, CASES[i][0])   # counters = program, output within 2e-2 of the reference
