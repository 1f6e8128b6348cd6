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


_MOVE = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void kmove(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 4 * 40); gy.SetGlobalBuffer((__gm__ float*)y, 64);
    if (mode < 10) {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
        TPipe pipe;
        TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 64 * sizeof(float));
        LocalTensor<float> u = b.Get<float>();
        // rows 1 and 3 of a 4 x 40 matrix, columns [2, 10) and [13, 21) of each
        SliceInfo src[] = {{2, 20, 3, 1, 40}, {1, 3, 1, 1, 4}};
        SliceInfo dst[] = {{0, 15, 0, 1, 32}, {0, 1, 0, 1, 2}};
        SliceInfo bad[] = {{0, 15, 0, 1, 32}, {0, 0, 0, 1, 2}};
        if (mode == 0) {
            DataCopy(u, gx, dst, src, 2);
            Duplicate(u[16], -1.0f, 16); Duplicate(u[48], -1.0f, 16);
            DataCopy(gy, u, 64);
        } else if (mode == 1) {
            DataCopy(u, gx, bad, src, 2);
        }
    } else {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
        LocalTensor<float> l1(TPosition::A1, 0, 64);
        LocalTensor<float> l0a(TPosition::A2, 0, 64);
        DataCopy(l1, gx, 64);
        if (mode == 10) DataCopy(gy, l1, 64);          // A1 -> GM (arch 2201)
        if (mode == 11) { LoadData2DParamsV2 p; LoadData(l0a, l1, p); }
    }
}
"""


@pytest.fixture(scope="module")
def move_kernel():
    return build_kernel(_MOVE, "kmove")


def test_slice_copy_gm_to_ub_takes_the_documented_pieces(move_kernel):
    x = np.arange(160, dtype=np.float32)
    y = np.zeros(64, np.float32)
    move_kernel.run([x, y, 0], block_dim=1, soc="ascend910b2")
    m = x.reshape(4, 40)
    expect = np.full((2, 32), -1.0, np.float32)
    for r, row in enumerate((1, 3)):
        expect[r, :16] = np.concatenate([m[row, 2:10], m[row, 13:21]])
    np.testing.assert_array_equal(y.reshape(2, 32), expect)


def test_slice_copy_refuses_mismatched_pieces(move_kernel):
    with pytest.raises(EmulationError, match=r"dst slices 2 pieces of 8 elements but src slices 4 pieces"):
        move_kernel.run([np.zeros(160, np.float32), np.zeros(64, np.float32), 1], block_dim=1, soc="ascend910b2")


def test_l1_to_gm_on_2201_and_load2dv2_refused(move_kernel):
    x = np.arange(160, dtype=np.float32)
    y = np.zeros(64, np.float32)
    res = move_kernel.run([x, y, 10], block_dim=1, soc="ascend910b2")
    np.testing.assert_array_equal(y, x[:64])
    assert res.counters["gm_write_bytes"] == 256 and res.counters["dma_ub_to_gm"] == 0
    with pytest.raises(EmulationError, match=r"LoadData2DParamsV2 \(Load2Dv2\) is available on Ascend 950 only"):
        move_kernel.run([x, y, 11], block_dim=1, soc="ascend910b2")
