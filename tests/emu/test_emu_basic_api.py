"""Basic devkit APIs on devkit-style kernels of our own (the 03_basic_api / 06_compatibility_guide
samples' surface): the kernel-side assert; more families below."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_ASSERT = r"""
#include "kernel_operator.h"
using namespace AscendC;
template <int N>
__aicore__ inline void Check(uint32_t mode)
{
    // a template context: assert must be declared by kernel_operator.h itself
    if (mode == 1) assert(mode == N && "mode must be N");
    if (mode == 2) assert(mode == N, "mode %u is not %d\n", mode, N);
}
extern "C" __global__ __aicore__ void kassert(GM_ADDR y, uint32_t mode)
{
    GlobalTensor<int32_t> gy;
    gy.SetGlobalBuffer((__gm__ int32_t*)y, 8);
    Check<0>(mode);
    gy.SetValue(0, 7);
}
"""


@pytest.fixture(scope="module")
def assert_kernel():
    return build_kernel(_ASSERT, "kassert")


def test_assert_passes_and_fails_with_message(assert_kernel):
    y = np.zeros(8, np.int32)
    assert_kernel.run([y, 0], block_dim=1, soc="ascend910b2")
    assert y[0] == 7
    with pytest.raises(EmulationError, match=r"line 8: Assertion `mode == N && \"mode must be N\"' failed"):
        assert_kernel.run([y, 1], block_dim=1, soc="ascend910b2")
    with pytest.raises(EmulationError, match=r"line 9: .*failed: mode 2 is not 0"):
        assert_kernel.run([y, 2], block_dim=1, soc="ascend910b2")


_MOVE = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void kmove(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 4 * 40); gy.SetGlobalBuffer((__gm__ float*)y, 64);
    if (mode < 10) {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
        TPipe pipe;
        TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 64 * sizeof(float));
        LocalTensor<float> u = b.Get<float>();
        // rows 1 and 3 of a 4 x 40 matrix, columns [2, 10) and [13, 21) of each
        SliceInfo src[] = {{2, 20, 3, 1, 40}, {1, 3, 1, 1, 4}};
        SliceInfo dst[] = {{0, 15, 0, 1, 32}, {0, 1, 0, 1, 2}};
        SliceInfo bad[] = {{0, 15, 0, 1, 32}, {0, 0, 0, 1, 2}};
        if (mode == 0) {
            DataCopy(u, gx, dst, src, 2);
            Duplicate(u[16], -1.0f, 16); Duplicate(u[48], -1.0f, 16);
            DataCopy(gy, u, 64);
        } else if (mode == 1) {
            DataCopy(u, gx, bad, src, 2);
        }
    } else {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
        LocalTensor<float> l1(TPosition::A1, 0, 64);
        LocalTensor<float> l0a(TPosition::A2, 0, 64);
        DataCopy(l1, gx, 64);
        if (mode == 10) DataCopy(gy, l1, 64);          // A1 -> GM (arch 2201)
        if (mode == 11) { LoadData2DParamsV2 p; LoadData(l0a, l1, p); }
    }
}
"""


@pytest.fixture(scope="module")
def move_kernel():
    return build_kernel(_MOVE, "kmove")


def test_slice_copy_gm_to_ub_takes_the_documented_pieces(move_kernel):
    x = np.arange(160, dtype=np.float32)
    y = np.zeros(64, np.float32)
    move_kernel.run([x, y, 0], block_dim=1, soc="ascend910b2")
    m = x.reshape(4, 40)
    expect = np.full((2, 32), -1.0, np.float32)
    for r, row in enumerate((1, 3)):
        expect[r, :16] = np.concatenate([m[row, 2:10], m[row, 13:21]])
    np.testing.assert_array_equal(y.reshape(2, 32), expect)


def test_slice_copy_refuses_mismatched_pieces(move_kernel):
    with pytest.raises(EmulationError, match=r"dst slices 2 pieces of 8 elements but src slices 4 pieces"):
        move_kernel.run([np.zeros(160, np.float32), np.zeros(64, np.float32), 1], block_dim=1, soc="ascend910b2")


