"""The vector mask register (vec_mask.h): isSetMask = false ops in normal mode (SetVectorMask
bits, ResetMask) and counter mode (SetMaskCount + an element count: repeatTime unused, the last
repeat partial), on basic ops and the reductions, against NumPy; and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void vm(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bo;
    pipe.InitBuffer(ba, 1024); pipe.InitBuffer(bo, 1024);
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 256); gy.SetGlobalBuffer((__gm__ float*)y, 256);
    LocalTensor<float> a = ba.Get<float>(), o = bo.Get<float>();
    DataCopy(a, gx, 256);
    Duplicate(o, 0.0f, 256);
    BinaryRepeatParams bp; UnaryRepeatParams up;
    switch (mode) {
        case 0:  // normal mode: lanes 0..9 and 40 of each of 2 repeats
            SetVectorMask<float>(0, (1ull << 10) - 1 | (1ull << 40));
            Add<float, false>(o, a, a, MASK_PLACEHOLDER, 2, bp); break;
        case 1:  // counter mode: 150 elements, repeatTime ignored
            SetMaskCount(); SetVectorMask<float>(0, 150);
            Muls<float, false>(o, a, 3.0f, MASK_PLACEHOLDER, 1, up);
            SetMaskNorm(); break;
        case 2:  // counter-mode whole-repeat sums: 150 elements -> 3 results (64, 64, 22 lanes)
            SetMaskCount(); SetVectorMask<float, MaskMode::COUNTER>(0, 150);
            ReduceRepeat<ReduceType::SUM, float, float, false>(o, a, MASK_PLACEHOLDER, 1, 1, 1, 8);
            SetMaskNorm(); break;
        case 3: ResetMask(); Copy<float, false>(o, a, MASK_PLACEHOLDER, 4, {1, 1, 8, 8}); break;
        case 100: Adds<float, false>(o, a, 1.0f, MASK_PLACEHOLDER, 1, up); break;
        case 101: SetVectorMask<float>(65); break;
    }
    DataCopy(gy, o, 256);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "vm")


def _run(kernel, mode):
    x = np.random.default_rng(8).uniform(-2, 2, 256).astype(np.float32)
    y = np.zeros(256, np.float32)
    kernel.run([x, y, mode], block_dim=1, soc="ascend910b2")
    return x, y


def test_normal_mode_register_bits(kernel):
    x, y = _run(kernel, 0)
    lanes = np.zeros(64, bool)
    lanes[:10] = True
    lanes[40] = True
    on = np.concatenate([lanes, lanes, np.zeros(128, bool)])
    np.testing.assert_array_equal(y, np.where(on, x + x, 0))


def test_counter_mode(kernel):
    x, y = _run(kernel, 1)
    np.testing.assert_array_equal(y[:150], x[:150] * np.float32(3.0))
    assert not y[150:].any()
    x, y = _run(kernel, 2)
    np.testing.assert_allclose(y[:3], [x[:64].sum(), x[64:128].sum(), x[128:150].sum()], rtol=1e-6)
    assert not y[3:].any()


def test_reset_mask_enables_all_lanes(kernel):
    x, y = _run(kernel, 3)
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("mode,msg", [
    (100, r"isSetMask = false but no SetVectorMask / ResetMask set the mask register"),
    (101, r"SetVectorMask: length 65 exceeds 64 lanes"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
