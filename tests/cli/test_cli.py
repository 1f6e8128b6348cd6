"""The command line: outputs, JSON, exit codes and one-line errors."""

import json
import subprocess
import sys

import onnx
from conftest import run_cli
from onnx import TensorProto, helper

import models

run = run_cli


def test_compile_lists_blocks(capsys, block_path, tmp_path):
    code, out, _ = run(capsys, "compile", block_path, "-t", "sim:ascend310p3", "--no-fallback",
                       "-o", str(tmp_path / "o"))
    assert code == 0
    assert "fused blocks 1" in out and "UB " in out and "/253,952 B" in out
    assert (tmp_path / "o" / "compile.json").exists()
    assert any(p.name.endswith(".tir.py") for p in (tmp_path / "o").iterdir())


def test_compile_json(capsys, block_path):
    code, out, _ = run(capsys, "compile", block_path, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["target"] == "sim:ascend910b2"
    b = doc["fused_blocks"][0]
    assert b["ub_bytes_used"] <= b["ub_bytes_available"] == 188160
    assert sum(x["bytes"] for x in b["buffers"] if x["scope"] == "UB") == b["ub_bytes_used"]
    assert b["engine_reason"].startswith(("pw on ", "two-phase"))


def test_check_pass_and_json(capsys, block_path):
    code, out, _ = run(capsys, "check", block_path, "-t", "llvm", "--dtype", "float16", "--json")
    doc = json.loads(out)
    from fusion.verify.check import fp16_tolerance

    assert code == 0 and doc["passed"] and doc["max_rel"] <= 2e-2 and doc["reference"] == "onnxruntime float32"
    assert 0 < doc["fp16_shift"] < 2e-2 and doc["tolerance"] == fp16_tolerance(doc["fp16_shift"]) == 2e-2


def test_check_fails_over_tolerance(capsys, block_path):
    code, out, _ = run(capsys, "check", block_path, "--dtype", "float16", "--tolerance", "1e-9")
    assert code == 1 and out.startswith("FAIL")


def test_forced_tile_over_budget(capsys, block_path):
    code, out, err = run(capsys, "compile", block_path, "--tile", "28x28", "--cout-block", "4")
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and line.startswith("megafuse: error:")
    assert "B (" in line and "188,160 B" in line and "largest buffer" in line and "try --tile" in line


def test_truncated_file(capsys, block_path, tmp_path):
    data = open(block_path, "rb").read()
    bad = tmp_path / "trunc.onnx"
    bad.write_bytes(data[: len(data) // 2])
    code, _, err = run(capsys, "compile", str(bad))
    assert code == 2 and err.count("\n") == 1 and "cannot load ONNX model" in err


def test_unknown_op(capsys, tmp_path):
    g = helper.make_graph([helper.make_node("Foo", ["x"], ["y"], name="foo_1", domain="")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])])
    p = tmp_path / "foo.onnx"
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    p.write_bytes(m.SerializeToString())
    code, _, err = run(capsys, "check", str(p))
    assert code == 2 and "Foo" in err and "foo_1" in err and err.count("\n") == 1


def test_missing_input_shape_then_given(capsys, tmp_path):
    p = tmp_path / "dyn.onnx"
    onnx.save(models.dwsep_block(cin=16, cout=16, h=8, dynamic_batch=True), p)
    code, _, err = run(capsys, "compile", str(p))
    assert code == 2 and "'x'" in err and "--input-shape" in err
    code, out, _ = run(capsys, "check", str(p), "--input-shape", "x=2x16x8x8")
    assert code == 0 and out.startswith("PASS")
    code, _, err = run(capsys, "compile", str(p), "--input-shape", "x=2by16")
    assert code == 2 and err.count("\n") == 1


def test_bad_target(capsys, block_path):
    code, _, err = run(capsys, "compile", block_path, "-t", "sim:ascend999")
    assert code == 2 and "unknown SoC" in err


def test_console_script(block_path):
    r = subprocess.run([sys.executable, "-m", "fusion.cli.main", "compile", block_path, "-t", "llvm"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "fused blocks 1" in r.stdout


def test_check_and_bench_read_the_model_file_once(capsys, block_path, monkeypatch):
    """check and bench compile the model and run it (or model it) as the reference: both from one
    read of the file, so a file replaced in between cannot give the kernels and the reference two
    different models."""
    from fusion.frontend import validate

    reads = []
    real = validate.read_model_file
    monkeypatch.setattr(validate, "read_model_file", lambda path, label: reads.append(path) or real(path, label))
    for argv in (("check", block_path, "-t", "sim"), ("bench", block_path, "-t", "sim", "--no-db")):
        reads.clear()
        code, _, err = run(capsys, *argv)
        assert code == 0, err
        assert len(reads) == 1, (argv[0], reads)
