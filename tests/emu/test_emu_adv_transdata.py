"""Layout (MakeShape / MakeStride / MakeLayout) and TransData (adv_transdata.h): NCDHW <->
NDC1HWC0 and NCDHW <-> FRACTAL_Z_3D with N and C not multiples of 16 and H * W not 32-byte
aligned, on a devkit-style kernel of our own against NumPy; round trips give the input back;
a layout that does not fit its format is refused."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

N, C, D, H, W = 3, 20, 2, 3, 5
C1, N1, HW, HWP = 2, 1, 15, 16

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
static constexpr TransDataConfig TO_5HD = {DataFormat::NCDHW, DataFormat::NDC1HWC0};
static constexpr TransDataConfig FROM_5HD = {DataFormat::NDC1HWC0, DataFormat::NCDHW};
static constexpr TransDataConfig TO_FZ = {DataFormat::NCDHW, DataFormat::FRACTAL_Z_3D};
static constexpr TransDataConfig FROM_FZ = {DataFormat::FRACTAL_Z_3D, DataFormat::NCDHW};
// x: NCDHW rows of 16 (15 values + 1 pad) = 3*20*2*16 = 1920 halves; y: 2048 halves (ncdhw back) + 16384 (other)
extern "C" __global__ __aicore__ void td(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bo, bb, bt;
    pipe.InitBuffer(bs, 4096); pipe.InitBuffer(bo, 32768); pipe.InitBuffer(bb, 4096); pipe.InitBuffer(bt, 4096);
    GlobalTensor<half> gx, gy;
    gx.SetGlobalBuffer((__gm__ half*)x, 1920); gy.SetGlobalBuffer((__gm__ half*)y, 18432);
    LocalTensor<half> ls = bs.Get<half>(), lo = bo.Get<half>(), lb = bb.Get<half>();
    DataCopy(ls, gx, 1920);
    Duplicate(lo, (half)-1, 16384); Duplicate(lb, (half)-1, 2048);
    auto ncdhw = MakeLayout(MakeShape(3, 20, 2, 3, 5), MakeStride());
    auto hd = MakeLayout(MakeShape(3, 2, 2, 3, 5, 16), MakeStride());
    auto fz = MakeLayout(MakeShape(2, 2, 3, 5, 1, 16, 16), MakeStride());
    if (mode == 0) {
        TransDataParams<decltype(ncdhw), decltype(hd)> p{ncdhw, hd};
        TransData<TO_5HD>(lo, ls, bt.Get<uint8_t>(), p);
        TransDataParams<decltype(hd), decltype(ncdhw)> q{hd, ncdhw};
        TransData<FROM_5HD>(lb, lo, q);
    }
    if (mode == 1) {
        TransDataParams<decltype(ncdhw), decltype(fz)> p{ncdhw, fz};
        TransData<TO_FZ>(lo, ls, p);
        TransDataParams<decltype(fz), decltype(ncdhw)> q{fz, ncdhw};
        TransData<FROM_FZ>(lb, lo, q);
    }
    if (mode == 100) {
        TransDataParams<decltype(ncdhw), decltype(ncdhw)> p{ncdhw, ncdhw};
        TransData<TO_FZ>(lo, ls, p);
    }
    DataCopy(gy, lb, 2048); DataCopy(gy[2048], lo, 16384);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "td")


def _run(kernel, mode):
    a = (np.arange(N * C * D * HW) % 1999).astype(np.float16).reshape(N, C, D, HW)
    x = np.full((N, C, D, HWP), 7, np.float16)  # the row padding must not be read into the result
    x[..., :HW] = a
    y = np.zeros(18432, np.float16)
    kernel.run([x, y, mode], block_dim=1, soc="ascend910b2")
    return a, y


def _back(y):
    return y[:N * C * D * HWP].reshape(N, C, D, HWP)


def test_ncdhw_ndc1hwc0_round_trip(kernel):
    a, y = _run(kernel, 0)
    pad = np.zeros((N, C1 * 16, D, HW), np.float16)
    pad[:, :C] = a
    want = pad.reshape(N, C1, 16, D, HW).transpose(0, 3, 1, 4, 2).reshape(-1)  # N D C1 HW C0
    np.testing.assert_array_equal(y[2048:2048 + want.size], want)
    back = _back(y)
    np.testing.assert_array_equal(back[..., :HW], a)
    assert (back[..., HW:] == -1).all()  # the NCDHW output padding is not written


def test_ncdhw_fractal_z_3d_round_trip(kernel):
    a, y = _run(kernel, 1)
    pad = np.zeros((N1 * 16, C1 * 16, D, HW), np.float16)
    pad[:N, :C] = a
    want = pad.reshape(N1, 16, C1, 16, D, HW).transpose(4, 2, 5, 0, 1, 3).reshape(-1)  # D C1 HW N1 N0 C0
    np.testing.assert_array_equal(y[2048:2048 + want.size], want)
    np.testing.assert_array_equal(_back(y)[..., :HW], a)


def test_layout_not_fitting_the_format(kernel):
    with pytest.raises(EmulationError, match=r"TransData: the layout's shape of 5 dims does not fit FRACTAL_Z_3D"):
        _run(kernel, 100)
