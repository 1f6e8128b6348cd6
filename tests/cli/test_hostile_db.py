"""Hostile tuning databases: records checked by schema (never coerced), forced flags winning over
records, concurrent writers writing each record once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx
import pytest
from test_hostile import ROOT, block

from fusion.cli.main import main


def _db_fixture():
    from fusion.driver.compiler import compile_model
    from schedules.targets import parse_target
    from fusion.tuning.db import key_context, tuning_key

    m = block()
    (b,) = compile_model(m, target="sim").fused_blocks
    tgt = parse_target("sim")
    return m, b.workload, tgt, tuning_key(b.workload, tgt), key_context(b.workload, tgt)


def test_db_records_checked_by_schema_never_coerced(tmp_path):
    from fusion.tuning.db import TuningDatabaseWarning, TuningDB, make_record
    from schedules.workload import TileConfig

    _, wl, tgt, key, ctx = _db_fixture()
    good = make_record(key, ctx, TileConfig(4, 8, 1), {"latency_us": 3.0})
    bad = []
    for field_, value in (("th", 2.9), ("th", True), ("double_buffer", "false"), ("double_buffer", 0),
                          ("cores", 10000), ("cob", -1), ("pw_engine", "gpu"), ("cib", "1")):
        rec = json.loads(json.dumps(good))
        rec["tile"][field_] = value
        bad.append(json.dumps(rec))
    lines = [json.dumps(good)] + bad + [
        json.dumps(good).replace('"latency_us": 3.0', '"latency_us": 1e400'),
        json.dumps(good).replace('"latency_us": 3.0', '"latency_us": NaN'),
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' * 5000 + "1" + "}" * 5000,
        "x" * 200_000,
    ]
    path = tmp_path / "db.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(TuningDatabaseWarning) as w:
        db = TuningDB(path).load()
    assert len(db) == 1 and db.skipped == len(lines) - 1 and len(w) == len(lines) - 1
    assert all("\n" not in str(x.message) for x in w)


def test_forced_knobs_win_over_the_database(tmp_path, capsys, monkeypatch):
    import fusion.driver.tile_policy as tp
    from fusion.tuning.db import TuningDB, make_record
    from fusion.tuning.evaluators import model_tile
    from schedules.workload import TileConfig

    # the database holds one-phase tiles; a faster two-phase default would (rightly) replace them
    monkeypatch.setattr(tp, "two_phase_enabled", lambda *a: False)

    m, wl, tgt, key, ctx = _db_fixture()
    path = tmp_path / "db.jsonl"
    a, b = TileConfig(1, 8, 1, 0, True), TileConfig(2, 8, 1, 0, False)   # modeled: a is the faster
    TuningDB(path).append([make_record(key, ctx, t, {"latency_us": model_tile(wl, tgt.soc, t)["latency_us"]})
                           for t in (a, b)])
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    assert main(["compile", str(p), "--db", str(path), "--json", "--no-fallback"]) == 0
    tuned = json.loads(capsys.readouterr().out)["fused_blocks"][0]
    assert tuned["tile"]["double_buffer"] is True and tuned["tile_source"] == "tuned"
    assert main(["compile", str(p), "--db", str(path), "--no-double-buffer", "--json", "--no-fallback"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (b,) = doc["fused_blocks"]
    assert b["tile"]["double_buffer"] is False and b["tile"]["th"] == 2 and b["tile_source"] == "tuned"
    assert any("forced flags win" in n and "--no-double-buffer" in n for n in doc["notes"])
    assert main(["compile", str(p), "--db", str(path), "--pw-engine", "vector", "--tile", "4x8"]) == 0
    assert "tuning database was not consulted" in capsys.readouterr().out


def test_concurrent_writers_write_each_record_once(tmp_path):
    """Two processes append the same 300 records at once (as two `tune` runs on one database
    would): the flock and the re-read under it leave each record in the file once."""
    path = tmp_path / "db.jsonl"
    script = (
        "import sys, json\n"
        "from fusion.tuning.db import TuningDB, make_record, key_context, tuning_key\n"
        "from schedules.targets import parse_target\n"
        "from schedules.workload import DwSepWorkload, TileConfig\n"
        "wl = DwSepWorkload(1, 16, 16, 8, 8); t = parse_target('sim')\n"
        "k, c = tuning_key(wl, t), key_context(wl, t)\n"
        "recs = [make_record(k, c, TileConfig(th, tw, 1), {'latency_us': float(th * tw)})"
        " for th in range(1, 21) for tw in range(1, 16)]\n"
        "db = TuningDB(sys.argv[1]).load()\n"
        "for i in range(0, len(recs), 10):\n"
        "    db.append(recs[i:i + 10])\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path)], env=env) for _ in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    lines = path.read_text().splitlines()
    points = [json.loads(x)["point"] for x in lines]
    assert len(lines) == 300 and len(set(points)) == 300




def test_two_concurrent_tune_runs_write_each_record_once(tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(block(cin=32, cout=32, h=14), model)
    db = tmp_path / "db.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TVM_NUM_THREADS="1")
    argv = [sys.executable, "-m", "fusion.cli.main", "tune", str(model), "--db", str(db), "--quiet", "--workers", "2"]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    recs = [json.loads(line) for line in db.read_text().splitlines()]
    assert recs and len({(r["key"], r["point"]) for r in recs}) == len(recs)
