"""Concat + Sort + Extract (full and per-32 sorts) and TopK (Normal mode largest / smallest with
finish flags and given indices, Small mode) of adv_sort.h on a devkit-style kernel of our own,
against NumPy; and the refusals (k > n, Small mode with inner != 32)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;
// x: 64 floats; idx: 64 uint32; fin: 32 bytes; v: 64 floats; i: 64 uint32
extern "C" __global__ __aicore__ void sortk(GM_ADDR x, GM_ADDR idx, GM_ADDR fin, GM_ADDR v, GM_ADDR i, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bi, bf, bs, bt, bv, bo;
    pipe.InitBuffer(bx, 256); pipe.InitBuffer(bi, 256); pipe.InitBuffer(bf, 32); pipe.InitBuffer(bs, 512);
    pipe.InitBuffer(bt, 512); pipe.InitBuffer(bv, 256); pipe.InitBuffer(bo, 256);
    GlobalTensor<float> gx, gv; GlobalTensor<uint32_t> gi, go; GlobalTensor<bool> gf;
    gx.SetGlobalBuffer((__gm__ float*)x, 64); gi.SetGlobalBuffer((__gm__ uint32_t*)idx, 64);
    gf.SetGlobalBuffer((__gm__ bool*)fin, 32); gv.SetGlobalBuffer((__gm__ float*)v, 64);
    go.SetGlobalBuffer((__gm__ uint32_t*)i, 64);
    LocalTensor<float> lx = bx.Get<float>(), ls = bs.Get<float>(), lt = bt.Get<float>(), lv = bv.Get<float>();
    LocalTensor<uint32_t> li = bi.Get<uint32_t>(), lo = bo.Get<uint32_t>();
    LocalTensor<bool> lf = bf.Get<bool>();
    DataCopy(lx, gx, 64); DataCopy(li, gi, 64); DataCopy(lf, gf, 32);
    Duplicate(lv, -1.0f, 64); Duplicate(lo.ReinterpretCast<float>(), 0.0f, 64);
    if (mode == 0 || mode == 1) {
        LocalTensor<float> concat;
        Concat(concat, lx, lt, 4);
        if (mode == 0) Sort<float, true>(ls, concat, li, lt, 2); else Sort<float, false>(ls, concat, li, lt, 2);
        Extract(lv, lo, ls, 2);
    }
    TopkTiling t;
    platform_ascendc::PlatformAscendC* plat = platform_ascendc::PlatformAscendCManager::GetInstance();
    TopKTilingFunc(*plat, 32, 2, 3, 4, mode == 3, TopKMode::TOPK_NORMAL, mode == 2, t);
    TopKInfo info; info.outter = 2; info.inner = 32; info.n = 30;
    LocalTensor<int32_t> si = li.ReinterpretCast<int32_t>(), di = lo.ReinterpretCast<int32_t>();
    if (mode == 2) TopK<float, false, true, false, TopKMode::TOPK_NORMAL>(lv, di, lx, si, lf, 3, t, info, true);
    if (mode == 3) TopK<float, true, false, false, TopKMode::TOPK_NORMAL>(lv, di, lx, si, lf, 3, t, info, false);
    if (mode == 4) { info.n = 32; TopK<float, false, false, false, TopKMode::TOPK_NSMALL>(lv, di, lx, si, lf, 3, t, info, true); }
    if (mode == 100) TopK<float, false, false, false, TopKMode::TOPK_NORMAL>(lv, di, lx, si, lf, 31, t, info, true);
    if (mode == 101) { TopKInfo bad{1, 64, 64}; TopK<float, false, false, false, TopKMode::TOPK_NSMALL>(lv, di, lx, si, lf, 3, t, bad, true); }
    DataCopy(gv, lv, 64); DataCopy(go, lo, 64);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "sortk")


def _run(kernel, mode):
    rng = np.random.default_rng(5)
    x = rng.permutation(64).astype(np.float32) - 20.0
    x[7] = x[40] = 99.0  # a tie: the lower position first
    idx = (np.arange(64) * 3 + 1000).astype(np.uint32)
    fin = np.zeros(32, np.bool_)
    fin[1] = True
    v = np.zeros(64, np.float32)
    i = np.zeros(64, np.uint32)
    kernel.run([x, idx, fin, v, i, mode], block_dim=1, soc="ascend910b2")
    return x, idx, v, i


def test_full_sort_and_extract(kernel):
    x, idx, v, i = _run(kernel, 0)
    order = np.argsort(-x, kind="stable")
    np.testing.assert_array_equal(v, x[order])
    np.testing.assert_array_equal(i, idx[order])
    assert i[0] == idx[7] and i[1] == idx[40]


def test_sort_per_32(kernel):
    x, idx, v, i = _run(kernel, 1)
    for g in range(2):
        order = g * 32 + np.argsort(-x[g * 32:(g + 1) * 32], kind="stable")
        np.testing.assert_array_equal(v[g * 32:(g + 1) * 32], x[order])
        np.testing.assert_array_equal(i[g * 32:(g + 1) * 32], idx[order])


def test_topk_normal_largest_with_finish(kernel):
    x, _, v, i = _run(kernel, 2)
    for r in range(2):
        row = x[r * 32:r * 32 + 30]
        order = np.argsort(-row, kind="stable")[:3]
        np.testing.assert_array_equal(v[r * 8:r * 8 + 3], row[order])
        want = order if r == 0 else np.full(3, 30)  # row 1 is finished: index n
        np.testing.assert_array_equal(i[r * 8:r * 8 + 3], want)
        assert (v[r * 8 + 3:r * 8 + 8] == -1).all()  # k_pad padding not written


def test_topk_normal_smallest_given_indices(kernel):
    x, idx, v, i = _run(kernel, 3)
    for r in range(2):
        row = x[r * 32:r * 32 + 30]
        order = np.argsort(row, kind="stable")[:3]
        np.testing.assert_array_equal(v[r * 8:r * 8 + 3], row[order])
        np.testing.assert_array_equal(i[r * 8:r * 8 + 3], idx[order])  # [1, inner] indices shared by the rows


def test_topk_small_mode_packs_rows_of_k(kernel):
    x, _, v, i = _run(kernel, 4)
    for r in range(2):
        row = x[r * 32:(r + 1) * 32]
        order = np.argsort(-row, kind="stable")[:3]
        np.testing.assert_array_equal(v[r * 3:r * 3 + 3], row[order])
        np.testing.assert_array_equal(i[r * 3:r * 3 + 3], order)


@pytest.mark.parametrize("mode,msg", [
    (100, r"TopK: k 31 is outside \[1, n = 30\]"),
    (101, r"TopK: Small mode needs inner = 32, not 64"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
