"""DMA volume of a fused plan (its lowered program's, summed by schedules/program_totals.py, and the
cost model's, which comes from the same program) against hand-computed bytes
(tests/factories.hand_traffic), the cached totals against KernelProgram.counts, its per-core floor, and the --max-dma-ratio cap in the tile
space, the sweep and the command line."""

import json
import random

import pytest
from conftest import run_cli
from factories import hand_min_bytes, hand_traffic

from schedules import program_totals
from fusion.cost import model_fused
from fusion.core.soc import get_soc
from schedules.targets import parse_target
from schedules.traffic import (
    dma_floor_any_split_bytes,
    dma_floor_bytes,
    dma_ratio,
    gemm_cores,
    min_bytes,
)
from fusion.tuning.db import TuningDB
from fusion.tuning.search import CappedTiles, lowest_dma_ratio, sweep_modeled
from fusion.tuning.space import REASONS, SpaceOptions, build_space
from schedules.plan import make_plan
from schedules.program import tile_loops
from schedules.lowering import build_program
from schedules.workload import DwSepWorkload, TileConfig

WORKLOADS = [
    DwSepWorkload(1, 32, 64, 28, 28, dtype="float16"),
    DwSepWorkload(1, 64, 128, 28, 28, stride=(2, 2), dtype="float16"),
    DwSepWorkload(2, 40, 56, 19, 19, stride=(2, 2), dtype="float16"),
    DwSepWorkload(1, 32, 48, 14, 14, kernel=(5, 5), pads=(2, 2, 2, 2), dtype="float32"),
    # MobileNetV2-style: relu6, linear PW and a residual (the 910B cube epilogue runs on the AIV)
    DwSepWorkload(1, 96, 96, 14, 14, act1="relu6", act2="none", residual=True, dtype="float16"),
    DwSepWorkload(1, 256, 256, 7, 7, dtype="float16"),
]


def _plans(n_per=10, seed=0):
    rng = random.Random(seed)
    for wl in WORKLOADS:
        for soc_name in ("ascend910b2", "ascend310p3"):
            soc = get_soc(soc_name)
            tiles = build_space(wl, soc, "sim").legal_tiles()
            for t in rng.sample(tiles, min(n_per, len(tiles))):
                yield make_plan(wl, t, soc)


@pytest.mark.parametrize("plan", list(_plans()), ids=lambda p: f"{p.soc.name}-{p.workload.describe()}-{p.tile.describe()}")
def test_program_dma_bytes_equal_cost_model_and_respect_floor(plan):
    cost = model_fused(plan, timeline=False)
    dma = program_totals.dma_bytes(plan)
    hand = hand_traffic(plan)   # windows, cores and tiles counted by hand, not from the program
    assert {k: v for k, v in dma.items() if v} == {k: v for k, v in hand.items() if v}
    assert cost.traffic == hand and cost.gm_bytes == sum(hand.values())
    assert dma_floor_any_split_bytes(plan.workload, gemm_cores(plan)) <= dma_floor_bytes(plan) <= cost.gm_bytes
    assert min_bytes(plan.workload) == cost.min_gm_bytes == hand_min_bytes(plan.workload)


def test_cached_totals_equal_program_counts_for_every_variant():
    """The totals built from cached loops equal KernelProgram.counts (which walks every tile of every
    core), and each loop builder the totals call gives tile_loops' loop (the cache keys and the
    builder table agree with schedules/program.py)."""
    seen = set()
    for plan in _plans(n_per=6, seed=3):
        prog = build_program(plan)
        want = prog.counts
        got = program_totals.counts(plan)
        assert got == {k: want.get(k, 0) for k in got}, plan.tile.describe()
        for core in {c.role: c for c in prog.cores}.values():
            r, c = prog.tiles[core.tiles[-1]]
            for loop in tile_loops(plan, core.role, r, c):
                assert program_totals._BUILDERS[(core.role, loop.var)](plan, r, c) == loop.iters
        seen.add((plan.variant, plan.fixpipe_epilogue))
    assert {("vector-pw", False), ("cube-pw", False), ("cube-pw-mix", False), ("cube-pw-mix", True)} <= seen


def test_one_core_one_tile_reaches_the_minimal_bytes():
    wl = DwSepWorkload(1, 64, 64, 7, 7, dtype="float16")
    plan = make_plan(wl, TileConfig(7, 7, 4, 0, False, "vector"), get_soc("ascend910b2"))
    assert plan.n_tiles == 1 and plan.cores == 1 and plan.fits()
    assert dma_ratio(plan) == pytest.approx(1.0) and dma_floor_bytes(plan) == min_bytes(wl)


