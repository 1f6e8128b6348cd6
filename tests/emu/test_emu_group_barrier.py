"""GroupBarrier (devkit GroupBarrier pages): the Wait group runs on only after every Arrive-group
core arrived (the waiters are launched first, so without a real wait they would read zeros);
a wait nobody arrives for is a deadlock; the workspace must be 512 B aligned."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py

_SRC = r"""
#include "kernel_operator.h"
// blocks 0..W-1 wait, blocks W..W+A-1 arrive after writing their value to out[W + a]
extern "C" __global__ __aicore__ void gbar(GM_ADDR ws, GM_ADDR out, int32_t arrivers, int32_t skew,
                                                  int32_t last_skips)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    const int32_t b = AscendC::GetBlockIdx(), n = AscendC::GetBlockNum(), waiters = n - arrivers;
    AscendC::GroupBarrier<AscendC::PipeMode::MTE3_MODE> bar((GM_ADDR)((__gm__ uint8_t*)ws + skew), arrivers, waiters);
    AscendC::GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out, n);
    if (b >= waiters) {
        o.SetValue(b, 100 + b);
        if (!(last_skips && b == n - 1)) bar.Arrive(b - waiters);
    } else {
        bar.Wait(b);
        int32_t s = 0;
        for (int32_t i = waiters; i < n; ++i) s += o.GetValue(i);
        o.SetValue(b, s);
    }
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_SRC, "gbar")


def _ws(n_wait):
    raw = np.zeros(n_wait * 512 // 4 + 512, np.int32)
    skew = (-raw.ctypes.data) % 512
    return raw, skew


def test_waiters_see_every_arrivers_write(kernel):
    ws, skew = _ws(3)
    out = np.zeros(5, np.int32)
    kernel.run([ws, out, 2, skew, 0], block_dim=5, soc="ascend910b2")
    assert list(out) == [103 + 104] * 3 + [103, 104]


def test_wait_without_enough_arrivers_is_a_deadlock(kernel):
    ws, skew = _ws(4)
    out = np.zeros(5, np.int32)
    with pytest.raises(EmulationError, match=r"GroupBarrier::Wait.*only some of the 2 Arrive-group cores"):
        kernel.run([ws, out, 2, skew, 1], block_dim=5, soc="ascend910b2")   # the last arriver never arrives


def test_unaligned_workspace_is_refused(kernel):
    ws, skew = _ws(3)
    with pytest.raises(EmulationError, match=r"groupWorkspace must be 512 B aligned"):
        kernel.run([ws, np.zeros(5, np.int32), 2, skew + 32, 0], block_dim=5, soc="ascend910b2")
