"""Sum, the advanced ReduceMax/Min/Sum (AR / RA, inner padding), ReduceRepeat (value / index orders, strides), ReduceMax / ReduceMin / ReduceSum (count and
mask forms, calIndex) and the reduce special registers (vec_reduce.h) on a devkit-style kernel
of our own, against NumPy; and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void vr(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bw, bo;
    pipe.InitBuffer(ba, 1024); pipe.InitBuffer(bw, 256); pipe.InitBuffer(bo, 128);
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 256); gy.SetGlobalBuffer((__gm__ float*)y, 32);
    LocalTensor<float> a = ba.Get<float>(), w = bw.Get<float>(), o = bo.Get<float>();
    DataCopy(a, gx, 256);
    Duplicate(o, 0.0f, 32);
    switch (mode) {
        case 0: ReduceRepeat<ReduceType::SUM, float>(o, a, 64, 4, 1, 1, 8); break;
        case 1: ReduceRepeat<ReduceType::MAX, float>(o, a, 50, 4, 1, 1, 8); break;               // value, index
        case 2: ReduceRepeat<ReduceType::MIN, float>(o, a, 64, 2, 2, 1, 16, ReduceOrder::ORDER_ONLY_VALUE); break;
        case 3: ReduceMax<float>(o, a, w, 200, true); break;
        case 4: ReduceMin<float>(o, a, w, 64, 3, 8, true); break;
        case 5: ReduceSum<float>(o, a, w, 256); o.SetValue(1, GetReduceRepeatSumSpr<float>()); break;
        case 6: { SumParams sp{4, 64, 50}; Sum(o, a, w.ReinterpretCast<uint8_t>(), sp); break; }     // 4 rows of 64, first 50
        case 7: { uint32_t sh[2] = {4, 64}; ReduceMax<float, Pattern::Reduce::AR, false>(o, a, sh, false); break; }
        case 8: { uint32_t sh[2] = {8, 32}; ReduceMin<float, Pattern::Reduce::RA, false>(o, a, w.ReinterpretCast<uint8_t>(), sh, false); break; }
        case 9: { uint32_t sh[2] = {8, 20}; ReduceSum<float, Pattern::Reduce::AR, false>(o, a, sh, true); break; }  // rows padded to 24
        case 100: ReduceRepeat<ReduceType::SUM, float>(o, a, 64, 5, 1, 1, 8); break;
        case 101: o.SetValue(0, GetReduceRepeatSumSpr<float>()); break;
        case 102: ReduceSum<float>(o, a, a[128], 64); break;
        case 103: { SumParams sp{4, 60, 50}; Sum(o, a, w.ReinterpretCast<uint8_t>(), sp); break; }
    }
    DataCopy(gy, o, 32);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "vr")


def _x():
    return np.random.default_rng(11).uniform(-4, 4, 256).astype(np.float32)


def _run(kernel, mode):
    y = np.zeros(32, np.float32)
    kernel.run([_x(), y, mode], block_dim=1, soc="ascend910b2")
    return y


def test_reduce_repeat(kernel):
    x = _x().reshape(4, 64)
    np.testing.assert_allclose(_run(kernel, 0)[:4], x.sum(axis=1), rtol=1e-6)
    y = _run(kernel, 1)[:8].reshape(4, 2)
    np.testing.assert_array_equal(y[:, 0], x[:, :50].max(axis=1))
    np.testing.assert_array_equal(y[:, 1].view(np.uint32), x[:, :50].argmax(axis=1))
    y = _run(kernel, 2)  # src repeat stride 16 blocks (128 floats), dst stride 2 results
    np.testing.assert_array_equal(y[[0, 2]], _x().reshape(2, 128)[:, :64].min(axis=1))


def test_reduce_whole_tensor(kernel):
    x = _x()
    y = _run(kernel, 3)
    assert y[0] == x[:200].max() and y[1:2].view(np.uint32)[0] == x[:200].argmax()
    y = _run(kernel, 4)  # 3 repeats of 64 lanes, repeat stride 8 blocks
    assert y[0] == x[:192].min() and y[1:2].view(np.uint32)[0] == x[:192].argmin()
    y = _run(kernel, 5)
    np.testing.assert_allclose(y[:2], [x.astype(np.float64).sum()] * 2, rtol=1e-6)


def test_advanced_reductions(kernel):
    x = _x()
    np.testing.assert_allclose(_run(kernel, 6)[:4], x.reshape(4, 64)[:, :50].sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(_run(kernel, 7)[:4], x.reshape(4, 64).max(axis=1))
    np.testing.assert_array_equal(_run(kernel, 8)[:32], x.reshape(8, 32).min(axis=0))
    np.testing.assert_allclose(_run(kernel, 9)[:8], x[:192].reshape(8, 24)[:, :20].sum(axis=1), rtol=1e-6)


@pytest.mark.parametrize("mode,msg", [
    (100, r"ReduceRepeat accesses src elements \[0, 320\) but the LocalTensor holds 256"),
    (101, r"GetReduceRepeatSumSpr: no ReduceSum ran on this core"),
    (102, r"ReduceSum: workLocal overlaps an operand"),
    (103, r"Sum: inner 60 \* sizeof\(T\) is not a multiple of 32 bytes"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