def test_l1_to_gm_on_2201_and_load2dv2_refused(move_kernel):
    x = np.arange(160, dtype=np.float32)
    y = np.zeros(64, np.float32)
    res = move_kernel.run([x, y, 10], block_dim=1, soc="ascend910b2")
    np.testing.assert_array_equal(y, x[:64])
    assert res.counters["gm_write_bytes"] == 256 and res.counters["dma_ub_to_gm"] == 0
    with pytest.raises(EmulationError, match=r"LoadData2DParamsV2 \(Load2Dv2\) is available on Ascend 950 only"):
        move_kernel.run([x, y, 11], block_dim=1, soc="ascend910b2")


_INT4 = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void kint4(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t mode)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<half> gx, gz;
    GlobalTensor<int8_t> gy;
    gx.SetGlobalBuffer((__gm__ half*)x, 256); gy.SetGlobalBuffer((__gm__ int8_t*)y, 128);
    gz.SetGlobalBuffer((__gm__ half*)z, 256);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bz;
    pipe.InitBuffer(bx, 512); pipe.InitBuffer(by, 128); pipe.InitBuffer(bz, 512);
    LocalTensor<half> lx = bx.Get<half>(), lz = bz.Get<half>();
    LocalTensor<int8_t> ly = by.Get<int8_t>();
    LocalTensor<int4b_t> l4 = ly.ReinterpretCast<int4b_t>();
    DataCopy(lx, gx, 256);
    if (mode == 0) {  // repeat form: 2 repeats of 128 lanes, int4 repeat = 2 blocks
        Cast<int4b_t, half>(l4, lx, RoundMode::CAST_FLOOR, 128, 2, {1, 1, 2, 8});
    } else if (mode == 1) {  // count form on a view 64 elements in
        Duplicate(ly.ReinterpretCast<int16_t>(), (int16_t)0, 64);
        Cast(l4[64], lx, RoundMode::CAST_RINT, 192);
    } else if (mode == 2) {
        Cast<int4b_t, half>(l4, lx, RoundMode::CAST_ODD, 256);
    }
    DataCopy(gy, ly, 128);
    if (mode == 0) {  // and back: int4 -> half, exact
        Cast<half, int4b_t>(lz, l4, RoundMode::CAST_NONE, 256);
        l4.SetValue(3, int4b_t(-5));
        lz.SetValue(0, (half)(float)(int)l4.GetValue(3));
        lz.SetValue(1, (half)(float)l4.GetSize());
        DataCopy(gz, lz, 256);
    }
}
"""


@pytest.fixture(scope="module")
def int4_kernel():
    return build_kernel(_INT4, "kint4")


def _pack(v):
    n = (v.astype(np.int8) & 0xF).astype(np.uint8)
    return (n[0::2] | (n[1::2] << 4)).astype(np.uint8).view(np.int8)


def test_int4_cast_repeat_form_packs_low_nibble_first_and_saturates(int4_kernel):
    x = np.linspace(-12, 11, 256).astype(np.float16)
    y = np.zeros(128, np.int8)
    z = np.zeros(256, np.float16)
    int4_kernel.run([x, y, z, 0], block_dim=1, soc="ascend910b2")
    q = np.clip(np.floor(x.astype(np.float32)), -8, 7)
    np.testing.assert_array_equal(y, _pack(q))
    expect = q.astype(np.float16)
    expect[0], expect[1] = -5, 256  # GetValue(3) after SetValue(3, -5); GetSize counts nibbles
    np.testing.assert_array_equal(z, expect)


def test_int4_cast_count_form_on_a_view(int4_kernel):
    x = (np.arange(256) * 0.37 - 40).astype(np.float16)
    y = np.zeros(128, np.int8)
    int4_kernel.run([x, y, np.zeros(256, np.float16), 1], block_dim=1, soc="ascend910b2")
    q = np.zeros(256)
    q[64:] = np.clip(np.rint(x[:192].astype(np.float32)), -8, 7)
    np.testing.assert_array_equal(y, _pack(q))


def test_int4_cast_refuses_cast_odd(int4_kernel):
    with pytest.raises(EmulationError, match="Cast half -> int4b_t does not support CAST_ODD"):
        int4_kernel.run([np.zeros(256, np.float16), np.zeros(128, np.int8), np.zeros(256, np.float16), 2],
                        block_dim=1, soc="ascend910b2")


_CUBE = r"""
#include "kernel_operator.h"
using namespace AscendC;
// int8 C (16 x 32) = A (16 x 64) x B (64 x 32): B goes L1 -> L0B through LoadDataWithTranspose.
extern "C" __global__ __aicore__ void kcube(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, uint32_t mode)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GlobalTensor<int8_t> ga, gb;
    GlobalTensor<int32_t> gbias, gc;
    ga.SetGlobalBuffer((__gm__ int8_t*)a, 16 * 64); gb.SetGlobalBuffer((__gm__ int8_t*)b, 64 * 32);
    gbias.SetGlobalBuffer((__gm__ int32_t*)bias, 32); gc.SetGlobalBuffer((__gm__ int32_t*)c, 16 * 32);
    LocalTensor<int8_t> a1(TPosition::A1, 0, 1024), b1(TPosition::B1, 1024, 2048);
    LocalTensor<int32_t> c1(TPosition::C1, 4096, 32);
    LocalTensor<int32_t> bt(TPosition::C2, 0, 32);
    LocalTensor<int8_t> a2(TPosition::A2, 0, 1024), b2(TPosition::B2, 0, 2048);
    LocalTensor<int32_t> co1(TPosition::CO1, 0, 512);
    DataCopy(a1, ga, Nd2NzParams(1, 16, 64, 0, 64, 16, 1, 0));
    DataCopy(b1, gb, Nd2NzParams(1, 64, 32, 0, 32, 64, 1, 0));
    LoadData(a2, a1, LoadData2DParams(0, 2, 1, 0, 0, false, 0));
    // two k squares (32 x 32 bytes each); repeat r: its fractals at 2r and 2r + 1
    LoadDataWithTranspose(b2, b1, LoadData2dTransposeParams(0, 2, 1, 1, 0));
    MmadParams p;
    p.m = 16; p.n = 32; p.k = 64;
    if (mode == 1) {  // C starts from the bias row at C2 address 0
        DataCopy(c1, gbias, 32);
        DataCopy(bt, c1, 32);
        p.cmatrixInitVal = false;
        p.cmatrixSource = true;
    }
    Mmad(co1, a2, b2, p);
    FixpipeParamsV220 f(32, 16, 16, 32, false);
    if (mode == 5 || mode == 6) {  // DataCopy CO1 -> GM, DEQF16 by 0.5 with ReLU, NZ2ND
        GlobalTensor<half> gh;
        gh.SetGlobalBuffer((__gm__ half*)c, 16 * 32);
        float scale = 0.5f;
        if (mode == 5) SetFixpipePreQuantFlag(static_cast<uint64_t>(*reinterpret_cast<uint32_t*>(&scale)));
        SetFixpipeNz2ndFlag(1, 0, 0);
        DataCopyCO12DstParams q(32, 16, 32, 16, QuantMode_t::DEQF16, 1, false, true);
        DataCopy(gh, co1, q);
        return;
    }
    if (mode == 4) {  // L0C -> L1 (ND rows of 32), then L1 -> GM
        LocalTensor<int32_t> out1(TPosition::C1, 8192, 512);
        Fixpipe<int32_t, int32_t, CFG_ROW_MAJOR>(out1, co1, f);
        DataCopy(gc, out1, 512);
        return;
    }
    Fixpipe<int32_t, int32_t, CFG_ROW_MAJOR>(gc, co1, f);
    if (mode == 2) SetFixPipeConfig<int32_t>(co1, true);  // clears unit flags: changes nothing here
    if (mode == 3) SetFixPipeConfig<int32_t>(LocalTensor<int32_t>(), true);
}
"""


@pytest.fixture(scope="module")
def cube_kernel():
    return build_kernel(_CUBE, "kcube")


@pytest.mark.parametrize("mode", [0, 1, 4])
def test_load_data_with_transpose_int8_and_bias_table_source(cube_kernel, mode):
    """mode 1: C starts from the bias table; mode 4: the result leaves through Fixpipe to L1."""
    rng = np.random.default_rng(3)
    a = rng.integers(-20, 20, (16, 64), dtype=np.int8)
    b = rng.integers(-20, 20, (64, 32), dtype=np.int8)
    bias = rng.integers(-1000, 1000, 32, dtype=np.int32)
    c = np.zeros((16, 32), np.int32)
    cube_kernel.run([a, b, bias, c, mode], block_dim=1, soc="ascend910b2")
    expect = a.astype(np.int32) @ b.astype(np.int32) + (bias if mode == 1 else 0)
    np.testing.assert_array_equal(c, expect)


def test_co1_to_gm_copy_dequantises_with_the_scalar_register(cube_kernel):
    rng = np.random.default_rng(4)
    a = rng.integers(-20, 20, (16, 64), dtype=np.int8)
    b = rng.integers(-20, 20, (64, 32), dtype=np.int8)
    c = np.zeros((16, 32), np.int32)
    cube_kernel.run([a, b, np.zeros(32, np.int32), c, 5], block_dim=1, soc="ascend910b2")
    ref = np.maximum(a.astype(np.int32) @ b.astype(np.int32) * 0.5, 0).astype(np.float16)
    np.testing.assert_array_equal(c.view(np.float16).reshape(-1)[:512].reshape(16, 32), ref)
    with pytest.raises(EmulationError, match="DEQF16 reads the scalar of SetFixpipePreQuantFlag, never set on this core"):
        cube_kernel.run([a, b, np.zeros(32, np.int32), c, 6], block_dim=1, soc="ascend910b2")


def test_set_fixpipe_config_checks_its_tensor(cube_kernel):
    args = [np.ones((16, 64), np.int8), np.ones((64, 32), np.int8), np.zeros(32, np.int32),
            np.zeros((16, 32), np.int32)]
    cube_kernel.run(args + [2], block_dim=1, soc="ascend910b2")
    assert (args[3] == 64).all()
    with pytest.raises(EmulationError, match="SetFixPipeConfig"):
        cube_kernel.run(args + [3], block_dim=1, soc="ascend910b2")


_TRANS = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void ktrans(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<half> gx, gy;
    gx.SetGlobalBuffer((__gm__ half*)x, 512); gy.SetGlobalBuffer((__gm__ half*)y, 512);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bt;
    pipe.InitBuffer(bx, 1024); pipe.InitBuffer(by, 1024); pipe.InitBuffer(bt, 1024);
    LocalTensor<half> lx = bx.Get<half>(), ly = by.Get<half>();
    DataCopy(lx, gx, 512);
    Duplicate(ly, (half)0, 512);
    if (mode == 0) {
        Transpose(ly, lx);
        Transpose(ly[256], lx[256]);
    } else if (mode == 1) {  // [2, 4, 8, 8] -> [2, 8, 8, 4]
        TransposeParamsExt p;
        p.nSize = 2; p.cSize = 4; p.hSize = 8; p.wSize = 8;
        p.transposeType = TransposeType::TRANSPOSE_NCHW2NHWC;
        Transpose(ly, lx, bt.Get<uint8_t>(), p);
    } else if (mode == 2) {  // two repeats of a 16 x 16 block: rows 16 elements apart, repeats 256 apart
        uint64_t d[16], s[16];
        for (int i = 0; i < 16; ++i) { d[i] = ly[16 * i].GetPhyAddr(); s[i] = lx[16 * i].GetPhyAddr(); }
        TransDataTo5HD<half>(d, s, TransDataTo5HDParams(false, false, 2, 16, 16));
    } else if (mode == 3) {
        TransposeParamsExt p;
        p.nSize = 1; p.cSize = 1; p.hSize = 16; p.wSize = 16;
        p.transposeType = TransposeType::TRANSPOSE_ND2ND_ONLY;
        Transpose(ly, lx, bt.Get<uint8_t>(), p);
    }
    DataCopy(gy, ly, 512);
}
"""


