"""A 310P two-phase kernel whose GEMM follows its own DW phase on each core (plan.local_dw,
schedules/local_handoff.dw_local_ok, fusion/driver/chain_dw_local.py): DW units dealt by row of
tiles, GEMM M tiles in bands of the same rows, a pipe barrier instead of the SyncAll. The
legality is read from the program's assignments; the simulator starts each core's GEMM when its
own DW ends; the kernel runs on the emulator with the program's counters and per-core cube work."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fusion.codegen.ascendc import emit_kernel
from fusion.core.errors import MegafuseError
from fusion.core.soc import SOCS
from fusion.cost.twophase import model_twophase
from fusion.driver.chain_dw_local import candidates, with_band
from fusion.verify.emu_run import build_all
from schedules.local_handoff import dw_local_ok, local_ok
from schedules.loops import band_tile, band_tiles, by_band, by_m_tile
from schedules.lowering import build_program
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload as W, TileConfig

from factories import cube_fractals_by_core, run_twophase_checked

F16 = "float16"
P310 = SOCS["ascend310p3"]
# 16 x 16 pixels, 3 input channel blocks (cib 1: three units per tile), two tile columns per row of
# tiles, 2 output blocks streamed: rows of 4 give 4 bands of 64 GEMM rows, 2 M tiles of 32 each
BLOCK = W(1, 40, 24, 16, 16, act1="relu6", act2="none", dtype=F16)
TILE = TileConfig(4, 8, 1, 1, True, "twophase", b_stream=True, gemm_bm=32)


def _local(wl=BLOCK, tile=TILE, soc=P310):
    return replace(make_plan(wl, tile, soc), local_dw=True)


def test_by_band_deals_whole_bands_and_is_by_m_tile_for_bands_of_one():
    assert by_band(5, 2, 1, 2) == ((0, 1, 4), (2, 3))          # bands {0,1} {2,3} {4}: the last ragged
    assert by_band(5, 2, 2, 2) == ((0, 1, 2, 3, 8, 9), (4, 5, 6, 7))
    for m in range(1, 12):
        for n in range(1, 4):
            for cores in range(1, 5):
                assert by_band(m, 1, n, cores) == by_m_tile(m, n, cores)
                for g in range(1, 5):
                    got = by_band(m, g, n, cores)
                    assert sorted(u for c in got for u in c) == list(range(m * n))
                    assert all(band_tiles(c, m, g, cores) * n == len(got[c]) for c in range(cores))
    assert band_tile(1, 3, 2, 2, 2) == 3   # core 1's 4th tile: its band 1's second M tile (3)


def test_the_program_deals_rows_of_tiles_and_bands_and_has_no_syncall():
    p = _local()
    assert dw_local_ok(p) is None
    prog = build_program(p)
    dw, gemm = prog.phases
    assert gemm.gate == "local" and prog.barriers == 0
    # a row of tiles (2 columns x 3 ci-blocks = 6 units) per core, one row each
    assert dw.assignment[:4] == tuple(tuple(range(6 * b, 6 * b + 6)) for b in range(4)) and not any(dw.assignment[4:])
    # M tiles 2b and 2b + 1 (band b) with both N tiles on core b
    assert gemm.assignment[:4] == tuple(tuple(range(4 * b, 4 * b + 4)) for b in range(4))
    plain = build_program(replace(p, local_dw=False))
    assert plain.barriers == 1 and plain.phases[0].assignment != dw.assignment


def test_legality_refuses_what_would_read_other_cores_rows():
    assert "different cores" in dw_local_ok(_local(soc=SOCS["ascend910b2"]))
    with pytest.raises(ValueError, match="one core running both phases"):
        build_program(_local(soc=SOCS["ascend910b2"]))
    # M tiles of 48 rows straddle the 64-row bands
    assert "reads rows other cores" in dw_local_ok(_local(tile=replace(TILE, gemm_bm=48)))
    # tiles of 3 rows: bands of 48 rows, M tiles of 32 straddle them
    assert "reads rows other cores" in dw_local_ok(_local(tile=replace(TILE, th=3)))
    assert "GEMM does not follow" in dw_local_ok(replace(_local(), gemm_only=True))


def test_simulator_starts_each_core_gemm_at_its_own_dw_end():
    # 32 rows: 8 bands, one per core, as balanced as the round-robin of the same 48 units
    p = _local(wl=replace(BLOCK, height=32))
    local, plain = model_twophase(p), model_twophase(replace(p, local_dw=False))
    assert local.time_us < plain.time_us
    assert any("pipe barrier per core" in n for n in local.notes)
    assert any("SyncAll" in n and "pipe barrier" not in n for n in plain.notes if n.startswith("phases"))


def test_candidates_are_legal_and_keep_a_local_stage_legal():
    wl = W(1, 32, 16, 64, 64, act1="relu6", act2="none", dtype=F16)
    plan = make_plan(wl, TileConfig(16, 8, 1, 1, True, "twophase"), P310)
    got = list(candidates(plan))
    assert got and all(dw_local_ok(p) is None and q is None for p, q in got)
    stage_wl = W(1, 16, 96, 64, 64, kernel=(1, 1), pads=(0, 0, 0, 0), act1="none", act2="relu6", dtype=F16)
    stage = replace(make_plan(stage_wl, TileConfig(2, 64, 2, 1, True, "twophase", b_stream=True), P310),
                    gemm_only=True, local_in=True)
    pairs = [(p, q) for p, q in candidates(plan, stage) if q is not None]
    assert pairs
    for p, q in pairs:
        assert local_ok(p, q) and q.gemm_rows == p.gemm_rows and q.m_band == p.th * 64 // p.gemm_rows
    # none on 910B (AIVs, then AICs)
    assert not list(candidates(make_plan(wl, TileConfig(16, 8, 1, 1, True, "twophase"), SOCS["ascend910b2"])))


def test_emitter_refuses_an_illegal_local_plan():
    with pytest.raises(MegafuseError, match="cannot follow its own DW phase"):
        emit_kernel(_local(tile=replace(TILE, gemm_bm=48)), "bad")


# a 1x1 expansion after BLOCK (24 -> 40 channels), re-tiled to follow the local block's bands
STAGE = W(1, 24, 40, 16, 16, kernel=(1, 1), pads=(0, 0, 0, 0), act1="none", act2="relu6", dtype=F16)


def _banded_stage():
    stage = replace(make_plan(STAGE, TileConfig(2, 16, 1, 1, True, "twophase", b_stream=True), P310),
                    gemm_only=True, local_in=True)
    producer = _local(tile=replace(TILE, cob=2))   # local_ok: each GEMM tile holds all its output channels
    q = with_band(stage, producer)
    assert q is not None and q.m_band == 2 and local_ok(producer, q)
    assert with_band(stage, _local()) is None       # its tiles split the output channels over two N tiles
    return q


# an M tile per DW tile (tile_m): 5 x 6 tiles of a 16 x 16 plane (ragged last row and column: 1 x 4),
# and a residual block whose 6 x 8 tiles leave 1 x 3 pixels at the corner
TILE_M = [(BLOCK, TileConfig(5, 6, 1, 1, True, "twophase", b_stream=True, gemm_bm=32)),
          (W(1, 40, 40, 13, 11, act1="relu6", act2="none", residual=True, dtype=F16),
           TileConfig(6, 8, 3, 2, True, "twophase", gemm_bm=48))]


def _tile_m(i: int):
    wl, tile = TILE_M[i]
    return replace(make_plan(wl, tile, P310), local_dw=True, tile_m=True)


def test_tile_m_deals_a_tile_per_gemm_tile_and_gathers_its_pixels():
    p = _tile_m(0)
    assert dw_local_ok(p) is None
    prog = build_program(p)
    dw, gemm = prog.phases
    assert prog.m_tiles == p.n_tiles == 12 and gemm.gate == "local"
    assert dw.assignment == by_m_tile(p.n_tiles, p.ci_steps, p.cores)
    assert gemm.assignment == by_m_tile(p.n_tiles, p.co_steps, len(gemm.assignment))
    # tile 2 (5 x 4 pixels, the ragged column) and the corner tile 11 (1 x 4): A holds their pixels
    # only, kb channel blocks of a run per tile row each
    for t, px, runs in ((2, 20, 5), (11, 4, 1)):
        a = gemm.units[t * p.co_steps][0][0]
        assert a.gm == "dw_ws" and a.nbytes == prog.kb * px * 16 * 2 and a.bursts == prog.kb * runs
    # GEMM rows that cannot hold a tile, or tile_m without the local hand-off
    assert "do not hold" in dw_local_ok(replace(make_plan(BLOCK, replace(TILE_M[0][1], gemm_bm=16), P310),
                                                local_dw=True, tile_m=True))
    with pytest.raises(ValueError, match="tile_m"):
        build_program(replace(p, local_dw=False))


def test_candidates_offer_tile_m_only_without_a_local_stage_after():
    wl = W(1, 64, 64, 14, 14, act1="relu6", act2="none", dtype=F16)
    plan = make_plan(wl, TileConfig(7, 7, 2, 1, True, "twophase"), P310)
    assert any(p.tile_m for p, _ in candidates(plan))
    stage_wl = W(1, 64, 128, 14, 14, kernel=(1, 1), pads=(0, 0, 0, 0), act1="none", act2="relu6", dtype=F16)
    stage = replace(make_plan(stage_wl, TileConfig(2, 14, 2, 1, True, "twophase", b_stream=True), P310),
                    gemm_only=True, local_in=True)
    assert not any(p.tile_m for p, _ in candidates(plan, stage))


@pytest.fixture(scope="module")
def local_kernels():
    plans = [_local(), _banded_stage(), _tile_m(0), _tile_m(1)]
    eks = [emit_kernel(p, f"ldw{i}") for i, p in enumerate(plans)]
    built, _ = build_all(eks)
    return list(zip(plans, eks, built))


@pytest.mark.parametrize("i", [0, 1, 2, 3])
def test_local_kernels_run_as_their_programs(local_kernels, i):
    """On the emulator: output, GM bytes, vector work and cube fractals equal to the program's
    (factories.run_twophase_checked), per core the cube fractals of the GEMM tiles it is dealt;
    the blocks with a pipe barrier where the SyncAll was; the stage after the banded block dealt by
    its bands; the tile_m blocks' GEMM tiles their DW tiles (ragged ones, a residual)."""
    p, ek, built = local_kernels[i]
    if not p.gemm_only:
        assert "PipeBarrier<PIPE_ALL>();  // local DW -> GEMM" in ek.source and "SyncAll(syncGm" not in ek.source
    prog, run = run_twophase_checked(ek, built, p.workload, identity_dw=p.gemm_only)
    gemm = prog.phases[-1]
    if p.tile_m:
        assert "A_LOAD_TILE" not in ek.source and "a run per tile row (tile_m)" in ek.source
        assert gemm.assignment == by_m_tile(p.n_tiles, prog.n_tiles, len(gemm.assignment))
    else:
        assert "BandTile(core, i, tl.gemmBand, tl.coSteps, tl.gemmCores)" in ek.source
        assert gemm.assignment == by_band(prog.m_tiles, 2, prog.n_tiles, len(gemm.assignment))
    got, want = cube_fractals_by_core(p.soc, gemm, run)
    assert got == want and sum(w > 0 for w in want) == min(8, prog.m_tiles if p.tile_m else 4)
    if not p.gemm_only:   # the reads ahead are dealt over the cores with DW units: the kernel counts them as the program
        busy = sum(1 for c in prog.phases[0].assignment if c)
        rule = "LoopMin(tl.nTiles, tl.blockDim)" if p.tile_m else "LoopMin(tl.nTiles / tl.tilesW, tl.blockDim)"
        assert f"DwCores() const {{ return {rule}; }}" in ek.source
        assert busy == min(p.cores, p.n_tiles if p.tile_m else p.n_tiles // p.tiles_w)