def test_floor_grows_with_cores_by_the_pw_weights():
    wl = DwSepWorkload(1, 128, 128, 28, 28, dtype="float16")
    soc = get_soc("ascend310p3")
    p1 = make_plan(wl, TileConfig(7, 28, 8, 0, True, "vector", 2), soc)
    p2 = make_plan(wl, TileConfig(7, 28, 8, 0, True, "vector", 4), soc)
    w_pw = 128 * 128 * 2 + 128 * 4 + 8 * 9 * 16 * 2 + 128 * 4   # PW weights + PW bias + DW taps + DW bias
    assert dma_floor_bytes(p2) - dma_floor_bytes(p1) == (p2.cores - p1.cores) * w_pw


def test_any_split_floor_on_many_cores_is_far_above_minimal():
    # 128->128 @56: with 24 equal shares no split of the work reads less than ~1.45x the minimal bytes
    wl = DwSepWorkload(1, 128, 128, 56, 56, dtype="float16")
    assert dma_floor_any_split_bytes(wl, 1) <= min_bytes(wl)   # one core: no re-reads forced
    assert dma_floor_any_split_bytes(wl, 24) / min_bytes(wl) == pytest.approx(1.45, abs=0.01)
    assert dma_floor_any_split_bytes(wl, 2) < dma_floor_any_split_bytes(wl, 24)


def test_space_cap_keeps_exactly_the_tiles_within_it():
    wl, soc = WORKLOADS[0], get_soc("ascend310p3")
    free = build_space(wl, soc, "sim")
    capped = build_space(wl, soc, "sim", SpaceOptions(max_dma_ratio=1.2))
    within = {t.key() for t in free.legal_tiles() if dma_ratio(make_plan(wl, t, soc)) <= 1.2}
    assert {t.key() for t in capped.legal_tiles()} == within
    assert 0 < len(within) < free.n_legal
    assert capped.pruned["traffic"] == free.n_legal - len(within)
    assert "traffic" in REASONS


def test_capped_sweep_finds_the_fastest_tile_within_the_cap():
    wl, tgt = WORKLOADS[0], parse_target("sim:ascend310p3")
    opts = SpaceOptions(max_dma_ratio=1.2)
    bounded = sweep_modeled("b", wl, tgt, TuningDB(None), options=opts)
    exhaustive = sweep_modeled("b", wl, tgt, TuningDB(None), options=opts, exhaustive=True)
    assert bounded.best.latency_us == pytest.approx(exhaustive.best.latency_us)
    assert all(dma_ratio(make_plan(wl, p.tile, tgt.soc)) <= 1.2 for p in exhaustive.points.values())
    hook = CappedTiles(TuningDB(None), 1.2)
    assert hook(wl, tgt) == bounded.best.tile


def test_unreachable_cap_names_the_lowest_ratio():
    wl, tgt = DwSepWorkload(1, 256, 256, 28, 28, dtype="float16"), parse_target("sim:ascend910b2")
    low, tile = lowest_dma_ratio(wl, tgt)
    assert low > 1.0 and dma_ratio(make_plan(wl, tile, tgt.soc)) == pytest.approx(low)
    with pytest.raises(Exception, match=f"lowest any legal tile reaches is {low:.2f}x"):
        CappedTiles(TuningDB(None), 1.0)(wl, tgt)


_run = run_cli


@pytest.mark.parametrize("argv, message", [
    (("-t", "llvm", "--max-dma-ratio", "1.2"), "applies to the Ascend targets"),
    (("--max-dma-ratio", "0.9"), "must be >= 1"),
    (("--max-dma-ratio", "1.01"), "lowest any legal tile reaches"),
    (("--max-dma-ratio", "1.3", "--tile", "4x4"), "cannot be combined with --tile"),
])
def test_cli_cap_errors_are_one_line(capsys, block_path, argv, message):
    code, _out, err = _run(capsys, "compile", block_path, "--no-db", *argv)
    assert code == 2 and message in err and err.count("\n") == 1


def test_bench_under_cap_reports_ratio_floor_and_cap(capsys, block_path, tmp_path):
    out_json = tmp_path / "r.json"
    code, out, _ = _run(capsys, "bench", block_path, "-t", "sim:ascend310p3", "--dtype", "float16", "--no-db",
                        "--no-fallback", "--max-dma-ratio", "1.2", "--json", str(out_json))
    assert code == 0 and "floor on" in out
    rep = json.loads(out_json.read_text())
    assert rep["max_dma_ratio"] == 1.2
    for k in rep["kernels"]:
        assert k["traffic_ratio"] <= 1.2 and 1.0 <= k["dma_floor_ratio"] <= k["traffic_ratio"]
        assert k["tile_source"] == "tuned"
