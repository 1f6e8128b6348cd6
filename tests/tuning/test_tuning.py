"""Tile autotuning: the pruned space, the sim sweep, the database (resume, keys, bad lines),
`megafuse compile` picking tuned tiles, and a tiny measured llvm sweep."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest

import models
from fusion.cli.main import main
from fusion.core.errors import TuningDatabaseError
from fusion.core.soc import get_soc
from schedules.targets import parse_target
from fusion.tuning.db import (
    TunedTiles,
    TuningDatabaseWarning,
    TuningDB,
    key_context,
    make_record,
    tuning_key,
)
from fusion.tuning.evaluators import model_tile, modeled_lower_bound
from fusion.tuning.search import Pool, sweep_measured, sweep_modeled
from fusion.tuning.space import REASONS, SpaceOptions, build_space, default_tile
from schedules.plan import balanced_sizes, make_plan
from schedules.workload import DwSepWorkload, TileConfig

ROOT = Path(__file__).resolve().parents[2]
SIM = parse_target("sim:ascend910b2")


def _modeled(wl, tile, soc=SIM.soc) -> dict:
    """A record result as `tune` stores it: the cost model's own latency (records that the model
    does not reproduce are skipped when used: fusion.tuning.plausible)."""
    return {"latency_us": model_tile(wl, soc, tile)["latency_us"]}


@pytest.fixture(autouse=True)
def _private_db(tmp_path, monkeypatch):
    """Never read or write the user's cache database from the tests."""
    monkeypatch.setenv("MEGAFUSE_TUNING_DB", str(tmp_path / "default-db.jsonl"))