@pytest.fixture(scope="module")
def trans_kernel():
    return build_kernel(_TRANS, "ktrans")


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_transpose_family(trans_kernel, mode):
    x = np.arange(512).astype(np.float16)
    y = np.zeros(512, np.float16)
    trans_kernel.run([x, y, mode], block_dim=1, soc="ascend910b2")
    if mode in (0, 2):  # each 256-element block transposed as 16 x 16
        expect = x.reshape(2, 16, 16).transpose(0, 2, 1).reshape(-1)
    else:
        expect = x.reshape(2, 4, 8, 8).transpose(0, 2, 3, 1).reshape(-1)
    np.testing.assert_array_equal(y, expect)


def test_transpose_refuses_unemulated_type(trans_kernel):
    with pytest.raises(EmulationError, match="transposeType 7 is not emulated"):
        trans_kernel.run([np.zeros(512, np.float16), np.zeros(512, np.float16), 3], block_dim=1, soc="ascend910b2")


_SORT = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void ksort(GM_ADDR x, GM_ADDR y, GM_ADDR cnt, uint32_t mode)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<float> gx, gy;
    GlobalTensor<int32_t> gc;
    gx.SetGlobalBuffer((__gm__ float*)x, 128); gy.SetGlobalBuffer((__gm__ float*)y, 256);
    gc.SetGlobalBuffer((__gm__ int32_t*)cnt, 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bi, bw, by;
    pipe.InitBuffer(bx, 512); pipe.InitBuffer(bi, 512); pipe.InitBuffer(bw, 1024); pipe.InitBuffer(by, 1024);
    LocalTensor<float> lx = bx.Get<float>(), w = bw.Get<float>(), ly = by.Get<float>();
    LocalTensor<uint32_t> li = bi.Get<uint32_t>();
    DataCopy(lx, gx, 128);
    CreateVecIndex(li.ReinterpretCast<int32_t>(), 0, 128);
    Sort32<float>(w, lx, li, 4);                    // four sorted runs of 32
    uint16_t len[4] = {32, 32, 32, 32};
    MrgSortSrcList<float> l(w[0], w[64], w[128], w[192]);
    if (mode == 1) Duplicate(ly, 0.0f, 256);  // a suspended merge writes only what it took
    MrgSort<float>(ly, l, MrgSort4Info(len, mode == 1, 0b1111, 1));
    DataCopy(gy, ly, 256);
    if (mode == 1) {
        uint16_t a, b, c, d;
        GetMrgSortResult(a, b, c, d);
        gc.SetValue(0, a); gc.SetValue(1, b); gc.SetValue(2, c); gc.SetValue(3, d);
    }
}
"""


@pytest.fixture(scope="module")
def sort_kernel():
    return build_kernel(_SORT, "ksort")


def test_sort32_and_mrgsort_give_a_descending_stable_list_of_score_index_pairs(sort_kernel):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 40, 128).astype(np.float32)  # many ties
    y = np.zeros(256, np.float32)
    sort_kernel.run([x, y, np.zeros(8, np.int32), 0], block_dim=1, soc="ascend910b2")
    # runs are stable inside; the merge takes the lower-numbered run first on ties, so the
    # whole result is a stable descending sort
    order = np.argsort(-x, kind="stable")
    np.testing.assert_array_equal(y[0::2], x[order])
    np.testing.assert_array_equal(y[1::2].view(np.uint32), order.astype(np.uint32))


def test_mrgsort_exhausted_suspension_stops_at_the_first_empty_list(sort_kernel):
    x = np.concatenate([np.full(32, 9.0), np.full(32, 1.0), np.full(32, 5.0), np.full(32, 3.0)]).astype(np.float32)
    cnt = np.zeros(8, np.int32)
    sort_kernel.run([x, np.zeros(256, np.float32), cnt, 1], block_dim=1, soc="ascend910b2")
    assert list(cnt[:4]) == [32, 0, 0, 0]  # list 1 (all 9.0) runs dry first


_BRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void kbrc(GM_ADDR x, GM_ADDR y)
{
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 64); gy.SetGlobalBuffer((__gm__ float*)y, 1024);
    LocalTensor<float> u(TPosition::VECIN, 0, 64);
    LocalTensor<float> c(TPosition::CO1, 0, 1024);
    LocalTensor<float> o(TPosition::CO2, 4096, 1024);
    DataCopy(u, gx, 64);
    // two blocks of 16 elements, 16 elements (2 x 32 B) skipped between them in src
    BroadCastVecToMM(c, u, 2, 1, 2, 0);
    DataCopyParams p(1, 2, 0, 0);
    DataCopyEnhancedParams e;
    e.blockMode = BlockMode::BLOCK_MODE_MATRIX;
    Duplicate(o, 0.0f, 1024);
    DataCopy(o, c, p, e);
    DataCopy(gy, o, 1024);
}
"""


