"""SoftmaxFlashV3 (adv_softmax_v3.h) on a devkit-style kernel of our own ([8, 1024] half data,
float statistics, without and with update) against a vectorised NumPy transcription of the page's
pseudo-code; the global scalar min / max of kernel code; and the refusals (n below 512,
splitMeanCnt other than 8)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

M, NN, ALPHA, LOOP = 8, 1024, 0.9375, 3

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
// x: [8, 1024] halves; st: inMean, inSum, inMax [8, 8] floats each; y: [8, 1024] halves; out: mean, sum, max [8, 8] + expMax [8, 16] halves
extern "C" __global__ __aicore__ void v3(GM_ADDR x, GM_ADDR st, GM_ADDR y, GM_ADDR out, GM_ADDR em, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bm, bs, bx2, be;
    pipe.InitBuffer(bx, 16384); pipe.InitBuffer(by, 16384); pipe.InitBuffer(bm, 256); pipe.InitBuffer(bs, 256);
    pipe.InitBuffer(bx2, 256); pipe.InitBuffer(be, 256);
    GlobalTensor<half> gx, gy, ge; GlobalTensor<float> gs, go;
    gx.SetGlobalBuffer((__gm__ half*)x, 8192); gy.SetGlobalBuffer((__gm__ half*)y, 8192);
    gs.SetGlobalBuffer((__gm__ float*)st, 192); go.SetGlobalBuffer((__gm__ float*)out, 192);
    ge.SetGlobalBuffer((__gm__ half*)em, 128);
    LocalTensor<half> lx = bx.Get<half>(), ly = by.Get<half>(), le = be.Get<half>();
    LocalTensor<float> lm = bm.Get<float>(), ls = bs.Get<float>(), lmx = bx2.Get<float>();
    DataCopy(lx, gx, 8192); DataCopy(lm, gs, 64); DataCopy(ls, gs[64], 64); DataCopy(lmx, gs[128], 64);
    Duplicate(le, (half)0, 128);
    SoftMaxTiling t;
    uint32_t rows = min(8u, static_cast<uint32_t>(M_ROWS));
    SoftMaxParams p{rows, 1024, rows, 1024, 3, 8, 0.9375f};
    if (mode == 0) SoftmaxFlashV3<half, float, false>(ly, lm, ls, lmx, lx, le, lm, ls, lmx, t, p);
    if (mode == 1) SoftmaxFlashV3<half, float, true>(ly, lm, ls, lmx, lx, le, lm, ls, lmx, t, p);
    if (mode == 100) { SoftMaxParams q{8, 448, 8, 448, 3, 8, 0.9375f}; SoftmaxFlashV3<half, float, false>(ly, lm, ls, lmx, lx, le, lm, ls, lmx, t, q); }
    if (mode == 101) { SoftMaxParams q{8, 1024, 8, 1024, 3, 4, 0.9375f}; SoftmaxFlashV3<half, float, false>(ly, lm, ls, lmx, lx, le, lm, ls, lmx, t, q); }
    DataCopy(gy, ly, 8192); DataCopy(go, lm, 64); DataCopy(go[64], ls, 64); DataCopy(go[128], lmx, 64);
    DataCopy(ge, le, 128);
}
""".replace("M_ROWS", str(M))


def _reference(x, in_mean, in_sum, in_max, update):
    """The page's pseudo-code, vectorised: the mean reduction as BlockReduceSum / Add / BlockReduceSum."""
    x = x.astype(np.float64)
    s = ALPHA / (1 - ALPHA)
    base_k = NN // 8
    lanes = x[:, :512].reshape(M, 64, 8).sum(axis=2) + x[:, 512:].reshape(M, -1, 64).sum(axis=1)
    local = lanes.reshape(M, 8, 8).sum(axis=2) / base_k
    glob = local.mean(axis=1, keepdims=True)
    xs = x - np.repeat((glob - local) * s, base_k, axis=1)
    mean = (glob + in_mean * (LOOP - 1)) / LOOP if update else glob
    shift_curr, shift_prev = (glob - mean) * s, (in_mean - mean) * s
    mx = shift_curr + xs.max(axis=1, keepdims=True)
    if update:
        mx = np.maximum(mx, shift_prev + in_max)
    y = np.exp(xs - (mx - shift_curr))
    em = np.exp(in_max - mx + shift_prev)
    total = y.sum(axis=1, keepdims=True) + (em * in_sum if update else 0)
    return y, mean, total, mx, em


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "v3")


def _run(kernel, mode):
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 10, (M, NN)).astype(np.float16)
    lo, hi = np.array([4.5, 0.2, 5.0]).reshape(3, 1, 1), np.array([5.5, 2.0, 30.0]).reshape(3, 1, 1)
    stats = np.repeat(rng.uniform(lo, hi, (3, M, 1)), 8, axis=2).astype(np.float32)  # inMean, inSum, inMax
    y = np.zeros((M, NN), np.float16)
    out = np.zeros(192, np.float32)
    em = np.zeros(128, np.float16)
    kernel.run([x, stats, y, out, em, mode], block_dim=1, soc="ascend910b2")
    return x, stats[:, :, :1].astype(np.float64), y, out.reshape(3, M, 8), em.reshape(M, 16)


@pytest.mark.parametrize("update", [False, True])
def test_flash_v3_against_the_pseudo_code(kernel, update):
    x, st, y, out, em = _run(kernel, int(update))
    ry, rmean, rsum, rmax, rem = _reference(x, st[0], st[1], st[2], update)
    np.testing.assert_allclose(y.astype(np.float64), ry, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(out[0], np.repeat(rmean, 8, axis=1), rtol=1e-5)
    np.testing.assert_allclose(out[1], np.repeat(rsum, 8, axis=1), rtol=1e-5)
    np.testing.assert_allclose(out[2], np.repeat(rmax, 8, axis=1), rtol=1e-5)
    if update:
        np.testing.assert_allclose(em.astype(np.float64), np.repeat(rem, 16, axis=1), rtol=2e-3, atol=1e-7)  # half
        assert (rem > 1e-3).sum() >= 2  # rows where the previous maximum matters
    else:
        assert not em.any()  # expMax is an output of the update form only


@pytest.mark.parametrize("mode,msg", [
    (100, r"SoftmaxFlashV3: shape \[8, 448\] must have m a multiple of 8 and n >= 512"),
    (101, r"SoftmaxFlashV3: splitMeanCnt 4 \(only 8 is supported\)"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
