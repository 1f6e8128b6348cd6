"""SoftMax (in place, with and without a shared buffer, oriSrcK < srcK) and AdjustSoftMaxRes
(adv_softmax.h) on a devkit-style kernel of our own, against NumPy; the host tiling function
and tmp query; and the refusals (a buffer below the query's minimum, an unaligned srcK)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;
// x: [8, 32] floats; y: [8, 32] softmax, then sum [8, 8] and max [8, 8]
extern "C" __global__ __aicore__ void sm(GM_ADDR x, GM_ADDR y, GM_ADDR ms, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bs, bm, bt;
    pipe.InitBuffer(bx, 1024); pipe.InitBuffer(bs, 256); pipe.InitBuffer(bm, 256); pipe.InitBuffer(bt, 1024);
    GlobalTensor<float> gx, gy, gms;
    gx.SetGlobalBuffer((__gm__ float*)x, 256); gy.SetGlobalBuffer((__gm__ float*)y, 256);
    gms.SetGlobalBuffer((__gm__ float*)ms, 128);
    LocalTensor<float> lx = bx.Get<float>(), ls = bs.Get<float>(), lm = bm.Get<float>();
    DataCopy(lx, gx, 256);
    TensorShape shape({8, 32});
    SoftMaxTiling tiling;
    const uint32_t minTmp = GetSoftMaxMinTmpSize(shape, sizeof(float), false);
    SoftMaxTilingFunc(shape, sizeof(float), minTmp, tiling);
    SoftMaxShapeInfo info{8, 32, 8, mode == 1 ? 24u : 32u};
    if (mode == 0) SoftMax<float>(lx, ls, lm, lx, bt.Get<uint8_t>(minTmp), tiling, info);
    if (mode == 1) SoftMax<float>(lx, ls, lm, lx, tiling, info);
    if (mode == 2) {  // row 3's max is forced to the marker, AdjustSoftMaxRes zeroes that row
        SoftMax<float>(lx, ls, lm, lx, tiling, info);
        uint32_t marker = 0xFF7FFFFF; float f; std::memcpy(&f, &marker, 4);
        lm.SetValue(3 * 8, f);
        if (!AdjustSoftMaxRes<float, float>(lx, lm, marker, 0.0f, info)) lx.SetValue(0, -1.0f);
    }
    if (mode == 100) SoftMax<float>(lx, ls, lm, lx, bt.Get<uint8_t>(minTmp - 32), tiling, info);
    if (mode == 101) { SoftMaxShapeInfo bad{8, 30, 8, 30}; SoftMax<float>(lx, ls, lm, lx, tiling, bad); }
    DataCopy(gy, lx, 256); DataCopy(gms, ls, 64); DataCopy(gms[64], lm, 64);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "sm")


def _run(kernel, mode):
    x = np.random.default_rng(4).uniform(-3, 3, (8, 32)).astype(np.float32)
    y = np.zeros(256, np.float32)
    ms = np.zeros(128, np.float32)
    kernel.run([x, y, ms, mode], block_dim=1, soc="ascend910b2")
    return x, y.reshape(8, 32), ms[:64].reshape(8, 8), ms[64:].reshape(8, 8)


@pytest.mark.parametrize("mode,k", [(0, 32), (1, 24)])
def test_softmax_rows(kernel, mode, k):
    x, y, s, m = _run(kernel, mode)
    xm = x[:, :k].astype(np.float64)
    e = np.exp(xm - xm.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y[:, :k], e / e.sum(axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(y[:, k:], x[:, k:])  # columns past oriSrcK untouched
    np.testing.assert_allclose(s, np.repeat(e.sum(axis=1, keepdims=True), 8, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(m, np.repeat(x[:, :k].max(axis=1, keepdims=True), 8, axis=1))


def test_adjust_softmax_res(kernel):
    x, y, _, _ = _run(kernel, 2)
    assert not y[3].any() and y[0, 0] != -1.0
    np.testing.assert_allclose(y[[0, 1, 2, 4]].sum(axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("mode,msg", [
    (100, r"SoftMax: sharedTmpBuffer holds 480 bytes, less than the minimum 512"),
    (101, r"SoftMax: srcK 30 is not 32-byte aligned"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
