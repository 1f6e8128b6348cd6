"""GatherMask (built-in and tensor patterns, in place), Gather (byte offsets) and Gatherb
(block offsets) of vec_gather.h on a devkit-style kernel of our own, against NumPy; and the
refusals (counter mode, a misaligned offset, a pattern outside 1..7)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
// x: 256 uint32; p: 64 uint32 (pattern bits / offsets); y: 256 uint32, y[255] = rsvdCnt
extern "C" __global__ __aicore__ void g(GM_ADDR x, GM_ADDR p, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bp, bo;
    pipe.InitBuffer(bx, 1024); pipe.InitBuffer(bp, 256); pipe.InitBuffer(bo, 1024);
    GlobalTensor<uint32_t> gx, gp, gy;
    gx.SetGlobalBuffer((__gm__ uint32_t*)x, 256); gp.SetGlobalBuffer((__gm__ uint32_t*)p, 64);
    gy.SetGlobalBuffer((__gm__ uint32_t*)y, 256);
    LocalTensor<uint32_t> a = bx.Get<uint32_t>(), pt = bp.Get<uint32_t>(), o = bo.Get<uint32_t>();
    DataCopy(a, gx, 256); DataCopy(pt, gp, 64);
    Duplicate(o.ReinterpretCast<int32_t>(), 0, 256);
    uint64_t cnt = 0;
    switch (mode) {
        case 0: GatherMask(a, a, (uint8_t)2, false, 0, {1, 4, 8, 0}, cnt); DataCopy(o, a, 128); break;
        case 1: GatherMask(o, a, pt, false, 0, {1, 2, 8, 1}, cnt); break;      // pattern rows 32 B apart
        case 2: Gather(o, a, pt, 4u, 64); break;
        case 3: Gatherb(o, a, pt, 1, {1, 8}); break;
        case 100: GatherMask(o, a, (uint8_t)2, true, 64, {1, 1, 8, 0}, cnt); break;
        case 101: Gather(o, a, pt, 2u, 64); break;
        case 102: GatherMask(o, a, (uint8_t)8, false, 0, {1, 1, 8, 0}, cnt); break;
    }
    o.SetValue(255, (uint32_t)cnt);
    DataCopy(gy, o, 256);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "g")


def _run(kernel, mode, p):
    x = np.arange(1000, 1256, dtype=np.uint32)
    y = np.zeros(256, np.uint32)
    kernel.run([x, p.astype(np.uint32), y, mode], block_dim=1, soc="ascend910b2")
    return x, y


def test_gather_mask_builtin_in_place(kernel):
    x, y = _run(kernel, 0, np.zeros(64))
    np.testing.assert_array_equal(y[:128], x[1::2])
    assert y[255] == 128


def test_gather_mask_tensor_pattern(kernel):
    rng = np.random.default_rng(9)
    p = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    x, y = _run(kernel, 1, p)
    bits = np.unpackbits(p.view(np.uint8), bitorder="little").astype(bool)
    keep = np.concatenate([bits[:64], bits[256:320]])  # repeat r reads the pattern at r * 32 bytes
    sel = x[:128][keep]
    assert y[255] == len(sel)
    np.testing.assert_array_equal(y[:len(sel)], sel)


def test_gather_and_gatherb(kernel):
    offs = (np.arange(64)[::-1] * 4).astype(np.uint32)  # byte offsets, + base 4
    x, y = _run(kernel, 2, offs)
    np.testing.assert_array_equal(y[:64], x[np.arange(64)[::-1] + 1])
    blocks = (np.array([7, 3, 0, 1, 2, 6, 5, 4]) * 32).astype(np.uint32)
    x, y = _run(kernel, 3, np.concatenate([blocks, np.zeros(56, np.uint32)]))
    np.testing.assert_array_equal(y[:64].reshape(8, 8), x[:64].reshape(8, 8)[blocks // 32])


@pytest.mark.parametrize("mode,msg", [
    (100, r"GatherMask: reduceMode = true \(counter mode\) is not emulated"),
    (101, r"Gather: srcOffset\[0\] \+ srcBaseAddr = 254 is not 4-byte aligned"),
    (102, r"GatherMask: built-in pattern 8 is outside \[1, 7\]"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode, (np.arange(64)[::-1] * 4).astype(np.uint32))
