"""Basic devkit APIs on devkit-style kernels of our own (the 03_basic_api / 06_compatibility_guide
samples' surface): the kernel-side assert; more families below."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_ASSERT = r"""
#include "kernel_operator.h"
using namespace AscendC;
template <int N>
__aicore__ inline void Check(uint32_t mode)
{
    // a template context: assert must be declared by kernel_operator.h itself
    if (mode == 1) assert(mode == N && "mode must be N");
    if (mode == 2) assert(mode == N, "mode %u is not %d\n", mode, N);
}
extern "C" __global__ __aicore__ void kassert(GM_ADDR y, uint32_t mode)
{
    GlobalTensor<int32_t> gy;
    gy.SetGlobalBuffer((__gm__ int32_t*)y, 8);
    Check<0>(mode);
    gy.SetValue(0, 7);
}
"""


@pytest.fixture(scope="module")
def assert_kernel():
    return build_kernel(_ASSERT, "kassert")


def test_assert_passes_and_fails_with_message(assert_kernel):
    y = np.zeros(8, np.int32)
    assert_kernel.run([y, 0], block_dim=1, soc="ascend910b2")
    assert y[0] == 7
    with pytest.raises(EmulationError, match=r"line 8: ascendc_assert\(mode == N && \"mode must be N\"\) failed"):
        assert_kernel.run([y, 1], block_dim=1, soc="ascend910b2")
    with pytest.raises(EmulationError, match=r"line 9: .*failed: mode 2 is not 0"):
        assert_kernel.run([y, 2], block_dim=1, soc="ascend910b2")
