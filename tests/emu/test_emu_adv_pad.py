"""Pad (unaligned width; aligned width with redundant columns) and UnPad (adv_pad.h) on a
devkit-style kernel of our own, tiled by the host functions, against NumPy; and the refusals
(pads that do not make the aligned width, an aligned width with nothing to pad, leftPad on UnPad)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;
// x: [4, 16] halves (or [4, 13] back to back for mode 0); y: up to 64 halves
extern "C" __global__ __aicore__ void padk(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd;
    pipe.InitBuffer(bs, 128); pipe.InitBuffer(bd, 128);
    GlobalTensor<half> gx, gy;
    gx.SetGlobalBuffer((__gm__ half*)x, 64); gy.SetGlobalBuffer((__gm__ half*)y, 64);
    LocalTensor<half> ls = bs.Get<half>(), ld = bd.Get<half>();
    DataCopy(ls, gx, 64);
    Duplicate(ld, (half)0, 64);
    uint32_t w = (mode == 0 || mode == 100) ? 13 : 16, ow = (mode == 1 || mode == 101) ? (mode == 1 ? 12 : 16) : w;
    AscendC::tiling::PadTiling pt; AscendC::tiling::UnPadTiling ut;  // the samples spelling
    uint32_t mx = 0, mn = 0;
    GetPadMaxMinTmpSize(TensorShape({4, w}), 2, mx, mn);
    PadTilingFunc(TensorShape({4, w}), TensorShape({4, ow}), mn, 2, pt);
    UnPadTilingFunc(TensorShape({4, 16}), mn, 2, ut);
    if (mode == 0) { PadParams p{1, 2, -7}; Pad(ld, ls, p, pt); }
    if (mode == 1) { PadParams p{0, 3, 9}; Pad(ld, ls, p, pt); }
    if (mode == 2) { UnPadParams p{0, 3}; UnPad(ld, ls, p, ut); }
    if (mode == 100) { PadParams p{0, 1, 0}; Pad(ld, ls, p, pt); }
    if (mode == 101) { PadParams p{0, 1, 0}; Pad(ld, ls, p, pt); }
    if (mode == 102) { UnPadParams p{1, 3}; UnPad(ld, ls, p, ut); }
    DataCopy(gy, ld, 64);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "padk")


def _run(kernel, mode):
    x = np.arange(64, dtype=np.float16)
    y = np.zeros(64, np.float16)
    kernel.run([x, y, mode], block_dim=1, soc="ascend910b2")
    return x, y


def test_pad_unaligned_width(kernel):
    x, y = _run(kernel, 0)
    want = np.pad(x[:52].reshape(4, 13), ((0, 0), (1, 2)), constant_values=-7)
    np.testing.assert_array_equal(y.reshape(4, 16), want)


def test_pad_redundant_columns(kernel):
    x, y = _run(kernel, 1)
    want = x.reshape(4, 16).copy()
    want[:, 12:15] = 9
    np.testing.assert_array_equal(y.reshape(4, 16), want)


def test_unpad(kernel):
    x, y = _run(kernel, 2)
    np.testing.assert_array_equal(y[:52], x.reshape(4, 16)[:, :13].reshape(-1))
    assert not y[52:].any()


@pytest.mark.parametrize("mode,msg", [
    (100, r"Pad: leftPad 0 \+ width 13 \+ rightPad 1 must make the 32-byte aligned width 16"),
    (101, r"Pad: width 16 is 32-byte aligned and has no redundant column"),
    (102, r"UnPad: leftPad 1 \(only rightPad takes effect"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
