"""`tune -t llvm --budget-s`: every fused block is measured within the budget, identical
workloads are measured once, and compile picks the tuned tiles."""

import time

import models
from fusion.driver.compiler import compile_model
from schedules.targets import parse_target
from fusion.tuning.db import TunedTiles, TuningDB
from fusion.tuning.search import tune_model


def test_budget_covers_every_block_and_reuses_identical_workloads(tmp_path):
    m = models.build("mobilenet_v1", resolution=32)
    blocks = ["b7_fused", "b8_fused", "b12_fused"]   # b7 and b8 are the same 512->512 workload
    db = TuningDB(tmp_path / "db.jsonl")
    t0 = time.perf_counter()
    res = tune_model(m, parse_target("llvm"), db, blocks=blocks, trials=10_000, workers=1, budget_s=0.5)
    wall = time.perf_counter() - t0
    by = {r.name: r for r in res}
    assert set(by) == set(blocks)
    assert all(r.best is not None and r.best.latency_us > 0 for r in res)   # each one measured
    assert by["b7_fused"].workload == by["b8_fused"].workload
    assert by["b8_fused"].points is by["b7_fused"].points                    # not measured twice
    assert all(r.stopped_early for r in res)       # the budget, not the space, ended each sweep
    new = sum(r.new for r in (by["b7_fused"], by["b12_fused"]))
    assert len(TuningDB(tmp_path / "db.jsonl").load()) == new                 # records on disk
    assert wall < 120
    cm = compile_model(m, target="llvm", tuned_tiles=TunedTiles(TuningDB(tmp_path / "db.jsonl").load()))
    src = {b.name: b.tile_source for b in cm.fused_blocks}
    assert all(src[b] == "tuned" for b in blocks)


def test_budget_needs_llvm(tmp_path, capsys):
    from fusion.cli.main import main

    p = tmp_path / "b.onnx"
    import onnx
    onnx.save(models.dwsep_block(cin=16, cout=16, h=8), p)
    assert main(["tune", str(p), "-t", "sim", "--budget-s", "5", "--no-db"]) == 2
    assert "--budget-s applies to -t llvm" in capsys.readouterr().err
