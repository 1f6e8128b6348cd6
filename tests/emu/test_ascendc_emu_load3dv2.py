"""LoadData with LoadData3DParamsV2 (img2col, devkit LoadData_3D page) in the Ascend C
emulator: a matrix as a 1 x W feature map into L0A (plain and enTranspose) and L0B, and a
3 x 3 img2col with padding, each checked through Mmad + Fixpipe against NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fusion.emu import build_kernel

KERNELS = Path(__file__).parents[1] / "ascendc_kernels"
M, N, K = 32, 32, 48
H, W, KS = 4, 4, 3

pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py


@pytest.fixture(scope="module")
def lib():
    return KERNELS / "load3dv2.cpp"


@pytest.mark.parametrize("trans_a", [0, 1])
def test_load3dv2_feeds_mmad(lib, trans_a):
    rng = np.random.default_rng(trans_a)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    a_gm = np.ascontiguousarray(a.T) if trans_a else a
    build_kernel(lib, "load3dv2_gemm").run([a_gm, b, c, trans_a], block_dim=1, soc="ascend910b2")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_load3dv2_img2col_with_padding(lib):
    fm = np.random.default_rng(7).standard_normal((H, W, 16)).astype(np.float16)
    cols = KS * KS * 16
    eye = np.eye(cols, dtype=np.float16)
    c = np.zeros((H * W, cols), np.float32)
    build_kernel(lib, "load3dv2_im2col").run([fm, eye, c], block_dim=1, soc="ascend910b2")
    pad = np.pad(fm, ((1, 1), (1, 1), (0, 0)))
    want = np.stack([pad[oh:oh + KS, ow:ow + KS, :].reshape(-1) for oh in range(H) for ow in range(W)])
    np.testing.assert_array_equal(c, want.astype(np.float32))