def _db_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------------------------
# the space
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
def test_space_pruning_counts_and_budget(soc):
    wl = DwSepWorkload(1, 40, 80, 28, 28, dtype="float16")   # c1 = 3, co1 = 5 (cob 4 is unbalanced)
    s = get_soc(soc)
    sp = build_space(wl, s, "sim")
    nh, nw = len(balanced_sizes(28)), len(balanced_sizes(28))
    cores = SpaceOptions().core_choices(s)
    assert sp.total == nh * nw * wl.co1 * (wl.c1 + 1) * 2 * 2 * len(cores)
    assert sp.n_legal + sum(sp.pruned.values()) == sp.total
    assert set(sp.pruned) <= set(REASONS) and sp.pruned["duplicate"] > 0 and sp.pruned["dominated"] > 0
    assert sp.pruned["overflow:UB"] > 0
    a = sp.arrays
    assert (sp.status[a["cib"] == wl.c1] == REASONS.index("duplicate")).all()   # cib = c1 ≡ 0
    assert (sp.status[(a["cob"] == 4) & (a["cib"] != wl.c1)] >= 0).all()        # unbalanced cob
    # the vectorised budget agrees with make_plan on every point it judged
    budget_judged = np.flatnonzero((sp.status < 0) | (sp.status >= REASONS.index("overflow:UB")))
    for i in budget_judged[:: max(1, len(budget_judged) // 1500)]:
        t = sp.tile_at(int(i))
        plan = make_plan(wl, t, s)
        assert plan.fits() == (sp.status[i] < 0), (t, plan.overflows())
        if sp.status[i] >= 0:
            assert REASONS[sp.status[i]] == f"overflow:{plan.overflows()[0][0]}"
    assert "legal" in sp.describe_pruning() and "overflow:UB" in sp.describe_pruning()


def test_llvm_space_has_one_engine_and_no_db_twins():
    wl = DwSepWorkload(1, 32, 32, 14, 14)
    sp = build_space(wl, get_soc(None), "llvm", SpaceOptions(cores=(0,), engines=("vector", "cube")))
    tiles = sp.legal_tiles()
    assert tiles and all(t.pw_engine == "vector" for t in tiles)
    keys = [(t.th, t.tw, t.cob, t.cib) for t in tiles]
    assert len(keys) == len(set(keys))   # a tile that fits double-buffered has no single-buffered twin


# --------------------------------------------------------------------------------------------
# sim sweep
# --------------------------------------------------------------------------------------------
def test_sim_sweep_bound_prunes_and_never_exceeds_the_model():
    """The branch and bound settles the space while evaluating a small fraction of it (what makes
    `tune` fast; its points/s is printed by `tune`, not asserted on this shared machine's clock)."""
    wl = DwSepWorkload(1, 384, 64, 14, 14, act1="relu6", act2="none", residual=True)
    res = sweep_modeled("blk", wl, SIM, TuningDB(None))
    assert res.space.n_legal > 5000
    # 883 of 6433 evaluated (73 before the column-group DW taps: they cut the fp32 one-phase
    # tiles' vector bound, so more of them bound below the 2nd-best latency and get modeled)
    assert len(res.points) < res.space.n_legal / 5, (len(res.points), res.space.n_legal)
    assert not res.bound_fallback and not res.stopped_early
    assert res.covered >= res.space.n_legal
    d = res.default_point
    assert d is not None and res.best.latency_us <= d.latency_us
    # the bound never exceeds the model (sampled over the legal space, small tiles included)
    soc = SIM.soc
    for t in random.Random(0).sample(res.space.legal_tiles(), 25):
        assert modeled_lower_bound(wl, soc, t) <= model_tile(wl, soc, t)["latency_us"] * (1 + 1e-9)


BOUND_WORKLOADS = [
    DwSepWorkload(1, 32, 64, 28, 28, dtype="float16"),
    DwSepWorkload(2, 40, 56, 19, 19, stride=(2, 2), dtype="float16"),
    DwSepWorkload(1, 32, 48, 14, 14, kernel=(5, 5), pads=(2, 2, 2, 2), dtype="float32"),
    DwSepWorkload(1, 96, 96, 14, 14, act1="relu6", act2="none", residual=True, dtype="float16"),
    DwSepWorkload(1, 64, 64, 56, 56, act2="relu6", dtype="float16"),
]


def test_bound_is_below_the_model_for_every_variant_on_both_arches():
    """modeled_lower_bound <= model_tile on sampled plans of every variant (vector PW, 310P cube,
    910B MIX with and without the Fixpipe epilogue) and dtype; it stays close (a loose bound would
    not prune)."""
    seen, ratios = set(), []
    for soc_name in ("ascend910b2", "ascend310p3"):
        soc = get_soc(soc_name)
        for wl in BOUND_WORKLOADS:
            tiles = build_space(wl, soc, "sim").legal_tiles()
            for t in random.Random(7).sample(tiles, min(12, len(tiles))):
                plan = make_plan(wl, t, soc)
                bound, lat = modeled_lower_bound(wl, soc, t), model_tile(wl, soc, t)["latency_us"]
                assert bound <= lat * (1 + 1e-9), (soc_name, wl.describe(), t.describe(), bound, lat)
                ratios.append(bound / lat)
                seen.add((plan.variant, plan.fixpipe_epilogue))
    assert {("vector-pw", False), ("cube-pw", False), ("cube-pw-mix", False), ("cube-pw-mix", True)} <= seen
    assert sorted(ratios)[len(ratios) // 2] > 0.8


def test_resume_measures_only_missing_points(tmp_path):
    wl = DwSepWorkload(1, 32, 48, 8, 8)
    opts = SpaceOptions(cores=(0,))
    full = sweep_modeled("b", wl, SIM, TuningDB(None), exhaustive=True, options=opts)
    all_ids = set(full.points)
    assert len(all_ids) == full.space.n_legal + (0 if full.default in full.space.legal_tiles() else 1)

    path = tmp_path / "db.jsonl"
    first = sweep_modeled("b", wl, SIM, TuningDB(path), exhaustive=True, options=opts, max_new=40)
    assert first.stopped_early and first.new == 40 and len(_db_lines(path)) == 40
    seen = []
    second = sweep_modeled("b", wl, SIM, TuningDB(path), exhaustive=True, options=opts, on_new=seen.append)
    first_ids = {p for p, x in first.points.items() if x.source == "new"}
    second_new = {p for p, x in second.points.items() if x.source == "new"}
    assert second.stored == 40 and not (first_ids & second_new)
    assert first_ids | second_new == all_ids and sum(seen) == len(all_ids) - 40
    recs = _db_lines(path)
    assert len(recs) == len(all_ids) == len({r["point"] for r in recs})       # no duplicates
    third = sweep_modeled("b", wl, SIM, TuningDB(path), exhaustive=True, options=opts)
    assert third.new == 0 and len(_db_lines(path)) == len(all_ids)
    assert second.best.latency_us == full.best.latency_us


def test_killed_sweep_resumes(tmp_path):
    """SIGKILL a real `megafuse tune` half way; the rerun models only points not stored."""
    onnx.save(models.dwsep_block(cin=32, cout=32, h=14), tmp_path / "b.onnx")
    db = tmp_path / "db.jsonl"
    cmd = [sys.executable, "-m", "fusion.cli.main", "tune", str(tmp_path / "b.onnx"), "-t", "sim",
           "--db", str(db), "--workers", "0", "--quiet", "--exhaustive"]
    # --exhaustive models all 1,503 legal points (the bound would leave too few to kill the run
    # half way), so the kill lands mid-sweep
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and (not db.exists() or len(db.read_bytes().splitlines()) < 80):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _db_lines(db)
    assert len(before) >= 80
    stored = {r["point"] for r in before}
    wl = DwSepWorkload(1, 32, 32, 14, 14)
    res = sweep_modeled("dw_fused", wl, SIM, TuningDB(db), exhaustive=True)
    new = {p for p, x in res.points.items() if x.source == "new"}
    assert new and res.stored == len(stored) and not (new & stored)   # killed mid-sweep
    after = _db_lines(db)
    assert len(after) == len(before) + len(new) == len({r["point"] for r in after})
    fresh = sweep_modeled("dw_fused", wl, SIM, TuningDB(None))
    assert res.best.latency_us == pytest.approx(fresh.best.latency_us)


# --------------------------------------------------------------------------------------------
# the database
# --------------------------------------------------------------------------------------------
def test_keys_separate_stride_dtype_soc_and_target():
    wl = DwSepWorkload(1, 64, 64, 28, 28)
    variants = {
        "base": (wl, SIM),
        "stride": (DwSepWorkload(1, 64, 64, 28, 28, stride=(2, 2)), SIM),
        "dtype": (DwSepWorkload(1, 64, 64, 28, 28, dtype="float16"), SIM),
        "soc": (wl, parse_target("sim:ascend910b3")),
        "soc310": (wl, parse_target("sim:ascend310p3")),
        "llvm": (wl, parse_target("llvm")),
        "act": (DwSepWorkload(1, 64, 64, 28, 28, act2="relu6"), SIM),
    }
    keys = {k: tuning_key(w, t) for k, (w, t) in variants.items()}
    assert len(set(keys.values())) == len(keys)
    ctx = key_context(wl, SIM)
    assert ctx["layout"] == "NC1HWC0" and ctx["megafuse"] and ctx["tvm"] and ctx["evaluator"] == "modeled"
    # a record of one never answers for the others
    db = TuningDB(None)
    rec = make_record(keys["base"], ctx, TileConfig(2, 28, 2), _modeled(wl, TileConfig(2, 28, 2)))
    db.append([rec])
    hook = TunedTiles(db)
    assert hook(wl, SIM) == TileConfig(2, 28, 2)
    for k, (w, t) in variants.items():
        if k != "base":
            assert hook(w, t) is None, k


def test_sim_and_ascend_share_records_but_ascend_fp32_gets_no_cube_tile():
    asc = parse_target("ascend:ascend910b2")
    wl16 = DwSepWorkload(1, 64, 64, 28, 28, dtype="float16")
    wl32 = DwSepWorkload(1, 64, 64, 28, 28)
    assert tuning_key(wl16, SIM) == tuning_key(wl16, asc)   # one cost model: `tune` feeds `-t ascend`
    db = TuningDB(None)
    for wl in (wl16, wl32):
        key, ctx = tuning_key(wl, SIM), key_context(wl, SIM)
        cube, vector = TileConfig(2, 28, 2, 0, True, "cube"), TileConfig(2, 14, 2, 0, True, "vector")
        db.append([make_record(key, ctx, cube, _modeled(wl, cube)), make_record(key, ctx, vector, _modeled(wl, vector))])
    hook = TunedTiles(db)
    faster = {wl: min((cube, vector), key=lambda t: model_tile(wl, SIM.soc, t)["latency_us"]) for wl in (wl16, wl32)}
    assert hook(wl16, asc) == faster[wl16] and hook(wl32, SIM) == faster[wl32]
    assert hook(wl32, asc) == vector   # the fp32 cube kernel is not emitted
    swept = sweep_modeled("b", DwSepWorkload(1, 32, 48, 14, 14), asc, TuningDB(None))
    assert swept.points and all(p.tile.pw_engine == "vector" for p in swept.points.values())


def test_corrupt_and_foreign_lines_are_skipped(tmp_path, capsys):
    wl = DwSepWorkload(1, 32, 64, 28, 28)
    key, ctx = tuning_key(wl, SIM), key_context(wl, SIM)
    good = [make_record(key, ctx, TileConfig(th, 28, 4), {"latency_us": float(10 - th)}) for th in (2, 4)]
    bad_point = dict(good[0], point="0000000000000000")
    lines = [json.dumps(good[0]), "{not json", json.dumps({"hello": "world"}),
             json.dumps(dict(good[0], format="other-tool/3")), json.dumps(bad_point), "\x00\x01garbage",
             json.dumps(good[1])[:-20]]
    path = tmp_path / "db.jsonl"
    path.write_text("\n".join(lines))             # the last line is torn (no newline, truncated)
    with pytest.warns(TuningDatabaseWarning) as rec:
        db = TuningDB(path).load()
    assert len(rec) == 6 and db.skipped == 6 and len(db) == 1
    assert all(str(w.message).count("\n") == 0 for w in rec)
    db.append([good[1]])                            # appends after a torn line stay readable
    with pytest.warns(TuningDatabaseWarning):
        again = TuningDB(path).load()
    assert len(again) == 2 and again.best(key)["tile"]["th"] == 4

    with pytest.raises(TuningDatabaseError):
        TuningDB(tmp_path).load()                   # a directory: unreadable altogether
    onnx.save(models.dwsep_block(cin=32, cout=64, h=28), tmp_path / "m.onnx")
    code = main(["compile", str(tmp_path / "m.onnx"), "--db", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and err.startswith("megafuse: error:") and "tuning database" in err


# --------------------------------------------------------------------------------------------
# tune → compile
# --------------------------------------------------------------------------------------------
def test_tune_then_compile_uses_tuned_tiles(tmp_path, capsys):
    from fusion.cost import model_fused

    # on 310P tuning beats the default tile (on 910B the two-phase default wins these shapes); the
    # fused block loses to its vendor-like pair there, hence --no-fallback
    target = "sim:ascend310p3"
    model = tmp_path / "m.onnx"
    onnx.save(models.dwsep_block(cin=64, cout=128, h=56, stride=2), model)
    db = tmp_path / "db.jsonl"
    assert main(["tune", str(model), "-t", target, "--db", str(db), "--quiet", "--top", "3",
                 "--csv", str(tmp_path / "p.csv"), "--json", str(tmp_path / "p.json"),
                 "--plot", str(tmp_path / "plots")]) == 0
    out = capsys.readouterr().out
    assert "pruned:" in out and "vs default" in out and "def " in out
    doc = json.loads((tmp_path / "p.json").read_text())
    blk = doc["blocks"][0]
    assert blk["best"]["latency_us"] <= blk["default"]["latency_us"]
    assert (tmp_path / "plots" / f"{blk['name']}.png").stat().st_size > 1000
    assert (tmp_path / "p.csv").read_text().count("\n") > blk["space"]["legal"]

    assert main(["compile", str(model), "-t", target, "--no-fallback", "--db", str(db), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["fused_blocks"][0]["tile_source"] == "tuned"
    assert any("tuning database" in n and "1 of 1" in n for n in got["notes"])
    assert main(["compile", str(model), "-t", target, "--no-fallback", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "[tuned]" in out and f"tuning database {db}" in out

    from fusion.driver.compiler import compile_model

    tgt = parse_target(target)
    soc = tgt.soc
    hook = TunedTiles(TuningDB(db))
    cm = compile_model(str(model), target=target, tuned_tiles=hook)
    for b in cm.fused_blocks:
        tuned = model_fused(b.plan).time_us
        dflt = model_fused(make_plan(b.workload, default_tile(b.workload, tgt), soc)).time_us
        assert b.tile_source == "tuned" and tuned <= dflt
    assert main(["compile", str(model), "-t", target, "--no-fallback", "--db", str(db), "--no-db"]) == 0
    assert "[default]" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# llvm: measured
# --------------------------------------------------------------------------------------------
def test_tiny_llvm_sweep_is_checked(tmp_path):
    from fusion.verify.check import check_model
    from fusion.driver.compiler import compile_model

    model = models.dwsep_block(cin=32, cout=32, h=14)
    llvm = parse_target("llvm")
    db = TuningDB(tmp_path / "db.jsonl")
    wl = DwSepWorkload(1, 32, 32, 14, 14)
    with Pool(1) as pool:
        pool.force = True
        res = sweep_measured("dw_fused", wl, llvm, db, trials=3, pool=pool)
    assert res.new == 3 and res.failed == 0 and res.default_point is not None
    for p in res.points.values():
        assert p.record["check_rel_err"] <= 1e-4 and p.record["min_us"] <= p.latency_us
    assert res.best.latency_us <= res.default_point.latency_us
    again = sweep_measured("dw_fused", wl, llvm, TuningDB(tmp_path / "db.jsonl"), trials=3)
    assert again.new == 0 and again.stored == 3
    cm = compile_model(model, target="llvm", tuned_tiles=TunedTiles(TuningDB(tmp_path / "db.jsonl")))
    assert cm.fused_blocks[0].tile_source == "tuned"
    assert check_model(model, cm).passed          # the tuned kernel against ONNX Runtime