def test_broadcast_vec_to_mm_fills_fractals_with_equal_rows():
    k = build_kernel(_BRC, "kbrc")
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(1024, np.float32)
    k.run([x, y], block_dim=1, soc="ascend310p3")
    f = y.reshape(4, 16, 16)
    np.testing.assert_array_equal(f[0], np.tile(x[0:16], (16, 1)))
    np.testing.assert_array_equal(f[1], np.tile(x[32:48], (16, 1)))
    assert (f[2:] == 0).all()
    with pytest.raises(EmulationError, match="a buffer in L0C cannot be used on a vector-core"):
        k.run([x, y], block_dim=1, soc="ascend910b2")  # no core of arch 2201 holds both UB and L0C


_PROP = r"""
#include "kernel_operator.h"
using namespace AscendC;
// 64 scores -> proposals (score field) -> 4 sorted groups of 16 -> one merged list -> scores
extern "C" __global__ __aicore__ void kprop(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    GlobalTensor<half> gx, gy;
    gx.SetGlobalBuffer((__gm__ half*)x, 64); gy.SetGlobalBuffer((__gm__ half*)y, 64);
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<half> s = ub.Alloc<half, 64>(), w = ub.Alloc<half, 512>(), m = ub.Alloc<half, 512>();
    LocalTensor<half> o = ub.Alloc<half, 64>();
    DataCopy(s, gx, 64);
    ProposalConcat(w, s, 4, 4);
    RpSort16(w, w, 4);
    MrgSortSrcList<half> l(w[0], w[128], w[256], w[384]);
    uint16_t len[4] = {16, 16, 16, 16};
    MrgSort4(m, l, MrgSort4Info(len, false, 15, 1));
    ProposalExtract(o, m, mode == 1 ? 32 : 4, 4);  // mode 1: 512 proposals from a 64-proposal list
    DataCopy(gy, o, 64);
}
"""


