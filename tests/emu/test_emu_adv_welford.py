"""WelfordUpdate (isInplace on / off, the float step sequence bit for bit) and WelfordFinalize
(counts; head / tail counts) of adv_welford.h on a devkit-style kernel of our own: three updates
over a split reduce axis and the finalize give NumPy's mean and variance of the whole axis."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
static constexpr WelfordUpdateConfig INPLACE = {true};
// x: [3, 16] floats (3 chunks of one row of 16 lanes); out: mean [16], M [16], final mean/var [8 + 8]
extern "C" __global__ __aicore__ void wf(GM_ADDR x, GM_ADDR out, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bm, bv, bm2, bv2, bc, bo, bt;
    pipe.InitBuffer(bx, 192); pipe.InitBuffer(bm, 64); pipe.InitBuffer(bv, 64); pipe.InitBuffer(bm2, 64);
    pipe.InitBuffer(bv2, 64); pipe.InitBuffer(bc, 64); pipe.InitBuffer(bo, 64); pipe.InitBuffer(bt, 512);
    GlobalTensor<float> gx, go;
    gx.SetGlobalBuffer((__gm__ float*)x, 48); go.SetGlobalBuffer((__gm__ float*)out, 48);
    LocalTensor<float> lx = bx.Get<float>(), lm = bm.Get<float>(), lv = bv.Get<float>(), lm2 = bm2.Get<float>(),
        lv2 = bv2.Get<float>(), lo = bo.Get<float>();
    LocalTensor<int32_t> lc = bc.Get<int32_t>();
    DataCopy(lx, gx, 48);
    Duplicate(lm, 0.0f, 16); Duplicate(lv, 0.0f, 16); Duplicate(lo, -1.0f, 16); Duplicate(lm2, -5.0f, 16);
    Duplicate(lv2, -5.0f, 16);
    if (mode == 2) {  // abComputeLength 12: lanes 12..15 copied (inplace) or left alone
        WelfordUpdateParam p{1, 16, 12, 1.0f};
        WelfordUpdate<float, float, false, INPLACE>(lm2, lv2, lm, lv, lx, bt.Get<uint8_t>(), p);
        DataCopy(go, lm2, 16); DataCopy(go[16], lv2, 16);
        Duplicate(lm, -7.0f, 16);
        WelfordUpdate<float, float>(lm, lv, lm2, lv2, lx, p);
        DataCopy(go[32], lm, 16);
        return;
    }
    for (int i = 0; i < 3; ++i) {
        WelfordUpdateParam p{1, 16, 16, 1.0f / (i + 1)};
        WelfordUpdate<float, float>(lm, lv, lm, lv, lx[i * 16], bt.Get<uint8_t>(), p);
    }
    if (mode == 0) {
        Duplicate(lc, 3, 16);
        WelfordFinalizePara fp{3, 16, 0, 0, 0, 0, 1.0f / 16, 1.0f / 48};
        WelfordFinalize<false>(lo, lo[8], lm, lv, lc, bt.Get<uint8_t>(), fp);
    }
    if (mode == 1) {
        WelfordFinalizePara fp{3, 16, 3, 8, 3, 8, 1.0f / 16, 1.0f / 48};
        WelfordFinalize<false>(lo, lo[8], lm, lv, fp);
    }
    if (mode == 100) {
        WelfordFinalizePara fp{3, 16, 3, 8, 3, 4, 1.0f / 16, 1.0f / 48};
        WelfordFinalize<false>(lo, lo[8], lm, lv, fp);
    }
    DataCopy(go, lm, 16); DataCopy(go[16], lv, 16); DataCopy(go[32], lo, 16);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "wf")


def _run(kernel, mode):
    x = np.random.default_rng(3).uniform(-1e4, 1e4, (3, 16)).astype(np.float32)
    out = np.zeros(48, np.float32)
    kernel.run([x, out, mode], block_dim=1, soc="ascend910b2")
    return x, out


def test_update_is_the_float_step_sequence(kernel):
    x, out = _run(kernel, 0)
    m = np.zeros(16, np.float32)
    v = np.zeros(16, np.float32)
    for i in range(3):
        n = np.float32(1.0 / (i + 1))
        d = x[i] - m
        m2 = m + d * n
        v = v + d * (x[i] - m2)
        m = m2
    np.testing.assert_array_equal(out[:16], m)  # bit for bit: each vector step rounds to float
    np.testing.assert_array_equal(out[16:32], v)


@pytest.mark.parametrize("mode", [0, 1])
def test_finalize_gives_the_whole_axis_statistics(kernel, mode):
    x, out = _run(kernel, mode)
    whole = x.astype(np.float64).T.reshape(-1)  # lane j saw x[0..2, j]
    np.testing.assert_allclose(out[32], whole.mean(), rtol=1e-5, atol=1e-2)
    np.testing.assert_allclose(out[40], whole.var(), rtol=1e-5)


def test_update_outside_the_compute_length(kernel):
    x, out = _run(kernel, 2)
    np.testing.assert_array_equal(out[:12], x[0, :12])  # nRec 1: the mean becomes x
    np.testing.assert_array_equal(out[12:16], 0.0)  # inplace: the inputs (zeros) copied
    np.testing.assert_array_equal(out[32:44], x[0, :12])
    np.testing.assert_array_equal(out[44:48], -7.0)  # not inplace: lanes 12..15 not written


def test_finalize_refuses_head_tail_not_covering_ab(kernel):
    with pytest.raises(EmulationError, match=r"headCountLength 8 \+ tailCountLength 4 must be abLength 16"):
        _run(kernel, 100)
