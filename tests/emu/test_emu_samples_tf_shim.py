"""The TensorFlow dtype stand-in of benchmarks/emu_samples.py: a sample script that imports
tensorflow only for tf.bfloat16.as_numpy_dtype runs with the real bfloat16 dtype (ml_dtypes,
where TensorFlow takes it from); any computing TensorFlow call still fails."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("emu_samples", ROOT / "benchmarks" / "emu_samples.py")
emu_samples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(emu_samples)

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is not None,
                                reason="the real tensorflow is installed: the stand-in is not used")


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=emu_samples._script_env(),
                          capture_output=True, text=True, timeout=60)


def test_bfloat16_dtype_is_the_real_one(tmp_path):
    r = _run("import numpy as np, tensorflow as tf\n"
             "x = np.array([1.0, 3.140625, -2.5], dtype=np.float32).astype(tf.bfloat16.as_numpy_dtype)\n"
             "x.tofile('b.bin'); print(x.dtype)", tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "bfloat16"
    raw = np.fromfile(tmp_path / "b.bin", dtype=np.uint16)
    assert raw.tolist() == np.array([1.0, 3.140625, -2.5], dtype=np.float32).astype(ml_dtypes.bfloat16).view(
        np.uint16).tolist()
    assert raw[0] == 0x3F80  # 1.0 in bfloat16: the upper half of float32 0x3F800000


def test_any_other_tensorflow_name_fails(tmp_path):
    r = _run("import tensorflow as tf\ntf.add(1, 2)", tmp_path)
    assert r.returncode != 0
    assert "offers only tf.bfloat16" in r.stderr
