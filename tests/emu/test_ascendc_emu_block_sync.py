"""Inter-block sync through GM words in the Ascend C emulator (megafuse_emu/block_sync.h):
IBSet / IBWait, the determine-compute trio (InitDetermineComputeWorkspace, WaitPreBlock,
NotifyNextBlock) and the SuperKernel markers. Each case fails without a real wait, because
the emulator otherwise runs the blocks in launch order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

KERNELS = Path(__file__).parents[1] / "ascendc_kernels"
N = 4

pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(KERNELS / "block_sync.cpp", "block_sync")


def _run(kernel, mode, ws=None, n=N):
    x = np.arange(1, n + 1, dtype=np.int32)
    y = np.zeros(n, np.int32)
    log = np.zeros(1 + 3 * n, np.int32)
    ws = np.zeros(8 * n * 4, np.int32) if ws is None else ws
    kernel.run([x, y, ws, log, mode], block_dim=n, soc="ascend910b2")
    return x, y, ws, log


def test_ibwait_waits_for_a_later_block(kernel):
    """Block b waits for block b + 1's IBSet: y is the suffix sum of x, and every slot holds 1."""
    x, y, ws, _ = _run(kernel, 0)
    assert list(y) == list(np.cumsum(x[::-1])[::-1])
    assert list(ws[: 8 * N : 8]) == [1] * N


def test_ib_workspace_must_be_zeroed(kernel):
    ws = np.zeros(8 * N * 4, np.int32)
    ws[8 * 2] = 5
    with pytest.raises(EmulationError, match=r"slot of blockIdx 2 eventID 0 holds 5.*zero the workspace"):
        _run(kernel, 0, ws)


def test_ibwait_nobody_sets_is_a_deadlock(kernel):
    with pytest.raises(EmulationError, match=r"line \d+: IBWait on block 0 waits forever: no IBSet\(blockIdx 1, "
                                             r"eventID 3\)"):
        _run(kernel, 2)


def test_determine_compute_runs_blocks_in_order_each_round(kernel):
    """Three rounds: the log reads 0..n-1 three times (in-order blocks alone would give 0,0,0,1,...);
    the workspace needs no zeroing (InitDetermineComputeWorkspace writes it)."""
    _, _, ws, log = _run(kernel, 1, np.full(8 * N, 7, np.int32))
    assert log[0] == 3 * N
    assert list(log[1:]) == list(range(N)) * 3
    assert list(ws[::8]) == [3] * N


def test_determine_workspace_too_small(kernel):
    with pytest.raises(EmulationError, match=r"InitDetermineComputeWorkspace.*past its SetGlobalBuffer size|"
                                             r"InitDetermineComputeWorkspace.*outside"):
        _run(kernel, 1, np.zeros(8 * N - 8, np.int32))


def test_task_markers_once_per_core(kernel):
    with pytest.raises(EmulationError, match=r"WaitPreTaskEnd: called twice on this core"):
        _run(kernel, 3)
