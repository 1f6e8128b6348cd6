"""Basic vector APIs of vec_basic.h on a devkit-style kernel of our own, against NumPy: Brcb,
CreateVecIndex, And / Or / Not / ShiftLeft / ShiftRight, AddRelu / SubRelu, ReduceDataBlock
(with a partial mask) and ReducePairElem; and the refusals (repeatTime past 255, a shift past
the type width, a reduction reading past its LocalTensor)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
// x0, x1: 256 floats each; y: 256 floats (bit patterns for the integer modes)
extern "C" __global__ __aicore__ void vb(GM_ADDR x0, GM_ADDR x1, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bo;
    pipe.InitBuffer(ba, 1024); pipe.InitBuffer(bb, 1024); pipe.InitBuffer(bo, 1024);
    GlobalTensor<float> g0, g1, gy;
    g0.SetGlobalBuffer((__gm__ float*)x0, 256); g1.SetGlobalBuffer((__gm__ float*)x1, 256);
    gy.SetGlobalBuffer((__gm__ float*)y, 256);
    LocalTensor<float> a = ba.Get<float>(), b = bb.Get<float>(), o = bo.Get<float>();
    DataCopy(a, g0, 256); DataCopy(b, g1, 256);
    Duplicate(o, 0.0f, 256);
    LocalTensor<int16_t> ai = a.ReinterpretCast<int16_t>(), bi = b.ReinterpretCast<int16_t>(),
                         oi = o.ReinterpretCast<int16_t>();
    switch (mode) {
        case 0: Brcb(o, a, 2, {1, 8}); break;                                 // 16 values -> 2 x 8 blocks of 8
        case 1: CreateVecIndex(o, 3.0f, 200); break;
        case 2: And(oi, ai, bi, 512); break;
        case 3: Or(oi, ai, bi, 512); Not(oi[256], oi, 256); break;
        case 4: ShiftRight(oi, ai, (int16_t)3, 256); ShiftLeft(oi[256], ai[256], (int16_t)2, 256); break;
        case 5: AddRelu(o, a, b, 128); SubRelu(o[128], a[128], b[128], 128); break;
        case 6: ReduceDataBlock<ReduceType::MAX, float>(o, a, 60, 4, 1, 1, 8); break;  // 60 of 64 lanes
        case 7: { uint64_t m[2] = {~0ull, 0}; ReducePairElem<ReduceType::SUM, float>(o, a, m, 4, 1, 1, 8); break; }
        case 100: Brcb(o, a, 300, {1, 8}); break;
        case 101: ShiftRight(oi, ai, (int16_t)16, 256); break;
        case 102: ReduceDataBlock<ReduceType::SUM, float>(o, a, 64, 5, 1, 1, 8); break;  // 5 x 64 > 256
    }
    DataCopy(gy, o, 256);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "vb")


def _run(kernel, mode, a, b):
    y = np.zeros(256, np.float32)
    kernel.run([a, b, y, mode], block_dim=1, soc="ascend910b2")
    return y


def _inputs():
    rng = np.random.default_rng(3)
    return rng.uniform(-4, 4, 256).astype(np.float32), rng.uniform(-4, 4, 256).astype(np.float32)


def test_brcb_and_create_vec_index(kernel):
    a, b = _inputs()
    np.testing.assert_array_equal(_run(kernel, 0, a, b)[:128], np.repeat(a[:16], 8))
    y = _run(kernel, 1, a, b)
    np.testing.assert_array_equal(y[:200], 3.0 + np.arange(200, dtype=np.float32))
    assert not y[200:].any()


def test_bitwise_and_shifts(kernel):
    a, b = _inputs()
    ai, bi = a.view(np.int16), b.view(np.int16)
    np.testing.assert_array_equal(_run(kernel, 2, a, b).view(np.int16), ai & bi)
    y = _run(kernel, 3, a, b).view(np.int16)
    np.testing.assert_array_equal(y[:256], ai[:256] | bi[:256])
    np.testing.assert_array_equal(y[256:], ~(ai[:256] | bi[:256]))
    y = _run(kernel, 4, a, b).view(np.int16)
    np.testing.assert_array_equal(y[:256], ai[:256] >> 3)
    np.testing.assert_array_equal(y[256:], (ai[256:].astype(np.int32) << 2).astype(np.int16))


def test_add_relu_sub_relu(kernel):
    a, b = _inputs()
    y = _run(kernel, 5, a, b)
    np.testing.assert_array_equal(y[:128], np.maximum(a[:128] + b[:128], 0))
    np.testing.assert_array_equal(y[128:], np.maximum(a[128:] - b[128:], 0))


def test_reduce_data_block_partial_mask_and_pair_elem(kernel):
    a, b = _inputs()
    y = _run(kernel, 6, a, b)
    blocks = a.reshape(4, 8, 8).copy()  # 4 repeats x 8 blocks x 8 floats; lanes 60..63 masked off
    blocks[:, 7, 4:] = -np.inf
    np.testing.assert_array_equal(y[:32], blocks.max(axis=2).reshape(-1))
    assert not y[32:].any()
    y = _run(kernel, 7, a, b)
    np.testing.assert_allclose(y[:128], a.reshape(-1, 2).sum(axis=1), rtol=1e-7)


@pytest.mark.parametrize("mode,msg", [
    (100, r"Brcb: repeatTime 300 is outside \[0, 255\]"),
    (101, r"ShiftRight: shift 16 is outside \[0, 16\)"),
    (102, r"ReduceDataBlock accesses src elements \[0, 320\) but the LocalTensor holds 256"),
])
def test_refusals(kernel, mode, msg):
    a, b = _inputs()
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode, a, b)
