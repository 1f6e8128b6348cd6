"""False failures of `check`: an fp16-stored model checked in float32, and fp16 chains whose own
rounding exceeds the fixed tolerance (the tolerance follows the measured fp16 shift)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

import models
from fusion.cli.main import main


def test_float32_check_of_an_fp16_model_is_not_a_false_failure(tmp_path, capsys):
    p = tmp_path / "h.onnx"
    onnx.save(models.dwsep_block(cin=32, cout=48, h=13, dtype="float16"), p)
    for extra in ([], ["--no-fuse"]):
        code = main(["check", str(p), "-t", "llvm", "--dtype", "float32", *extra])
        out = capsys.readouterr().out
        assert code == 0 and out.startswith("PASS") and "reference ORT float32" in out


def _scaled_chain(scale: float) -> onnx.ModelProto:
    from models.random_chain import BlockSpec, ChainSpec, build_chain

    spec = ChainSpec(32, 12, 12, tuple(BlockSpec(32, 3, 1, (1, 1, 1, 1), True, "relu", "none") for _ in range(3)),
                     dtype="float16", seed=3)
    m = build_chain(spec)
    for i, t in enumerate(m.graph.initializer):
        if t.name.endswith("_W"):
            a = numpy_helper.to_array(t).astype(np.float32) * scale
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(a.astype(np.float16), t.name))
    return m


def test_fp16_tolerance_follows_the_measured_fp16_shift():
    """A deep fp16 chain with large weights: the fp16-storage shift the tolerance is built on is
    the size of the real error of an unfused compile (the estimate is neither loose nor tight by
    more than 2x), and an fp16 overflow fails whatever the shift."""
    from fusion.verify.check import check_model, fp16_tolerance
    from fusion.driver.compiler import compile_model

    assert fp16_tolerance(1e-3) == 2e-2 and fp16_tolerance(0.05) == 0.1 and fp16_tolerance(float("inf")) == 2e-2
    m = _scaled_chain(3.0)
    r = check_model(m, compile_model(m, target="llvm", fuse=False))
    assert r.passed and 0.5 <= r.fp16_shift / r.max_rel <= 2.0, (r.fp16_shift, r.max_rel)
    m = _scaled_chain(5.0)   # intermediates over 65504: fp16 overflows
    r = check_model(m, compile_model(m, target="llvm", fuse=False))
    assert not r.passed and r.tolerance == 2e-2


def test_an_fp16_overflow_of_the_model_itself_says_so_in_one_line(tmp_path, capsys):
    """Intermediates over 65504 overflow in ONNX Runtime's own fp16 storage: `check` says the model
    overflows float16 (one FAIL line, exit 1), not an error of 'nan' that blames the kernels; the
    same model at scale 3 still passes."""
    p = tmp_path / "big.onnx"
    onnx.save(_scaled_chain(5.0), p)
    code = main(["check", str(p), "-t", "llvm", "--no-fuse"])
    out = capsys.readouterr().out
    assert code == 1 and out.count("\n") == 1 and out.startswith("FAIL ")
    assert "overflows float16 itself" in out and "nan" not in out
    onnx.save(_scaled_chain(3.0), p)
    assert main(["check", str(p), "-t", "llvm", "--no-fuse"]) == 0
    assert "overflows" not in capsys.readouterr().out