def test_region_proposal_pipeline_sorts_scores_descending():
    k = build_kernel(_PROP, "kprop")
    x = np.random.default_rng(2).uniform(-100, 100, 64).astype(np.float16)
    y = np.zeros(64, np.float16)
    k.run([x, y, 0], block_dim=1, soc="ascend310p3")
    np.testing.assert_array_equal(y, np.sort(x)[::-1])
    with pytest.raises(EmulationError, match=r"ProposalExtract accesses dst elements \[0, 512\) but the LocalTensor holds 64"):
        k.run([x, y, 1], block_dim=1, soc="ascend310p3")
    with pytest.raises(EmulationError, match="ProposalConcat is not available on ascend910b2"):
        k.run([x, y, 0], block_dim=1, soc="ascend910b2")


_MM4 = r"""
#include "kernel_operator.h"
using namespace AscendC;
// int4 C (16 x 32) = A (16 x 128) x B (128 x 32), B given as B^T (32 x 128) so both load with Load2D
extern "C" __global__ __aicore__ void kmm4(GM_ADDR a, GM_ADDR bt, GM_ADDR c)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GlobalTensor<int4b_t> ga, gb;
    GlobalTensor<int32_t> gc;
    ga.SetGlobalBuffer((__gm__ int4b_t*)a); gb.SetGlobalBuffer((__gm__ int4b_t*)bt);
    gc.SetGlobalBuffer((__gm__ int32_t*)c, 16 * 32);
    LocalTensor<int4b_t> a1(TPosition::A1, 0, 2048), b1(TPosition::B1, 2048, 4096);
    LocalTensor<int4b_t> a2(TPosition::A2, 0, 2048), b2(TPosition::B2, 0, 4096);
    LocalTensor<int32_t> co1(TPosition::CO1, 0, 512);
    // ND -> NZ on the packed bytes: 64 bytes (128 int4) per row
    DataCopy(a1, ga, Nd2NzParams(1, 16, 64, 0, 64, 16, 1, 0));
    DataCopy(b1, gb, Nd2NzParams(1, 32, 64, 0, 64, 32, 1, 0));
    LoadData(a2, a1, LoadData2DParams(0, 2, 1, 0, 0, false, 0));   // A: k blocks of 64
    for (int kb = 0; kb < 2; ++kb)                                  // B: per k block, the two n blocks
        LoadData(b2[kb * 2048], b1[kb * 2048], LoadData2DParams(0, 2, 1, 0, 0, false, 0));
    MmadParams p;
    p.m = 16; p.n = 32; p.k = 128;
    Mmad(co1, a2, b2, p);
    Fixpipe<int32_t, int32_t, CFG_ROW_MAJOR>(gc, co1, FixpipeParamsV220(32, 16, 16, 32, false));
}
"""


