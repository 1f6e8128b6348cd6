"""The on-disk kernel cache: a second compile loads every kernel, a corrupt entry is rebuilt, the
key changes with the tile, and `compile` reports its phases."""

import numpy as np
import pytest

import models
from schedules import kernel_cache
from fusion.driver.compiler import TileOverride, compile_model
from schedules import build


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEGAFUSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "_CACHE", {})  # no in-process hits: every kernel goes to disk
    return tmp_path / "kernels"


def _compile(m, **kw):
    build._CACHE.clear()
    return compile_model(m, target="llvm", **kw)


def test_second_compile_loads_every_kernel_and_runs_the_same(cache):
    m = models.dwsep_block(cin=24, cout=40, h=15)
    x = np.random.default_rng(0).standard_normal((1, 24, 15, 15)).astype(np.float32)
    cold = _compile(m)
    assert cold.kernel_cache.startswith("0 hit(s)")
    entries = sorted(p.name for p in cache.iterdir())
    assert entries and all(e.endswith(".so") for e in entries)
    warm = _compile(m)
    assert warm.kernel_cache.startswith(f"{len(entries)} hit(s), 0 miss(es)")
    assert set(cold.phases_s) >= {"import", "passes", "fused kernels"}
    a, b = cold.run(x), warm.run(x)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    # another tile is another kernel
    _compile(m, tile=TileOverride(th=3, tw=5))
    assert len(list(cache.iterdir())) > len(entries)


def test_corrupt_entry_is_rebuilt(cache):
    m = models.dwsep_block(cin=16, cout=32, h=9)
    x = np.random.default_rng(1).standard_normal((1, 16, 9, 9)).astype(np.float32)
    ref = _compile(m).run(x)
    for p in cache.iterdir():
        p.write_bytes(b"not a shared library")
    before = kernel_cache.STATS.rebuilt_corrupt
    cm = _compile(m)
    assert kernel_cache.STATS.rebuilt_corrupt > before
    got = cm.run(x)
    for k in ref:
        np.testing.assert_array_equal(ref[k], got[k])
    assert _compile(m).kernel_cache.startswith(f"{len(list(cache.iterdir()))} hit(s)")


def test_key_covers_target_and_code():
    k1 = kernel_cache.entry_key("fused", "w:t", {"kind": "llvm", "mcpu": "x86-64-v4"})
    assert k1 != kernel_cache.entry_key("fused", "w:t", {"kind": "llvm", "mcpu": "haswell"})
    assert k1 != kernel_cache.entry_key("fused", "w:t2", {"kind": "llvm", "mcpu": "x86-64-v4"})
    assert len(kernel_cache.code_version()) == 16


def test_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv("MEGAFUSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("MEGAFUSE_KERNEL_CACHE", "0")
    monkeypatch.setattr(build, "_CACHE", {})
    cm = compile_model(models.dwsep_block(cin=16, cout=16, h=7), target="llvm")
    assert cm.kernel_cache == "" and not (tmp_path / "kernels").exists()
