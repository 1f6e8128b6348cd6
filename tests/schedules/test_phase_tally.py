"""A two-phase program's units of one shape are one tuple, and Phase.iterations is the plain tally of
what the cores run, in the order they first reach it (the compile-time memo of schedules/steps.py and
schedules/program_twophase.py must not change a count or the order the timers add them in)."""

from __future__ import annotations

from collections import Counter

import pytest

from fusion.core.soc import SOCS
from schedules.lowering import build_program
from schedules.plan import make_plan
from schedules.steps import count_steps
from schedules.workload import DwSepWorkload, TileConfig

ODD = DwSepWorkload(2, 40, 56, 19, 19, stride=(2, 2), dtype="float16")            # ragged tiles, two images
RES = DwSepWorkload(3, 48, 48, 13, 11, act1="relu6", act2="none", residual=True, dtype="float32")


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
@pytest.mark.parametrize("wl, tile", [(ODD, TileConfig(3, 5, 2, 1, True, "twophase")),
                                      (RES, TileConfig(4, 4, 1, 2, True, "twophase", gemm_bm=48))],
                         ids=["odd", "res"])
def test_units_of_one_shape_share_a_tuple_and_the_tally_is_the_plain_count(soc, wl, tile):
    plan = make_plan(wl, tile, SOCS[soc])
    assert plan.fits()
    prog = build_program(plan)
    naive_counts: Counter = Counter()
    repeats = 0
    for ph in prog.phases:
        # units of one shape share a tuple: fewer objects than units where contents repeat (the shape
        # key may keep apart units whose steps happen to be equal, never merge different ones)
        # (the DW and GEMM phases' builders; the other phases' units are few or built per unit)
        if ph.name in ("dw", "gemm"):
            objects, contents = len({id(u) for u in ph.units}), len(set(ph.units))
            assert contents <= objects and (objects < len(ph.units) or contents == len(ph.units))
            repeats += len(ph.units) - objects
        naive = Counter(it for core in ph.assignment for u in core for it in ph.units[u])
        assert ph.iterations == naive and list(ph.iterations) == list(naive)
        for core in ph.assignment:
            for u in core:
                for it in ph.units[u]:
                    count_steps(plan.soc, it, 1, naive_counts)
        count_steps(plan.soc, ph.prologue, sum(1 for core in ph.assignment if core), naive_counts)
        for pre in ph.preload:
            count_steps(plan.soc, pre, 1, naive_counts)
        for core in ph.prefetch:
            for reads in core:
                count_steps(plan.soc, reads, 1, naive_counts)
    assert prog.counts == naive_counts
    assert repeats > 0