def test_int4_mmad_matches_numpy():
    k = build_kernel(_MM4, "kmm4")
    rng = np.random.default_rng(8)
    a = rng.integers(-8, 8, (16, 128))
    bt = rng.integers(-8, 8, (32, 128))
    c = np.zeros((16, 32), np.int32)
    k.run([_pack(a.reshape(-1)), _pack(bt.reshape(-1)), c], block_dim=1, soc="ascend910b2")
    np.testing.assert_array_equal(c, a @ bt.T)


_GM4 = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void kgm4(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    GlobalTensor<int4b_t> g;
    GlobalTensor<int32_t> gy;
    g.SetGlobalBuffer((__gm__ int4b_t*)x, 64); gy.SetGlobalBuffer((__gm__ int32_t*)y, 8);
    GlobalTensor<int4b_t> v = g[10];
    gy.SetValue(0, (int32_t)g.GetSize());
    gy.SetValue(1, (int)v.GetValue(1));  // element 11
    v.SetValue(0, int4b_t(-3));          // element 10
    if (mode == 1) g[11].GetValue(0);    // a view starting inside a byte
    if (mode == 2) g.GetValue(64);
}
"""


def test_int4_global_tensor_counts_nibbles():
    k = build_kernel(_GM4, "kgm4")
    vals = np.arange(64) % 16 - 8
    x = _pack(vals).copy()
    y = np.zeros(8, np.int32)
    k.run([x, y, 0], block_dim=1, soc="ascend910b2")
    assert y[0] == 64 and y[1] == vals[11]
    expect = vals.copy()
    expect[10] = -3
    np.testing.assert_array_equal(x, _pack(expect))
    with pytest.raises(EmulationError, match="operator\\[\\] offset 11"):
        k.run([_pack(vals).copy(), y, 1], block_dim=1, soc="ascend910b2")
    with pytest.raises(EmulationError, match="past its SetGlobalBuffer size"):
        k.run([_pack(vals).copy(), y, 2], block_dim=1, soc="ascend910b2")
