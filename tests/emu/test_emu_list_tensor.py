"""ListTensorDesc / TensorDesc (devkit pages): the list block is parsed (sizes, dims, indexes,
shapes, data pointers); a data pointer must point into a buffer the kernel may use; a block
whose descriptions do not end at ptrOffset is refused."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py

_SRC = r"""
#include "kernel_operator.h"
#include "kernel_operator_list_tensor_intf.h"
extern "C" __global__ __aicore__ void addn(GM_ADDR list, GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR info)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    AscendC::ListTensorDesc l((__gm__ void*)list);
    uint64_t shape[8] = {0};
    AscendC::TensorDesc<float> d;
    d.SetShapeAddr(shape);
    l.GetDesc(d, 1);
    AscendC::GlobalTensor<int64_t> o;
    o.SetGlobalBuffer((__gm__ int64_t*)info, 4);
    o.SetValue(0, l.GetSize());
    o.SetValue(1, d.GetDim());
    o.SetValue(2, d.GetIndex());
    o.SetValue(3, d.GetShape(0) * 1000 + d.GetShape(1));
    __gm__ float* a = l.GetDataPtr<float>(0);
    __gm__ float* b = d.GetDataPtr();
    for (int i = 0; i < 64; ++i) ((__gm__ float*)z)[i] = a[i] + b[i];
}
"""


def _block(ptrs, dims=((2, (8, 8)), (2, (4, 16)))):
    words = [8 * (1 + sum(1 + dim for dim, _ in dims))]
    for i, (dim, shape) in enumerate(dims):
        words += [dim | (i << 32), *shape]
    return np.array(words + list(ptrs), np.uint64)


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_SRC, "addn")


def test_list_is_parsed_and_its_pointers_used(kernel):
    x, y = np.arange(64, dtype=np.float32), np.full(64, 0.5, np.float32)
    z, info = np.zeros(64, np.float32), np.zeros(4, np.int64)
    kernel.run([_block([x.ctypes.data, y.ctypes.data]), x, y, z, info], block_dim=1, soc="ascend910b2")
    assert list(info) == [2, 2, 1, 4016]
    np.testing.assert_array_equal(z, x + y)


def test_pointer_outside_every_buffer_is_refused(kernel):
    x, y = np.arange(64, dtype=np.float32), np.full(64, 0.5, np.float32)
    stray = np.zeros(64, np.float32)   # not a kernel argument
    with pytest.raises(EmulationError, match=r"GetDataPtr: data pointer .* points into no kernel argument"):
        kernel.run([_block([x.ctypes.data, stray.ctypes.data]), x, y, np.zeros(64, np.float32),
                    np.zeros(4, np.int64)], block_dim=1, soc="ascend910b2")


def test_descriptions_must_end_at_ptr_offset(kernel):
    blk = _block([0, 0])
    blk[4] += 1   # tensor 1 claims 3 dims, but ptrOffset leaves room for 2
    with pytest.raises(EmulationError, match=r"descriptions end at byte 64, not at ptrOffset 56"):
        kernel.run([np.append(blk, np.uint64(0)), np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32),
                    np.zeros(4, np.int64)], block_dim=1, soc="ascend910b2")
