"""A block polling GM for other blocks' writes (devkit DataCacheCleanAndInvalid /
ReadGmByPassDCache pattern): the emulator hands control to the other cores at each invalidate,
so the poll ends; block 0 runs first, so without that hand-over the loop never would."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import build_kernel

pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py

_SRC = r"""
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void gm_poll(GM_ADDR x, GM_ADDR flags, GM_ADDR y, int32_t bypass)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    const int32_t b = AscendC::GetBlockIdx(), n = AscendC::GetBlockNum();
    AscendC::GlobalTensor<int32_t> xg, fg, yg;
    xg.SetGlobalBuffer((__gm__ int32_t*)x, n);
    fg.SetGlobalBuffer((__gm__ int32_t*)flags, 16 * n);
    yg.SetGlobalBuffer((__gm__ int32_t*)y, 1);
    if (b > 0) {
        fg.SetValue(16 * b, xg.GetValue(b) * 10);
        AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::SINGLE_CACHE_LINE,
                                          AscendC::DcciDst::CACHELINE_OUT>(fg[16 * b]);
        return;
    }
    int32_t sum = 0;
    for (int32_t i = 1; i < n; ++i) {
        int32_t v = 0;
        while (v == 0) {
            if (bypass) {
                v = AscendC::ReadGmByPassDCache((__gm__ int32_t*)flags + 16 * i);
            } else {
                AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::SINGLE_CACHE_LINE,
                                                  AscendC::DcciDst::CACHELINE_OUT>(fg[16 * i]);
                v = fg.GetValue(16 * i);
            }
        }
        sum += v;
    }
    yg.SetValue(0, sum);
}
"""


@pytest.mark.parametrize("bypass", [0, 1])
def test_block_zero_polls_until_the_later_blocks_wrote(bypass):
    k = build_kernel(_SRC, "gm_poll")
    x = np.arange(1, 5, dtype=np.int32)
    flags = np.zeros(16 * 4, np.int32)
    y = np.zeros(8, np.int32)
    k.run([x, flags, y, bypass], block_dim=4, soc="ascend910b2")
    assert y[0] == 10 * (2 + 3 + 4)
