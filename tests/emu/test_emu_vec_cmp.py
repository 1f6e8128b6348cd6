"""Compare / Compares / Select (incl. byte masks) / DropOut / the CMPMASK register form and TPipe event ids (vec_cmp.h,
pipe.h) on a devkit-style kernel of our own, against NumPy; and the refusals (GetCmpMask before
any Compare, a scalar Select mode with a tensor, a mask tensor too short, a double release)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
// x0, x1: 128 floats; sel: 32 mask bytes; y: 128 floats (mask bytes in the first 16 for modes 0-2)
extern "C" __global__ __aicore__ void vc(GM_ADDR x0, GM_ADDR x1, GM_ADDR sel, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bs, bo;
    pipe.InitBuffer(ba, 512); pipe.InitBuffer(bb, 512); pipe.InitBuffer(bs, 32); pipe.InitBuffer(bo, 512);
    GlobalTensor<float> g0, g1, gy; GlobalTensor<uint8_t> gs;
    g0.SetGlobalBuffer((__gm__ float*)x0, 128); g1.SetGlobalBuffer((__gm__ float*)x1, 128);
    gs.SetGlobalBuffer((__gm__ uint8_t*)sel, 32); gy.SetGlobalBuffer((__gm__ float*)y, 128);
    LocalTensor<float> a = ba.Get<float>(), b = bb.Get<float>(), o = bo.Get<float>();
    LocalTensor<uint8_t> s = bs.Get<uint8_t>(), ob = o.ReinterpretCast<uint8_t>();
    DataCopy(a, g0, 128); DataCopy(b, g1, 128); DataCopy(s, gs, 32);
    Duplicate(o, 0.0f, 128);
    switch (mode) {
        case 0: Compare(ob, a, b, CMPMODE::LT, 128); break;
        case 1: Compares(ob, a, 0.5f, CMPMODE::GE, 128); break;
        case 2: { BinaryRepeatParams p; Compare(a, b, CMPMODE::GT, 40, p); GetCmpMask(ob); break; }
        case 3: Select(o, s, a, b, SELMODE::VSEL_TENSOR_TENSOR_MODE, 128); break;
        case 4: Select(o, s, a, 7.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 128); break;
        case 5: Select(o, s, a, b, SELMODE::VSEL_CMPMASK_SPR, 128); break;
        case 6: {  // event ids: alloc two, release one, fetch names the freed one
            int8_t e0 = pipe.AllocEventID<HardEvent::V_MTE3>(), e1 = pipe.AllocEventID<HardEvent::V_MTE3>();
            pipe.ReleaseEventID<HardEvent::V_MTE3>(e0);
            o.SetValue(0, (float)e0); o.SetValue(1, (float)e1); o.SetValue(2, (float)pipe.FetchEventID(HardEvent::V_MTE3));
            break;
        }
        case 7: { SelectWithBytesMaskShapeInfo info{2, 16, 16};  // byte mask: nonzero -> scalar
                  Select(o, a, 5.0f, s, b.ReinterpretCast<uint8_t>(), info); break; }
        case 8: { DropOutShapeInfo info{2, 64, 8};  // bit mode: 8 mask bytes per row of 64 floats
                  DropOut(o, a, s, b.ReinterpretCast<uint8_t>(), 0.8f, info); break; }
        case 100: GetCmpMask(ob); break;
        case 101: Select(o, s, a, b, SELMODE::VSEL_TENSOR_SCALAR_MODE, 128); break;
        case 102: Select(o, s, a, b, SELMODE::VSEL_TENSOR_TENSOR_MODE, 384); break;
        case 103: { int8_t e = pipe.AllocEventID<HardEvent::V_S>(); pipe.ReleaseEventID<HardEvent::V_S>(e);
                    pipe.ReleaseEventID<HardEvent::V_S>(e); break; }
    }
    DataCopy(gy, o, 128);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "vc")


def _inputs():
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, 128).astype(np.float32)
    b = rng.uniform(-1, 1, 128).astype(np.float32)
    b[:8] = a[:8]  # ties
    return a, b, rng.integers(0, 256, 32, dtype=np.uint8)


def _run(kernel, mode):
    a, b, s = _inputs()
    y = np.zeros(128, np.float32)
    kernel.run([a, b, s, y, mode], block_dim=1, soc="ascend910b2")
    return y


def _bits(mask_bytes, n):
    return np.unpackbits(mask_bytes, bitorder="little")[:n].astype(bool)


def test_compare_forms_write_lsb_first_bitmasks(kernel):
    a, b, _ = _inputs()
    np.testing.assert_array_equal(_run(kernel, 0).view(np.uint8)[:16], np.packbits(a < b, bitorder="little"))
    np.testing.assert_array_equal(_run(kernel, 1).view(np.uint8)[:16], np.packbits(a >= 0.5, bitorder="little"))
    reg = _run(kernel, 2).view(np.uint8)[:16]  # 64 lanes of one repeat, the first 40 enabled
    expect = np.zeros(128, bool)
    expect[:40] = a[:40] > b[:40]
    np.testing.assert_array_equal(reg, np.packbits(expect, bitorder="little"))


def test_select_modes(kernel):
    a, b, s = _inputs()
    bits = _bits(s, 128)
    np.testing.assert_array_equal(_run(kernel, 3), np.where(bits, a, b))
    np.testing.assert_array_equal(_run(kernel, 4), np.where(bits, a, np.float32(7.0)))
    per_repeat = np.tile(bits[:64], 2)  # every repeat of 64 floats reuses the first 64 bits
    np.testing.assert_array_equal(_run(kernel, 5), np.where(per_repeat, a, b))


def test_select_with_bytes_mask(kernel):
    a, b, s = _inputs()
    y = _run(kernel, 7)
    np.testing.assert_array_equal(y[:32], np.where(s != 0, np.float32(5.0), a[:32]))


def test_dropout_bit_mode(kernel):
    a, b, s = _inputs()
    bits = _bits(s[:16], 128)  # row i uses mask bytes [8 i, 8 i + 8)
    np.testing.assert_array_equal(_run(kernel, 8), np.where(bits, a * np.float32(1 / np.float32(0.8)), 0 * a))


def test_event_ids(kernel):
    np.testing.assert_array_equal(_run(kernel, 6)[:3], [0, 1, 0])


@pytest.mark.parametrize("mode,msg", [
    (100, r"GetCmpMask: no Compare has set the CMPMASK register"),
    (101, r"Select: VSEL_TENSOR_SCALAR_MODE takes a scalar src1"),
    (102, r"Select accesses src1 elements \[0, 384\) but the LocalTensor holds 128"),
    (103, r"ReleaseEventID: event id 0 is not allocated"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
