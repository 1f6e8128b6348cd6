"""The advanced Transpose (adv_transpose.h), scenarios 1 (NZ -> ND, axes 1 and 2 swapped),
2 (NZ -> NZ, the same) and 7 (2-D), on a devkit-style kernel of our own against NumPy; and the
refusals (a scenario that is not emulated, a tiling made for another scenario)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;
// x, y: 1 * 16 * 32 * 16 halves = 8192
extern "C" __global__ __aicore__ void tr(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd;
    pipe.InitBuffer(bs, 16384); pipe.InitBuffer(bd, 16384);
    GlobalTensor<half> gx, gy;
    gx.SetGlobalBuffer((__gm__ half*)x, 8192); gy.SetGlobalBuffer((__gm__ half*)y, 8192);
    LocalTensor<half> ls = bs.Get<half>(), ld = bd.Get<half>();
    DataCopy(ls, gx, 8192);
    ConfusionTransposeTiling t;
    uint32_t mx = 0, mn = 0;
    uint32_t type = mode == 100 ? 3 : (mode == 101 ? 1 : (mode == 2 ? 7 : mode + 1));
    TensorShape shape = mode == 2 ? TensorShape({128, 64}) : TensorShape({1, 16, 32, 16});
    GetTransposeMaxMinTmpSize(shape, 2, type, mx, mn);
    GetTransposeTilingInfo(shape, mn, 2, type, t);
    if (mode == 0) Transpose(ld, ls, TransposeType::TRANSPOSE_NZ2ND_0213, t);
    if (mode == 1) Transpose(ld, ls, TransposeType::TRANSPOSE_NZ2NZ_0213, t);
    if (mode == 2) Transpose(ld, ls, TransposeType::TRANSPOSE_ND2ND_ONLY, t);
    if (mode == 100) Transpose(ld, ls, TransposeType::TRANSPOSE_NZ2NZ_012_WITH_N, t);
    if (mode == 101) Transpose(ld, ls, TransposeType::TRANSPOSE_NZ2NZ_0213, t);
    DataCopy(gy, ld, 8192);
}
"""
B, N, S, HN = 1, 16, 32, 16


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "tr")


def _nz(a):  # [..., R, C] -> NZ [..., C/16, R/16, 16, 16]
    *lead, r, c = a.shape
    return a.reshape(*lead, r // 16, 16, c // 16, 16).swapaxes(-4, -2).swapaxes(-3, -2).reshape(-1)


def _run(kernel, mode, x):
    y = np.zeros(8192, np.float16)
    kernel.run([x, y, mode], block_dim=1, soc="ascend910b2")
    return y


def test_nz2nd_0213(kernel):
    nd = np.arange(8192, dtype=np.float16).reshape(B, N, S, HN)
    y = _run(kernel, 0, _nz(nd))
    np.testing.assert_array_equal(y.reshape(B, S, N, HN), nd.transpose(0, 2, 1, 3))


def test_nz2nz_0213(kernel):
    nd = (np.arange(8192) % 2039).astype(np.float16).reshape(B, N, S, HN)
    y = _run(kernel, 1, _nz(nd))
    np.testing.assert_array_equal(y, _nz(nd.transpose(0, 2, 1, 3)))


def test_2d(kernel):
    a = (np.arange(8192) % 1021).astype(np.float16).reshape(128, 64)
    y = _run(kernel, 2, a.reshape(-1))
    np.testing.assert_array_equal(y.reshape(64, 128), a.T)


@pytest.mark.parametrize("mode,msg", [
    (100, r"Transpose: TransposeType 3 is not emulated"),
    (101, r"Transpose: the tiling was made for transposeTypeIn 1, the call uses 2"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode, np.zeros(8192, np.float16))
