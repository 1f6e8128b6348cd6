"""SyncAll in the Ascend C emulator (fusion/emu): a real barrier across the blocks of a
launch, the devkit's workspace rules, and a core that never reaches it reported as a deadlock."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

KERNELS = Path(__file__).parents[1] / "ascendc_kernels"
N = 128


pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(KERNELS / "sync_all.cpp", "sync_all")


def _run(kernel, cores, mode, soc, sync=None):
    rng = np.random.default_rng(cores)
    x = rng.standard_normal(cores * N).astype(np.float16)
    y = np.zeros_like(x)
    work = np.zeros_like(x)
    sync = np.zeros(cores * 8, np.int32) if sync is None else sync
    res = kernel.run([x, y, work, sync, mode], block_dim=cores, soc=soc)
    return x, y, sync, res


@pytest.mark.parametrize("soc,mode,cores", [("ascend310p3", 0, 8), ("ascend910b2", 0, 5),
                                            ("ascend910b2", 1, 48), ("ascend310p3", 3, 3)])
def test_barrier_orders_writes_before_reads(kernel, soc, mode, cores):
    """Each core reads what its neighbour (a later block) wrote before the barrier: without a
    real barrier the emulator's in-order blocks would read zeros."""
    x, y, sync, res = _run(kernel, cores, mode, soc)
    want = np.roll((x * np.float16(2)).reshape(cores, N), -1, axis=0).ravel()
    assert np.array_equal(y, want)
    if mode != 1:   # the soft form keeps one count per core in its 32 B slot
        assert list(sync.reshape(cores, 8)[:, 0]) == [2 if mode == 3 else 1] * cores
    assert res.counters["gm_write_bytes"] == 2 * cores * N * 2   # flag words are not data traffic


def test_core_that_returns_first_is_a_deadlock(kernel):
    with pytest.raises(EmulationError, match=r"waits forever: SyncAll #1 needs all 4 cores.*block 0 finished"):
        _run(kernel, 4, 2, "ascend310p3")


def test_unequal_sync_counts_deadlock(kernel):
    with pytest.raises(EmulationError, match=r"SyncAll #2 .*block 1 finished after 1 SyncAll"):
        _run(kernel, 3, 4, "ascend910b2")


def test_workspace_rules(kernel):
    dirty = np.zeros(4 * 8, np.int32)
    dirty[8] = 7
    with pytest.raises(EmulationError, match=r"slot of core 1 holds 7 .*zero the workspace"):
        _run(kernel, 4, 0, "ascend310p3", dirty)
    with pytest.raises(EmulationError, match=r"slot of core 2 lies outside every GM argument.*at least 128 B"):
        _run(kernel, 4, 0, "ascend310p3", np.zeros(16, np.int32))
    with pytest.raises(EmulationError, match=r"hard SyncAll exists on arch 2201"):
        _run(kernel, 4, 1, "ascend310p3")
    with pytest.raises(EmulationError, match=r"blockDim must not exceed the cores"):
        _run(kernel, 9, 0, "ascend310p3")
