"""Smaller devkit APIs on a devkit-style kernel of our own: Fill into GM and into L1, Copy
(UB -> UB with strides), SetL2CacheHint, LocalTensor::GetPhyAddr, KERNEL_LOG / ASCENDC_ASSERT, AscendC::TEventID; and
the refusals (Fill past the GlobalTensor, a failed ASCENDC_ASSERT, Copy with a mask above the
lanes)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void misc(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bo;
    pipe.InitBuffer(ba, 512); pipe.InitBuffer(bo, 512);
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 128); gy.SetGlobalBuffer((__gm__ float*)y, 128);
    gx.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
    ASCENDC_ASSERT(gx.GetL2CacheHint() == CacheMode::CACHE_MODE_DISABLE, { KERNEL_LOG(KERNEL_ERROR, "hint lost"); });
    LocalTensor<float> a = ba.Get<float>(), o = bo.Get<float>();
    TEventID ev = EVENT_ID0;
    AscendC::TEventID ev2 = ev;
    (void)ev2;
    switch (mode) {
        case 0: Fill(gy, 100, 2.5f); break;
        case 1:  // Copy: 2 repeats, 32 lanes each, src blocks 2 apart, dst contiguous
            DataCopy(a, gx, 128); Duplicate(o, -1.0f, 128);
            Copy(o, a, 32, 2, {1, 2, 4, 8});
            DataCopy(gy, o, 128); break;
        case 2:  // GetPhyAddr: the two TBufs' UB byte addresses, 512 bytes apart
            Duplicate(o, 0.0f, 128); o.SetValue(0, (float)a.GetPhyAddr()); o.SetValue(1, (float)o.GetPhyAddr());
            o.SetValue(2, (float)o[8].GetPhyAddr()); DataCopy(gy, o, 128); break;
        case 100: Fill(gy, 129, 1.0f); break;
        case 101: ASCENDC_ASSERT(mode == 0, { KERNEL_LOG(KERNEL_ERROR, "mode %u is not 0", mode); }); break;
        case 102: DataCopy(a, gx, 128); Copy(o, a, 65, 1, {1, 1, 8, 8}); break;
    }
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "misc")


def _run(kernel, mode):
    x = np.arange(128, dtype=np.float32)
    y = np.full(128, 9.0, np.float32)
    kernel.run([x, y, mode], block_dim=1, soc="ascend910b2")
    return y


def test_fill_gm_writes_exactly_size_elements(kernel):
    y = _run(kernel, 0)
    assert (y[:100] == 2.5).all() and (y[100:] == 9.0).all()


def test_copy_strides_and_mask(kernel):
    y = _run(kernel, 1)
    x = np.arange(128, dtype=np.float32)
    # repeat r, lane l (8 floats per block): src block (l // 8) * 2 + r * 8, dst block l // 8 + r * 4
    expect = np.full(128, -1.0, np.float32)
    for r in range(2):
        for lane in range(32):
            expect[(lane // 8 + r * 4) * 8 + lane % 8] = x[((lane // 8) * 2 + r * 8) * 8 + lane % 8]
    np.testing.assert_array_equal(y, expect)


def test_get_phy_addr(kernel):
    y = _run(kernel, 2)
    assert y[1] - y[0] == 512 and y[2] - y[1] == 32


@pytest.mark.parametrize("mode,msg", [
    (100, r"Fill accesses GlobalTensor elements \[0, 129\) past its SetGlobalBuffer size 128"),
    (101, r"ascendc_assert\(mode == 0\) failed"),
    (102, r"Copy: mask 65 exceeds 64 lanes"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
