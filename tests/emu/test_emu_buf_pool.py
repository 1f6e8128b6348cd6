"""TBufPool and EXTERN_IMPL_BUFPOOL (devkit TBufPool pages): pools cut from TPipe, sub-pools,
shared pools reused after Reset, a custom pool built with the handle API; the blocks stay
inside their pool, bufIDSize is counted, tensors of a reset pool are stale."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py

_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
constexpr uint32_t N = 256;  // halves per buffer (512 B)

class MyPool {
public:
    MyPool() { Init(); }
    template <class T> bool InitBuffer(T& que, uint8_t num, uint32_t len)
    {
        auto h = GetBufHandle(GetCurBufSize());
        auto addr = GetCurAddr();
        que.InitStartBufHandle(h, num, len);
        for (uint32_t i = 0; i < num; ++i) que.InitBufHandle(this, i, h, addr + i * len, len);
        SetCurAddr(addr + num * len);
        SetCurBufSize(GetCurBufSize() + num);
        return true;
    }
    EXTERN_IMPL_BUFPOOL(MyPool, TPosition::VECCALC, 3);
};

struct Op {
    TPipe* pipe;
    GlobalTensor<half> x, y, z;
    TQue<TPosition::VECIN, 1> a, b;
    TQue<TPosition::VECOUT, 1> o;
    __aicore__ void Add(int32_t row)
    {
        LocalTensor<half> ta = a.AllocTensor<half>(), tb = b.AllocTensor<half>();
        DataCopy(ta, x, N);
        DataCopy(tb, y, N);
        a.EnQue(ta); b.EnQue(tb);
        ta = a.DeQue<half>(); tb = b.DeQue<half>();
        LocalTensor<half> to = o.AllocTensor<half>();
        AscendC::Add(to, ta, tb, N);
        o.EnQue(to);
        a.FreeTensor(ta); b.FreeTensor(tb);
        to = o.DeQue<half>();
        DataCopy(z[row * N], to, N);
        o.FreeTensor(to);
    }
};

extern "C" __global__ __aicore__ void pools(GM_ADDR x, GM_ADDR y, GM_ADDR z, int32_t mode)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    Op op;
    op.pipe = &pipe;
    op.x.SetGlobalBuffer((__gm__ half*)x, N);
    op.y.SetGlobalBuffer((__gm__ half*)y, N);
    op.z.SetGlobalBuffer((__gm__ half*)z, 3 * N);
    TBufPool<TPosition::VECCALC> p0, p1, p2;
    if (mode == 0) {            // reuse: p2 shares p1, used after p1.Reset()
        pipe.InitBufPool(p1, 3 * N * 2);
        pipe.InitBufPool(p2, 3 * N * 2, p1);
        p1.InitBuffer(op.a, 1, N * 2); p1.InitBuffer(op.b, 1, N * 2); p1.InitBuffer(op.o, 1, N * 2);
        op.Add(0);
        p1.Reset();
        p2.InitBuffer(op.a, 1, N * 2); p2.InitBuffer(op.b, 1, N * 2); p2.InitBuffer(op.o, 1, N * 2);
        op.Add(1);
        p2.Reset();
        MyPool mine;            // custom pool
        pipe.InitBufPool(mine, 3 * N * 2);
        mine.InitBuffer(op.a, 1, N * 2); mine.InitBuffer(op.b, 1, N * 2); mine.InitBuffer(op.o, 1, N * 2);
        op.Add(2);
    } else if (mode == 1) {     // subdivision: p1 inside p0, overflowing it
        pipe.InitBufPool(p0, 4 * N * 2);
        p0.InitBufPool(p1, 2 * N * 2);
        p0.InitBuffer(op.a, 1, 3 * N * 2);
    } else if (mode == 2) {     // a fifth buffer id of a bufIDSize-4 pool
        pipe.InitBufPool(p0, 8 * N * 2);
        p0.InitBuffer(op.a, 4, N * 2);
        p0.InitBuffer(op.b, 1, N * 2);
    } else if (mode >= 4) {     // a pool of the whole UB (192 KiB), or 32 B more
        pipe.InitBufPool(p0, 192 * 1024 + (mode - 4) * 32);
        p0.InitBuffer(op.a, 1, N * 2); p0.InitBuffer(op.b, 1, N * 2); p0.InitBuffer(op.o, 1, N * 2);
        op.Add(0);
    } else {                    // a tensor of a reset pool
        pipe.InitBufPool(p1, 3 * N * 2);
        p1.InitBuffer(op.a, 1, N * 2);
        LocalTensor<half> t = op.a.AllocTensor<half>();
        p1.Reset();
        DataCopy(t, op.x, N);
    }
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_SRC, "pools")


def _run(kernel, mode):
    x = np.linspace(-1, 1, 256).astype(np.float16)
    y = np.linspace(2, 3, 256).astype(np.float16)
    z = np.zeros(3 * 256, np.float16)
    kernel.run([x, y, z, mode], block_dim=1, soc="ascend910b2")
    return x, y, z


def test_shared_and_custom_pools_compute(kernel):
    x, y, z = _run(kernel, 0)
    np.testing.assert_array_equal(z.reshape(3, 256), np.tile((x + y)[None], (3, 1)))


def test_block_past_its_pool_is_refused(kernel):
    with pytest.raises(EmulationError, match=r"TBufPool::InitBuffer\(num=1, len=1536\) needs 1536 B but the pool has "
                                             r"1024 of its 2048 B left"):
        _run(kernel, 1)


def test_buffer_ids_beyond_bufidsize_are_refused(kernel):
    with pytest.raises(EmulationError, match=r"at most bufIDSize = 4 buffers; 4 are taken, 1 more"):
        _run(kernel, 2)


def test_tensor_of_a_reset_pool_is_stale(kernel):
    with pytest.raises(EmulationError, match=r"DataCopy: dst refers to a buffer released by"):
        _run(kernel, 3)


def test_a_pool_may_take_the_whole_ub_but_no_more(kernel):
    """The devkit's own InitBufPool check is the whole 192 KiB (its tbufpool sample reserves it
    all), not InitBuffer's usable budget."""
    x, y, z = _run(kernel, 4)
    np.testing.assert_array_equal(z[:256], x + y)
    with pytest.raises(EmulationError, match=r"InitBufPool\(len=196640\) needs 196640 B of UB .* > the 196608 B"):
        _run(kernel, 5)
