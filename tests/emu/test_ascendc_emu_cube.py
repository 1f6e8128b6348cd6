"""Cube data paths of the Ascend C host emulation (fusion/emu) that a fused
depthwise -> pointwise kernel needs for its pointwise GEMM:

* arch 2002 (310P, coupled core): DataCopy UB -> L1, CO1 -> CO2 (L0C -> UB) with
  DataCopyEnhancedParams, a vector epilogue in UB;
* arch 2201 (910B, AIC): the bias table (C2), DataCopy C1 -> C2, Mmad with a bias tensor;

each checked against NumPy, with the counters of the on-chip moves, and the rules of these
paths as EmulationErrors naming the kernel and the line.

Tolerances: float outputs (fp16 inputs, fp32 accumulation) within rtol 1e-5; fp16 outputs
within one fp16 ULP of the NumPy reference rounded to fp16.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

KERNELS = Path(__file__).parents[1] / "ascendc_kernels"


pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py


def assert_within_one_fp16_ulp(got: np.ndarray, ref32: np.ndarray) -> None:
    ref = ref32.astype(np.float16)
    err = np.abs(got.astype(np.float32) - ref.astype(np.float32))
    ulp = np.spacing(np.abs(ref)).astype(np.float32)
    bad = err > ulp
    assert not bad.any(), f"{bad.sum()} values off by more than one fp16 ULP, max error {err.max()}"


def nz(x: np.ndarray) -> np.ndarray:
    """Row-major (rows, cols) -> NZ: cols/16 column blocks, each all rows x 16 (row-major)."""
    rows, cols = x.shape
    return np.ascontiguousarray(x.reshape(rows, cols // 16, 16).transpose(1, 0, 2))


# ---- arch 2002: A from UB through L1, L0C back to UB ------------------------------------------

TILING_310P = np.dtype([("m", "<u4"), ("n", "<u4"), ("k", "<u4"), ("kStep", "<u4"), ("bias", "<f4")])


@pytest.mark.parametrize("name", ["gemm310_f32", "gemm310_f16"])
def test_310p_gemm_a_from_ub_result_to_ub(name):
    kernel = build_kernel(KERNELS / "cube_ub_gemm_310p.cpp", name)
    blocks, m, n, k, k_step, bias = 2, 32, 48, 64, 32, 0.25
    rng = np.random.default_rng(11)
    a32 = rng.standard_normal((blocks * m, k)).astype(np.float32)
    a16 = a32.astype(np.float16)  # Cast CAST_NONE float -> half rounds to nearest even
    b = rng.standard_normal((k, n)).astype(np.float16)
    tiling = np.array([(m, n, k, k_step, bias)], TILING_310P)
    ab = a16.astype(np.float64) @ b.astype(np.float64)

    if name == "gemm310_f32":
        c = np.zeros((blocks * m, n), np.float32)
        res = kernel.run([a32, b, c, None, tiling], block_dim=blocks, soc="ascend310p3")
        np.testing.assert_allclose(c, np.maximum(ab + bias, 0), rtol=1e-5, atol=1e-5)
        a_bytes, ub_to_l1, out_bytes = 4, k // 16, 4  # one UB -> L1 copy per 16-column block
    else:
        a_nz = np.concatenate([nz(a16[i * m:(i + 1) * m]).ravel() for i in range(blocks)])
        c = np.zeros((blocks * m, n), np.float16)
        res = kernel.run([a_nz, b, c, None, tiling], block_dim=blocks, soc="ascend310p3")
        relu16 = np.maximum(ab, 0).astype(np.float32).astype(np.float16)  # isRelu + fp32 -> fp16
        assert_within_one_fp16_ulp(c, relu16.astype(np.float32) + np.float32(bias))
        a_bytes, ub_to_l1, out_bytes = 2, 1, 2  # count form: one burst
    for pc in res.per_core:
        assert pc["dma_ub_to_l1"] == ub_to_l1 and pc["ub_to_l1_bytes"] == m * k * 2
        assert pc["dma_l0c_to_ub"] == 1 and pc["l0c_to_ub_bytes"] == m * n * 4  # read from L0C
        assert pc["gm_read_bytes"] == m * k * a_bytes + k * n * 2  # on-chip moves are not GM bytes
        assert pc["gm_write_bytes"] == m * n * out_bytes
        assert pc["dma_ub_to_gm"] == n // 16 and pc["dma_l0c_to_gm"] == 0
        assert pc["mmad_instructions"] == k // k_step
        assert pc["dma_l1_to_bt"] == 0


def test_310p_l0c_to_ub_with_gaps_picks_a_row_block():
    # blockCount n/16 bursts of one fractal, srcGap m/16 - 1 fractals, dstGap 2 blocks: the first
    # 16 rows of C, each 16-column block at its own 1024 + 64 B pitch in UB.
    kernel = build_kernel(KERNELS / "cube_ub_gemm_310p.cpp", "gemm310_rows16")
    blocks, m, n, k, k_step, bias = 2, 48, 32, 32, 16, -0.5
    rng = np.random.default_rng(13)
    a32 = rng.standard_normal((blocks * m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((blocks * 16, n), np.float32)
    res = kernel.run([a32, b, c, None, np.array([(m, n, k, k_step, bias)], TILING_310P)], block_dim=blocks,
                     soc="ascend310p3")
    ab = a32.astype(np.float16).astype(np.float64) @ b.astype(np.float64)
    rows = np.concatenate([np.arange(16) + i * m for i in range(blocks)])
    np.testing.assert_allclose(c, np.maximum(ab[rows] + bias, 0), rtol=1e-5, atol=1e-5)
    assert all(pc["l0c_to_ub_bytes"] == (n // 16) * 1024 for pc in res.per_core)


def test_310p_gemm_is_refused_on_910b():
    kernel = build_kernel(KERNELS / "cube_ub_gemm_310p.cpp", "gemm310_f32")
    a = np.zeros((32, 64), np.float32)
    b = np.zeros((64, 48), np.float16)
    c = np.zeros((32, 48), np.float32)
    with pytest.raises(EmulationError, match=r"a buffer in L1 cannot be used on a vector-core \(AIV: UB\) block"):
        kernel.run([a, b, c, None, np.array([(32, 48, 64, 32, 0.0)], TILING_310P)], block_dim=1,
                   soc="ascend910b2")


# ---- arch 2201: bias through the bias table --------------------------------------------------

@pytest.mark.parametrize("name", ["gemm_bias_f32", "gemm_bias_relu_f16"])
def test_910b_gemm_bias_through_bias_table(name):
    kernel = build_kernel(KERNELS / "mmad_bias_gemm.cpp", name)
    m, n, k, k_step = 32, 64, 64, 32
    rng = np.random.default_rng(12)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias_dtype = np.float32 if name == "gemm_bias_f32" else np.float16
    bias = (4 * rng.standard_normal(n)).astype(bias_dtype)
    c = np.zeros((m, n), np.float32 if name == "gemm_bias_f32" else np.float16)
    tiling = np.array([m, n, k, k_step], np.uint32)

    res = kernel.run([a, b, bias, c, None, tiling], block_dim=1, soc="ascend910b2")

    ref = a.astype(np.float64) @ b.astype(np.float64) + bias.astype(np.float64)  # bias[j] on every row
    if name == "gemm_bias_f32":
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
    else:
        assert_within_one_fp16_ulp(c, np.maximum(ref, 0).astype(np.float32))
    cnt = res.counters
    assert cnt["dma_l1_to_bt"] == 1 and cnt["l1_to_bt_bytes"] == n * bias.itemsize
    assert cnt["dma_gm_to_l1"] == 3 and cnt["gm_read_bytes"] == (m * k + k * n) * 2 + n * bias.itemsize
    assert cnt["mmad_instructions"] == k // k_step and cnt["dma_l0c_to_gm"] == 1
    assert cnt["dma_ub_to_l1"] == 0 and cnt["dma_l0c_to_ub"] == 0


def test_910b_bias_kernel_is_refused_on_310p():
    kernel = build_kernel(KERNELS / "mmad_bias_gemm.cpp", "gemm_bias_f32")
    z16 = np.zeros(64 * 64, np.float16)
    with pytest.raises(EmulationError, match=r"position C2 \(bias table\) has no buffer on ascend310p3"):
        kernel.run([z16, z16, np.zeros(64, np.float32), np.zeros(32 * 64, np.float32), None,
                    np.array([32, 64, 64, 32], np.uint32)], block_dim=1, soc="ascend310p3")


# ---- rules -----------------------------------------------------------------------------------

FAULT_SOURCE = (KERNELS / "emu_cube_faults.cpp").read_text().splitlines()


def fault_line(name: str) -> int:
    return next(i for i, ln in enumerate(FAULT_SOURCE, 1) if f"FAULT:{name}" in ln)


FAULTS = [
    # mode, marker, soc, expected text
    (1, "bt_overflow", "ascend910b2",
     "needs 2048 B of BT (bias table) but 0 B are already taken: total 2048 B > 1024 B usable on ascend910b2"),
    (2, "l0c_ub_misaligned", "ascend310p3",
     "DataCopy CO1 -> CO2: src starts at L0C byte address 64, which is not 1024-byte aligned"),
    (3, "ub_l1_on_2201", "ascend910b2", "a buffer in L1 cannot be used on a vector-core (AIV: UB) block"),
    (4, "c2_on_2002", "ascend310p3", "position C2 (bias table) has no buffer on ascend310p3 (arch 2002"),
    (5, "bias_init_val", "ascend910b2",
     "Mmad with a bias tensor: cmatrixInitVal = true starts C at 0 and the bias is ignored"),
    (6, "bt_count_units", "ascend910b2",
     "DataCopy of 32 bytes is not a multiple of 64 B (C1 -> C2 moves 64 B units)"),
    (7, "blockmode_normal", "ascend310p3", "DataCopy CO1 -> CO2: blockMode 0 is not supported by the devkit"),
    (8, "bt_dst_misaligned", "ascend910b2",
     "DataCopy: dst starts at BT (bias table) byte address 32, which is not 64-byte aligned"),
    (9, "mmad_bias_on_2002", "ascend310p3", "Mmad with a bias tensor is not available on ascend310p3"),
    (11, "ub_l1_count", "ascend310p3", "DataCopy of 20 bytes is not a multiple of 32 B"),
    (12, "l0c_ub_extent", "ascend310p3",
     "DataCopy CO1 -> CO2 accesses src bytes [0, 2048) but the LocalTensor holds 1024 bytes"),
    (13, "cmatrix_source", "ascend310p3",
     "Mmad: cmatrixSource = true (initial C from the bias table) is not available on ascend310p3"),
    (14, "l1_ub", "ascend310p3", "DataCopy: A1 (L1) -> VECIN (UB) is not a local DataCopy path"),
    (15, "init_blocknum", "ascend310p3", "InitConstValue: blockNum / dstGap are not configurable on arch 2002"),
    (16, "init_ub", "ascend310p3", "InitConstValue: dst must be an A1 / B1 / A2 / B2 tensor"),
    (18, "init_extent", "ascend310p3", "InitConstValue accesses dst bytes [0, 1536) but the LocalTensor holds 1024"),
]


@pytest.mark.parametrize("mode,marker,soc,text", FAULTS, ids=[f[1] for f in FAULTS])
def test_cube_path_rule_names_kernel_and_line(mode, marker, soc, text):
    kernel = build_kernel(KERNELS / "emu_cube_faults.cpp", "emu_cube_fault")
    x = np.zeros(1024, np.float16)
    with pytest.raises(EmulationError) as info:
        kernel.run([x, None, np.array([mode, x.size], np.uint32)], block_dim=1, soc=soc)
    err = info.value
    line = fault_line(marker)
    assert str(err).startswith(f"kernel 'emu_cube_fault' line {line}: "), str(err)
    assert text in str(err), str(err)


@pytest.mark.parametrize("mode,soc", [
    (3, "ascend310p3"),  # coupled cores: one block holds UB and L1 buffers
    (17, "ascend310p3"),  # InitConstValue: repeats of 512 B on arch 2002
    (0, "ascend910b2"),  # no fault at all
])
def test_legal_counterparts(mode, soc):
    kernel = build_kernel(KERNELS / "emu_cube_faults.cpp", "emu_cube_fault")
    x = np.zeros(1024, np.float16)
    kernel.run([x, None, np.array([mode, x.size], np.uint32)], block_dim=1, soc=soc)


# ---- MulAddDst (both arches' AI cores): the depthwise tap row ----------------------------------

MAD_TILING = np.dtype([("pixels", "<u4"), ("stride", "<u4")])


@pytest.mark.parametrize("stride,soc", [(1, "ascend910b2"), (2, "ascend910b2"), (2, "ascend310p3")])
def test_muladddst_tap_row_half_to_float(stride, soc):
    kernel = build_kernel(KERNELS / "muladddst.cpp", "mad_tap_row")
    pixels = 8
    rng = np.random.default_rng(5)
    x = rng.standard_normal((pixels * stride, 16)).astype(np.float16)
    w = rng.standard_normal(16).astype(np.float16)
    acc = rng.standard_normal((pixels, 16)).astype(np.float32)
    want = (x[::stride].astype(np.float64) * w.astype(np.float64) + acc).astype(np.float32)
    res = kernel.run([x, w, acc, None, np.array([(pixels, stride)], MAD_TILING)], block_dim=1, soc=soc)
    np.testing.assert_array_equal(acc, want)   # one rounding of an exact product: fp64 then fp32
    assert res.counters["vector_instructions"] == 1 and res.counters["vector_repeats"] == pixels // 4


def test_muladddst_count_form_float():
    kernel = build_kernel(KERNELS / "muladddst.cpp", "mad_count_f32")
    rng = np.random.default_rng(6)
    a, b, acc = (rng.standard_normal(64).astype(np.float32) for _ in range(3))
    want = (a.astype(np.float64) * b + acc).astype(np.float32)   # exact product, (near) one rounding
    kernel.run([a, b, acc, None, np.array([(4, 1)], MAD_TILING)], block_dim=1, soc="ascend910b2")
    np.testing.assert_allclose(acc, want, rtol=1e-6, atol=1e-6)
