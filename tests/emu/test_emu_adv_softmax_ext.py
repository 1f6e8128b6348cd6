"""LogSoftMax, SoftmaxGrad / SoftmaxGradFront and SoftmaxFlashV2 (adv_softmax_ext.h) on a
devkit-style kernel of our own, against the NumPy formulas of the devkit's API pages; and the
refusals (LogSoftMax in place, an unaligned srcK, a tmp buffer below the query's minimum)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;
// x, g: [8, 32] floats; y: [8, 32]; st: sum [8, 8], max [8, 8], expMax [8, 8]
extern "C" __global__ __aicore__ void smx(GM_ADDR x, GM_ADDR g, GM_ADDR y, GM_ADDR st, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bg, by, bs, bm, be, bt;
    pipe.InitBuffer(bx, 1024); pipe.InitBuffer(bg, 1024); pipe.InitBuffer(by, 1024);
    pipe.InitBuffer(bs, 256); pipe.InitBuffer(bm, 256); pipe.InitBuffer(be, 256); pipe.InitBuffer(bt, 1024);
    GlobalTensor<float> gx, gg, gy, gst;
    gx.SetGlobalBuffer((__gm__ float*)x, 256); gg.SetGlobalBuffer((__gm__ float*)g, 256);
    gy.SetGlobalBuffer((__gm__ float*)y, 256); gst.SetGlobalBuffer((__gm__ float*)st, 192);
    LocalTensor<float> lx = bx.Get<float>(), lg = bg.Get<float>(), ly = by.Get<float>();
    LocalTensor<float> ls = bs.Get<float>(), lm = bm.Get<float>(), le = be.Get<float>();
    DataCopy(lx, gx, 256); DataCopy(lg, gg, 256);
    TensorShape shape({8, 32});
    const uint32_t minTmp = GetLogSoftMaxMinTmpSize(shape, sizeof(float), false);
    LogSoftMaxTiling tiling;
    LogSoftMaxTilingFunc(shape, sizeof(float), minTmp, tiling);
    SoftMaxShapeInfo info{8, 32, 8, 32};
    Duplicate(le, 0.0f, 64); Duplicate(ls, 0.0f, 64); Duplicate(lm, 0.0f, 64);
    if (mode == 0) LogSoftMax<float>(ly, ls, lm, lx, bt.Get<uint8_t>(minTmp), tiling, info);
    if (mode == 1) SoftmaxGrad<float>(ly, lg, lx, bt.Get<uint8_t>(minTmp), tiling, false, info);
    if (mode == 2) { Duplicate(ly, 0.0f, 256); SoftmaxGradFront<float>(ly, lg, lx, tiling, info); }
    if (mode == 3) SoftmaxFlashV2<float, false>(ly, ls, lm, lx, le, ls, lm, bt.Get<uint8_t>(minTmp), tiling, info);
    if (mode == 4) {  // two column halves of 16: the second updates the first's statistics
        SoftMaxShapeInfo half{8, 16, 8, 16};
        for (int r = 0; r < 8; ++r) { DataCopy(ly[r * 16], gx[r * 32], 16); DataCopy(lg[r * 16], gx[r * 32 + 16], 16); }
        SoftmaxFlashV2<float, false>(ly, ls, lm, ly, le, ls, lm, tiling, half);
        SoftmaxFlashV2<float, true>(lg, ls, lm, lg, le, ls, lm, tiling, half);
        DataCopy(gy, lg, 128);
    }
    if (mode == 5) {  // the page's mixed-type spelling: half data, float statistics
        LocalTensor<half> hx = bg.Get<half>(), hy = by.Get<half>(), he = be.Get<half>();
        Cast(hx, lx, RoundMode::CAST_NONE, 256);
        SoftmaxFlashV2<half, float, false>(hy, ls, lm, hx, he, ls, lm, tiling, SoftMaxShapeInfo{8, 32, 8, 32});
        Cast(ly.ReinterpretCast<float>()[128], hy, RoundMode::CAST_NONE, 128);
        Cast(lg, hy[128], RoundMode::CAST_NONE, 128);
        DataCopy(gy, ly[128], 128); DataCopy(gy[128], lg, 128);
    }
    if (mode == 100) LogSoftMax<float>(lx, ls, lm, lx, bt.Get<uint8_t>(minTmp), tiling, info);
    if (mode == 101) { SoftMaxShapeInfo bad{8, 30, 8, 30}; SoftmaxGrad<float>(ly, lg, lx, tiling, false, bad); }
    if (mode == 102) SoftmaxFlashV2<float, false>(ly, ls, lm, lx, le, ls, lm, bt.Get<uint8_t>(minTmp - 32), tiling, info);
    if (mode != 4 && mode != 5) DataCopy(gy, ly, 256);
    DataCopy(gst, ls, 64); DataCopy(gst[64], lm, 64); DataCopy(gst[128], le, 64);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "smx")


def _run(kernel, mode):
    rng = np.random.default_rng(7)
    x = rng.uniform(-3, 3, (8, 32)).astype(np.float32)
    g = rng.uniform(-1, 1, (8, 32)).astype(np.float32)
    y = np.zeros(256, np.float32)
    st = np.zeros(192, np.float32)
    kernel.run([x, g, y, st, mode], block_dim=1, soc="ascend910b2")
    return x.astype(np.float64), g.astype(np.float64), y.reshape(8, 32), st.reshape(3, 8, 8)


def _blk(v):
    return np.repeat(v.reshape(8, 1), 8, axis=1)


def test_logsoftmax_is_log10_of_softmax(kernel):
    x, _, y, st = _run(kernel, 0)
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, np.log10(e / s), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(st[0], _blk(s), rtol=1e-6)
    np.testing.assert_array_equal(st[1], _blk(m).astype(np.float32))


def test_softmax_grad_and_front(kernel):
    x, g, y, _ = _run(kernel, 1)
    d = (g * x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, (g - d) * x, rtol=1e-5, atol=1e-6)
    _, _, y, _ = _run(kernel, 2)
    flat = y.reshape(-1)  # [8, 8]: one 32-byte block per row, packed
    np.testing.assert_allclose(flat[:64].reshape(8, 8), _blk(d), rtol=1e-5, atol=1e-6)
    assert not flat[64:].any()


def test_flash_v2_without_and_with_update(kernel):
    x, _, y, st = _run(kernel, 3)
    m = x.max(axis=1, keepdims=True)
    np.testing.assert_allclose(y, np.exp(x - m), rtol=1e-6)
    np.testing.assert_allclose(st[0], _blk(np.exp(x - m).sum(axis=1)), rtol=1e-6)
    x, _, y, st = _run(kernel, 4)
    a, b = x[:, :16], x[:, 16:]
    m1 = a.max(axis=1, keepdims=True)
    s1 = np.exp(a - m1).sum(axis=1, keepdims=True)
    m2 = np.maximum(m1, b.max(axis=1, keepdims=True))
    em = np.exp(m1 - m2)
    np.testing.assert_allclose(y.reshape(-1)[:128].reshape(8, 16), np.exp(b - m2), rtol=1e-6)
    np.testing.assert_allclose(st[0], _blk(em * s1 + np.exp(b - m2).sum(axis=1, keepdims=True)), rtol=1e-6)
    np.testing.assert_allclose(st[1], _blk(m2), rtol=1e-7)
    np.testing.assert_allclose(st[2], _blk(em), rtol=1e-6)
    # the full-row softmax from the two halves: the FlashAttention-2 identity
    np.testing.assert_allclose(st[0][:, 0], np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1)
                               * np.exp(x.max(axis=1) - m2[:, 0]), rtol=1e-6)


def test_flash_v2_mixed_types(kernel):
    x, _, y, st = _run(kernel, 5)
    xh = x.astype(np.float16).astype(np.float64)
    m = xh.max(axis=1, keepdims=True)
    np.testing.assert_allclose(y, np.exp(xh - m), rtol=2e-3)  # half dst
    np.testing.assert_allclose(st[0], _blk(np.exp(xh - m).sum(axis=1)), rtol=1e-6)  # float sums
    np.testing.assert_array_equal(st[1], _blk(m).astype(np.float32))


@pytest.mark.parametrize("mode,msg", [
    (100, r"LogSoftMax: dst and src overlap"),
    (101, r"SoftmaxGrad: srcK 30 is not 32-byte aligned"),
    (102, r"SoftmaxFlashV2: sharedTmpBuffer holds 480 bytes, less than the minimum 512"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
