"""Hostile cases decided once and used later: parameters checked after each transformation,
tuning records re-checked before use, every option and path checked before the work, stdout
write failures, and ONNX Runtime's external data read from the model's own folder. Each case:
one line + exit 2 (or a correct result), nothing written outside the working folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import models
from fusion.cli.main import main
from fusion.cli.options import max_workers
from test_hostile import ROOT, assert_one_line_error, raw_dwsep


def _bn_model(eps=None, var=None, scale=None) -> onnx.ModelProto:
    m = models.dwsep_block(cin=16, cout=16, h=8)
    bn = next(n for n in m.graph.node if n.op_type == "BatchNormalization")
    if eps is not None:
        for i, a in enumerate(bn.attribute):
            if a.name == "epsilon":
                del bn.attribute[i]
        bn.attribute.append(helper.make_attribute("epsilon", eps))
    for inp, value in ((bn.input[4], var), (bn.input[1], scale)):
        if value is None:
            continue
        for t in m.graph.initializer:
            if t.name == inp:
                a = numpy_helper.to_array(t).copy()
                a[:] = value
                t.CopyFrom(numpy_helper.from_array(a, inp))
    return m


def _act_model(op: str, **attrs) -> onnx.ModelProto:
    m = raw_dwsep()
    act = next(n for n in m.graph.node if n.op_type == "Relu")
    act.op_type = op
    act.attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items())
    return m


def _run(tmp_path, monkeypatch, capsys, model, *argv):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    onnx.save(model, work / "m.onnx")
    monkeypatch.chdir(work)
    before = {str(p) for p in tmp_path.rglob("*")}
    code = main([argv[0], "m.onnx", *argv[1:]])
    out, err = capsys.readouterr()
    created = {str(p) for p in tmp_path.rglob("*")} - before
    return code, out, err, created


# ---- parameters after each transformation ----------------------------------------------------
@pytest.mark.parametrize("model,words", [
    (lambda: _bn_model(eps=0.0, var=0.0), "var 0 + epsilon 0"),
    (lambda: _bn_model(eps=float("nan")), "epsilon = nan is not finite"),
    (lambda: _bn_model(var=-1.0), "var -1 + epsilon 1e-05"),
    (lambda: _bn_model(eps=-1e-3, var=1e-4), "must be > 0"),
    (lambda: _act_model("LeakyRelu", alpha=float("inf")), "LeakyRelu attribute alpha = inf"),
    (lambda: _act_model("LeakyRelu", alpha=float("nan")), "LeakyRelu attribute alpha = nan"),
    (lambda: _act_model("HardSigmoid", alpha=float("-inf")), "HardSigmoid attribute alpha = -inf"),
])
@pytest.mark.parametrize("command", ["compile", "check"])
def test_bad_parameters_named_before_they_fold(tmp_path, monkeypatch, capsys, model, words, command):
    code, out, err, created = _run(tmp_path, monkeypatch, capsys, model(), command, "--no-db")
    assert_one_line_error(code, out, err)
    assert words in err and "node '" in err
    assert not created


def test_fold_that_overflows_float32_names_the_bn(tmp_path, monkeypatch, capsys):
    """Each input finite, the fold is not: scale 1e30 / sqrt(1e-30) overflows float32."""
    code, out, err, _ = _run(tmp_path, monkeypatch, capsys, _bn_model(eps=0.0, var=1e-30, scale=1e30),
                             "compile", "--no-db")
    assert_one_line_error(code, out, err)
    assert "fold_bn: folding 'dw_bn'" in err and "epsilon 0" in err and "variance in [1e-30, 1e-30]" in err


def test_all_inputs_shadowed_by_initializers_is_refused(tmp_path, monkeypatch, capsys):
    m = models.dwsep_block(cin=16, cout=16, h=8)
    m.graph.initializer.append(numpy_helper.from_array(np.ones((1, 16, 8, 8), np.float32), "x"))
    for command in ("compile", "check"):
        code, out, err, _ = _run(tmp_path, monkeypatch, capsys, m, command, "--no-db")
        assert_one_line_error(code, out, err)
        assert "every graph input ('x') has an initializer of the same name" in err


def test_graph_outputs_that_are_constants_or_inputs_are_returned(tmp_path, monkeypatch, capsys):
    m = raw_dwsep()
    m.graph.output.append(helper.make_tensor_value_info("w_pw", TensorProto.FLOAT, [16, 16, 1, 1]))
    m.graph.output.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8]))
    for target in ("llvm", "sim", "ascend"):
        code, out, err, _ = _run(tmp_path, monkeypatch, capsys, m, "check", "--no-db", "-t", target)
        assert code == 0 and "\nPASS m.onnx" in "\n" + out, (out, err)


# ---- tuning records re-checked before use ----------------------------------------------------
def _db_with(tmp_path, wl, tgt, records) -> Path:
    from fusion.tuning.db import TuningDB, key_context, make_record, tuning_key

    path = tmp_path / "db.jsonl"
    key, ctx = tuning_key(wl, tgt), key_context(wl, tgt)
    TuningDB(path).append([make_record(key, ctx, tile, {"latency_us": lat, **extra}) for tile, lat, extra in records])
    return path


def _block_workload(target: str):
    from fusion.driver.compiler import compile_model
    from schedules.targets import parse_target

    m = models.dwsep_block(cin=16, cout=16, h=8)
    (b,) = compile_model(m, target=target).fused_blocks
    return m, b.workload, parse_target(target)


def test_modeled_record_that_the_model_does_not_reproduce_is_skipped(tmp_path, capsys):
    from fusion.tuning.db import TuningDatabaseWarning
    from schedules.workload import TileConfig

    m, wl, tgt = _block_workload("sim")
    db = _db_with(tmp_path, wl, tgt, [(TileConfig(2, 8, 1), 1e-6, {}), (TileConfig(65536, 65536, 1), 1e-6, {})])
    onnx.save(m, tmp_path / "m.onnx")
    with pytest.warns(TuningDatabaseWarning) as w:
        code = main(["compile", str(tmp_path / "m.onnx"), "--db", str(db), "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    assert doc["fused_blocks"][0]["tile_source"] != "tuned"   # neither record was used
    why = sorted(str(x.message) for x in w)
    assert len(why) == 2 and all("\n" not in x and "skipped" in x for x in why)
    assert "not what the cost model gives" in why[0] and "65536x65536" in why[1] and "outside the plan space" in why[1]


def test_measured_record_faster_than_the_fma_peak_is_skipped(tmp_path, capsys):
    from fusion.tuning.db import TunedTiles, TuningDB, TuningDatabaseWarning
    from fusion.tuning.plausible import implausible
    from schedules.workload import TileConfig

    _, wl, tgt = _block_workload("llvm")
    tile = TileConfig(2, 8, 1)
    db = TuningDB(_db_with(tmp_path, wl, tgt, [(tile, 1e-6, {"threads": 1})])).load()
    with pytest.warns(TuningDatabaseWarning, match="faster than its .* FLOPs at this machine's measured FMA peak"):
        assert TunedTiles(db)(wl, tgt) is None
    rec = db.best(next(iter(db._by_key)))
    assert implausible(dict(rec, latency_us=1e6), wl, tile, tgt) is None   # a slow record is believable


def test_bench_baseline_checked_by_schema(tmp_path, monkeypatch, capsys):
    for bad, words in (({"avg_latency_us": "fast", "kernels": []}, "'avg_latency_us' must be a finite number"),
                       ({"avg_latency_us": 1.0, "kernels": [{"name": "b", "fused_us": True}]}, "kernels[0].fused_us"),
                       ({"avg_latency_us": 1.0, "p95_latency_us": -1, "kernels": []}, "'p95_latency_us'"),
                       ({"avg_latency_us": 1.0, "kernels": "x"}, "'kernels' must be a list")):
        (tmp_path / "bl.json").write_text(json.dumps(bad))
        code, out, err, _ = _run(tmp_path, monkeypatch, capsys, models.dwsep_block(cin=16, cout=16, h=8),
                                 "bench", "--no-db", "--baseline", str(tmp_path / "bl.json"))
        assert_one_line_error(code, out, err)
        assert words in err


# ---- options and paths checked before the work -----------------------------------------------
@pytest.mark.parametrize("argv,words", [
    (["bench", "-t", "llvm", "--samples", "0"], "--samples"),
    (["bench", "-t", "llvm", "--samples", "-5"], "--samples"),
    (["bench", "-t", "llvm", "--samples", str(10**12)], "--samples"),
    (["bench", "-t", "llvm", "--warmup", "-1"], "--warmup"),
    (["bench", "--plot", "/proc/self/x.png"], "cannot be written"),
    (["bench", "--json", "/dev/full"], "not a regular file (a device)"),
    (["bench", "--baseline", "fifo"], "not a regular file (a FIFO)"),
    (["tune", "--no-db", "--workers", str(max_workers() + 1)], "per CPU"),
    (["tune", "--no-db", "--plot", "/proc/self/x"], "cannot be written"),
    (["tune", "--no-db", "--csv", "/dev/full"], "not a regular file (a device)"),
    (["tune", "--no-db", "--json", "d"], "not a regular file (a directory)"),
    (["tune", "--no-db", "--csv", "x" * 300], "too long"),
    (["compile", "-o", ""], "needs a directory name"),
])
def test_options_bounded_and_paths_checked_before_work(tmp_path, monkeypatch, capsys, argv, words):
    (tmp_path / "work").mkdir()
    os.mkfifo(tmp_path / "work" / "fifo")
    (tmp_path / "work" / "d").mkdir()
    code, out, err, created = _run(tmp_path, monkeypatch, capsys, models.dwsep_block(cin=16, cout=16, h=8),
                                   argv[0], *argv[1:])
    assert_one_line_error(code, out, err)
    assert words in err
    assert not created


def test_fidelity_points_fifo_does_not_hang(tmp_path, capsys):
    os.mkfifo(tmp_path / "fifo")
    code = main(["fidelity", "--points", str(tmp_path / "fifo")])
    out, err = capsys.readouterr()
    assert_one_line_error(code, out, err)
    assert "FIFO" in err


@pytest.mark.parametrize("kind", ["file", "empty"])
def test_cache_dir_checked_up_front(tmp_path, monkeypatch, capsys, kind):
    bad = tmp_path / "cache"
    if kind == "file":
        bad.write_text("x")
    monkeypatch.setenv("MEGAFUSE_CACHE_DIR", str(bad) if kind == "file" else " ")
    code, out, err, _ = _run(tmp_path, monkeypatch, capsys, models.dwsep_block(cin=16, cout=16, h=8),
                             "compile", "--no-db")
    assert_one_line_error(code, out, err)
    assert "MEGAFUSE_CACHE_DIR" in err


def _cli(args, cwd, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "fusion.cli.main", *args], cwd=cwd, env=env, timeout=120, **kw)


def test_stdout_full_disk_is_one_line_and_closed_pipe_is_quiet(tmp_path):
    onnx.save(models.dwsep_block(cin=16, cout=16, h=8), tmp_path / "m.onnx")
    with open("/dev/full", "w") as full:
        p = _cli(["compile", "m.onnx", "--no-db", "--json"], tmp_path, stdout=full, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 2 and p.stderr == "megafuse: error: cannot write the output: No space left on device\n"
    r, w = os.pipe()
    os.close(r)             # the reader is gone before the first write
    try:
        p = _cli(["compile", "m.onnx", "--no-db", "--json"], tmp_path, stdout=w, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(w)
    assert p.returncode == 141 and p.stderr == ""


# ---- ONNX Runtime reads external data from the model's folder --------------------------------
@pytest.mark.parametrize("target", ["llvm", "sim"])
def test_reference_reads_external_data_from_the_models_folder(tmp_path, monkeypatch, capsys, target):
    (tmp_path / "model").mkdir()
    (tmp_path / "cwd").mkdir()
    onnx.save_model(models.dwsep_block(cin=16, cout=16, h=8), tmp_path / "model" / "m.onnx",
                    save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin", size_threshold=0)
    size = (tmp_path / "model" / "w.bin").stat().st_size
    (tmp_path / "cwd" / "w.bin").write_bytes(b"\0" * size)   # a decoy: the cwd's zeros must not be read
    monkeypatch.chdir(tmp_path / "cwd")
    code = main(["check", str(tmp_path / "model" / "m.onnx"), "--no-db", "-t", target])
    out, err = capsys.readouterr()
    assert code == 0 and out.startswith("PASS"), (out, err)
    (tmp_path / "cwd" / "w.bin").unlink()
    assert main(["check", str(tmp_path / "model" / "m.onnx"), "--no-db", "-t", target]) == 0


def test_ort_session_refuses_a_model_pointing_at_external_data():
    from fusion.core.errors import MegafuseError
    from fusion.verify.reference import ort_session

    m = raw_dwsep()
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "w.bin"
    with pytest.raises(MegafuseError, match="current directory"):
        ort_session(m, None)


def test_tuning_db_swapped_for_a_fifo_after_load_does_not_block(tmp_path):
    from fusion.core.errors import TuningDatabaseError
    from fusion.tuning.db import TuningDB, key_context, make_record, tuning_key
    from schedules.workload import TileConfig

    _, wl, tgt = _block_workload("sim")
    path = tmp_path / "db.jsonl"
    db = TuningDB(path).load()                       # absent when loaded
    os.mkfifo(path)                                  # a FIFO by the time the sweep appends
    rec = make_record(tuning_key(wl, tgt), key_context(wl, tgt), TileConfig(2, 8, 1), {"latency_us": 1.0})
    with pytest.raises(TuningDatabaseError, match="not a regular file"):
        db.append([rec])
