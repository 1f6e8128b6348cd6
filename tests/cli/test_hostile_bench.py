"""`megafuse bench` on hostile input: model names escaped in its text report, a --baseline that is
corrupt or of another model refused, output paths and --trace checked before the work."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

import models
from fusion.cli.main import main
from fusion.report.bench import compare_baseline
from test_hostile import assert_one_line_error

EVIL_DW = "\x1b[31mRED\n../x\r\x07"
EVIL_PW = "pw\x1b]0;TITLE\x07"


@pytest.fixture(scope="module")
def evil(tmp_path_factory) -> Path:
    """32 -> 64 @112: fused on 910B, falls back (unfused) on 310P3; its DW and PW nodes named hostilely."""
    m = models.dwsep_block()
    for n in m.graph.node:
        n.name = {"dw": EVIL_DW, "pw": EVIL_PW}.get(n.name, n.name)
    p = tmp_path_factory.mktemp("evil") / "evil.onnx"
    onnx.save(m, p)
    return p


@pytest.fixture(scope="module")
def report(evil, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("rep") / "r.json"
    assert main(["bench", str(evil), "--json", str(out)]) == 0
    return json.loads(out.read_text())


def _bench(capsys, *argv):
    code = main(["bench", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def _assert_escaped(out: str) -> None:
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "RED\n" not in out   # the name's newline is \x0a, not a new line


@pytest.mark.parametrize("target", ["sim", "sim:ascend310p3"])
def test_model_names_are_escaped_in_the_text_report(evil, capsys, target):
    code, out, err = _bench(capsys, evil, "-t", target)
    assert code == 0, err
    _assert_escaped(out)
    if target == "sim":   # the vendor kernels of the fused block, named after the DW and PW nodes
        assert "(\\x1b[31mRED\\x0a../x\\x0d\\x07+pw\\x1b]0;TITLE\\x07;" in out
    else:                 # the fallback row names the DW node
        assert "\\x1b[31mRED\\x0a../x\\x0d\\x07 unfused (fallback)" in out


@pytest.mark.parametrize("value", [0, 0.0, 1e-300, -1.0, float("nan"), "fast", True])
def test_baseline_latency_must_be_positive(evil, report, tmp_path, capsys, value):
    base = tmp_path / "b.json"
    base.write_text(json.dumps(dict(report, avg_latency_us=value)))
    code, out, err = _bench(capsys, evil, "--baseline", base)
    assert_one_line_error(code, out, err)
    assert "'avg_latency_us' must be a finite number of at least 0.001 us" in err and out == ""


def test_baseline_kernel_latency_must_be_positive(evil, report, tmp_path, capsys):
    base = tmp_path / "b.json"
    base.write_text(json.dumps(dict(report, kernels=[dict(k, fused_us=0) for k in report["kernels"]])))
    code, out, err = _bench(capsys, evil, "--baseline", base)
    assert_one_line_error(code, out, err)
    assert "kernels[0].fused_us must be" in err


def test_a_large_regression_reads_as_a_factor():
    new = {"avg_latency_us": 30.0, "p95_latency_us": 30.0, "kernels": []}
    small, large = compare_baseline(new, {"avg_latency_us": 25.0}), compare_baseline(new, {"avg_latency_us": 0.001})
    assert small == ["model avg_latency: 30.00 us vs baseline 25.00 us (+20.0 %)"]
    assert large == ["model avg_latency: 30.00 us vs baseline 0.00 us (3e+04x)"]


def test_baseline_of_another_model_name_warns(evil, report, tmp_path, capsys):
    """A renamed or re-exported model is what a regression gate compares: one escaped warning line."""
    base = tmp_path / "b.json"
    base.write_text(json.dumps(dict(report, model="other\x1b[31m\n")))
    code, out, err = _bench(capsys, evil, "--baseline", base)
    lines = err.splitlines()
    assert code == 0 and len(lines) == 1 and lines[0].startswith("megafuse: warning: --baseline benched model ")
    assert "\x1b" not in err and "no latency more than 5% worse" in out


@pytest.mark.parametrize("field,value", [("dtype", "float16"), ("target", "sim:ascend310p3"), ("batch", 8)])
def test_baseline_of_another_dtype_target_or_batch_is_refused(evil, report, tmp_path, capsys, field, value):
    base = tmp_path / "b.json"
    base.write_text(json.dumps(dict(report, **{field: value})))
    code, out, err = _bench(capsys, evil, "--baseline", base)
    assert_one_line_error(code, out, err)
    assert "is not comparable" in err and f"it benched {field} " in err and out == ""   # before the report


def test_baseline_without_the_identity_fields_is_compared_on_the_rest(evil, report, tmp_path, capsys):
    base = tmp_path / "b.json"
    base.write_text(json.dumps({k: v for k, v in report.items() if k not in ("model", "dtype", "target", "batch")}))
    code, out, err = _bench(capsys, evil, "--baseline", base)
    assert code == 0 and "no latency more than 5% worse" in out, err


@pytest.mark.parametrize("flag", ["--json", "--trace", "--plot"])
def test_output_in_a_missing_folder_is_refused_before_the_work(evil, tmp_path, capsys, flag):
    code, out, err = _bench(capsys, evil, flag, tmp_path / "nodir" / "x.png")
    assert_one_line_error(code, out, err)
    assert err.startswith(f"megafuse: error: {flag} ") and "does not exist" in err and out == ""


def test_plot_in_an_unknown_format_is_refused_before_the_work(evil, tmp_path, capsys):
    code, out, err = _bench(capsys, evil, "--plot", tmp_path / "p.foo")
    assert_one_line_error(code, out, err)
    assert "unknown image format 'foo'" in err and out == ""


def test_trace_write_failure_names_the_trace_flag(evil, tmp_path, capsys, monkeypatch):
    from fusion.cli import options

    real = options.write_text_atomic

    def fail_trace(path, text, flag):
        if flag == "--trace":
            raise options.MegafuseError(f"cannot write {flag} '{path}': No space left on device")
        return real(path, text, flag)

    monkeypatch.setattr("fusion.cli.bench.write_text_atomic", fail_trace)
    code, out, err = _bench(capsys, evil, "--trace", tmp_path / "t.json")
    assert_one_line_error(code, out, err)
    assert "cannot write --trace" in err


def test_trace_with_every_block_fallen_back_says_so(evil, tmp_path, capsys):
    code, out, err = _bench(capsys, evil, "-t", "sim:ascend310p3", "--trace", tmp_path / "t.json")
    assert_one_line_error(code, out, err)
    assert "no fused kernel to trace on sim:ascend310p3" in err and "fell back" in err
    assert "needs a sim target" not in err and out == "" and not (tmp_path / "t.json").exists()


def test_trace_on_llvm_is_refused_before_the_work(evil, tmp_path, capsys):
    code, out, err = _bench(capsys, evil, "-t", "llvm", "--trace", tmp_path / "t.json")
    assert_one_line_error(code, out, err)
    assert "--trace needs a sim target" in err and out == ""
