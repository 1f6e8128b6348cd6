"""AscendQuant / AscendDequant / AscendAntiQuant (adv_quant.h) on a devkit-style kernel of our
own, against NumPy; and the refusals (calCount past a row, K not dividing the source)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
// mode 0: quant 256 floats -> int8; 1: dequant int32 [4, 64] * scale[64] (first 48 columns);
// 2: antiquant int8 [8, 32] with [2, 32] half offset / scale -> half
extern "C" __global__ __aicore__ void q(GM_ADDR x, GM_ADDR s, GM_ADDR o, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bs, bo, by, bt;
    pipe.InitBuffer(bx, 1024); pipe.InitBuffer(bs, 256); pipe.InitBuffer(bo, 256); pipe.InitBuffer(by, 1024);
    pipe.InitBuffer(bt, 1024);
    GlobalTensor<uint8_t> gx, gs, go, gy;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, 1024); gs.SetGlobalBuffer((__gm__ uint8_t*)s, 256);
    go.SetGlobalBuffer((__gm__ uint8_t*)o, 256); gy.SetGlobalBuffer((__gm__ uint8_t*)y, 1024);
    LocalTensor<uint8_t> lx = bx.Get<uint8_t>(), ls = bs.Get<uint8_t>(), lo = bo.Get<uint8_t>(), ly = by.Get<uint8_t>();
    LocalTensor<uint8_t> t = bt.Get<uint8_t>();
    DataCopy(lx, gx, 1024); DataCopy(ls, gs, 256); DataCopy(lo, go, 256);
    Duplicate(ly.ReinterpretCast<int16_t>(), (int16_t)0, 512);
    if (mode == 0) AscendQuant<float>(ly.ReinterpretCast<int8_t>(), lx.ReinterpretCast<float>(), t, 2.0f, 0.9f, 256);
    if (mode == 1) AscendDequant(ly.ReinterpretCast<float>(), lx.ReinterpretCast<int32_t>(), ls.ReinterpretCast<float>(),
                                 {4, 64, 48});
    if (mode == 2 || mode == 101) {
        LocalTensor<half> off = lo.ReinterpretCast<half>();
        uint32_t shape[] = {2, 32};
        off.SetShapeInfo(ShapeInfo(2, shape, DataFormat::ND));
        LocalTensor<int8_t> src = lx.ReinterpretCast<int8_t>();
        src.SetSize(256);
        AscendAntiQuant<int8_t, half, false>(ly.ReinterpretCast<half>(), src, off, ls.ReinterpretCast<half>(), t,
                                             mode == 2 ? 8 : 7);
    }
    if (mode == 100) AscendDequant(ly.ReinterpretCast<float>(), lx.ReinterpretCast<int32_t>(), ls.ReinterpretCast<float>(),
                                   {4, 64, 65});
    DataCopy(gy, ly, 1024);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "q")


def _run(kernel, mode, x, s, o):
    y = np.zeros(1024, np.uint8)
    kernel.run([x.view(np.uint8), s.view(np.uint8), o.view(np.uint8), y, mode], block_dim=1, soc="ascend910b2")
    return y


def test_quant_dequant_antiquant(kernel):
    rng = np.random.default_rng(2)
    x = rng.uniform(-40, 40, 256).astype(np.float32)
    y = _run(kernel, 0, x, np.zeros(64, np.float32), np.zeros(64, np.float32)).view(np.int8)[:256]
    expect = np.clip(np.rint((x * 2.0 + 0.9).astype(np.float16).astype(np.float32)), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(y, expect)

    xi = rng.integers(-1000, 1000, 256).astype(np.int32)
    sc = rng.uniform(-2, 2, 64).astype(np.float32)
    y = _run(kernel, 1, xi, sc, np.zeros(64, np.float32)).view(np.float32).reshape(4, 64)
    np.testing.assert_allclose(y[:, :48], (xi.reshape(4, 64) * sc.astype(np.float64))[:, :48], rtol=1e-6)
    assert not y[:, 48:].any()

    x8 = rng.integers(-100, 100, 1024).astype(np.int8)
    off = rng.uniform(-5, 5, 128).astype(np.float16)
    scl = rng.uniform(-2, 2, 128).astype(np.float16)
    y = _run(kernel, 2, x8, scl, off).view(np.float16)[:256].reshape(8, 32)
    g = np.repeat(np.arange(2), 4)  # 8 rows, 2 offset rows: groups of 4
    t = (x8[:256].reshape(8, 32).astype(np.float32) + off[:64].reshape(2, 32)[g].astype(np.float32)).astype(np.float16)
    expect = (scl[:64].reshape(2, 32)[g].astype(np.float32) * t.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(y, expect)


@pytest.mark.parametrize("mode,msg", [
    (100, r"AscendDequant: calCount 65 exceeds n 64"),
    (101, r"AscendAntiQuant: K 7 does not divide the 256 source elements"),
])
def test_refusals(kernel, mode, msg):
    z = np.zeros(256, np.float32)
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode, z, z[:64], z[:64])
