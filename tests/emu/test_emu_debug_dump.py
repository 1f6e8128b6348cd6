"""asc_dump_gm / asc_dump_ubuf (devkit asc_dump page): the elements printed with their tag,
on-chip addresses taken from GetPhyAddr, ranges checked against the buffer / the memory."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py

_SRC = r"""
#include "kernel_operator.h"
#include "utils/debug/asc_dump.h"
extern "C" __global__ __aicore__ void dump_k(GM_ADDR x, int32_t n_gm, int32_t ub_off)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    AscendC::GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, 16);
    asc_dump_gm<float>((__gm__ float*)xg.GetPhyAddr(), 7, n_gm);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64);
    AscendC::LocalTensor<float> t = buf.Get<float>();
    AscendC::DataCopy(t, xg, 16);
    AscendC::Muls(t, t, 2.0f, 16);
    asc_dump_ubuf<float>((__ubuf__ float*)(t.GetPhyAddr() + ub_off), 9, 4);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_SRC, "dump_k")


def test_dump_prints_gm_and_ub_elements_with_their_tag(kernel, capfd):
    x = np.arange(16, dtype=np.float32)
    kernel.run([x, 3, 4], block_dim=1, soc="ascend910b2")
    out = capfd.readouterr().out
    assert "asc_dump_gm: desc=7, position=GM, 3 elements: 0 1 2\n" in out
    assert "asc_dump_ubuf: desc=9, position=UB, 4 elements: 2 4 6 8\n" in out   # from element 1 on


def test_dump_past_the_gm_buffer_is_refused(kernel):
    with pytest.raises(EmulationError, match=r"asc_dump_gm"):
        kernel.run([np.zeros(16, np.float32), 17, 0], block_dim=1, soc="ascend910b2")


def test_dump_past_the_end_of_ub_is_refused(kernel):
    with pytest.raises(EmulationError, match=r"asc_dump_ubuf: UB bytes \[196608, 196624\) .* past the end of UB"):
        kernel.run([np.zeros(16, np.float32), 1, 196608], block_dim=1, soc="ascend910b2")
