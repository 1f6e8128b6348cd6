"""Host emulation of the Ascend C API (fusion/emu): kernels match NumPy, counters are
right, and broken hardware rules come back as EmulationError naming the kernel and line.

Tolerances: float outputs of the cube (fp16 inputs, fp32 accumulation) within rtol 1e-5;
fp16 outputs within one fp16 ULP of the NumPy reference rounded to fp16 (the emulator
rounds once per instruction like the vector unit, NumPy may round differently in between).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

from fusion.emu import EmulationBuildError, EmulationError, build_kernel
from fusion.core.errors import MegafuseError

KERNELS = Path(__file__).parents[1] / "ascendc_kernels"


pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py


@pytest.fixture(scope="module")
def add_kernel():
    return build_kernel(KERNELS / "add_custom.cpp", "add_custom")


@pytest.fixture(scope="module")
def fault_kernel():
    return build_kernel(KERNELS / "emu_faults.cpp", "emu_fault")


def assert_within_one_fp16_ulp(got: np.ndarray, ref32: np.ndarray) -> None:
    ref = ref32.astype(np.float16)
    err = np.abs(got.astype(np.float32) - ref.astype(np.float32))
    ulp = np.spacing(np.abs(ref)).astype(np.float32)
    bad = err > ulp
    assert not bad.any(), f"{bad.sum()} values off by more than one fp16 ULP, max error {err.max()}"


# ---- numerics and counters -------------------------------------------------------------------

def test_vector_add_double_buffered_over_8_cores(add_kernel):
    cores, tile_num, buffers, tile = 8, 4, 2, 128
    n = cores * tile_num * buffers * tile
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    z = np.zeros(n, np.float16)
    tiling = np.array([n, tile_num], np.uint32)

    res = add_kernel.run([x, y, z, None, tiling], block_dim=cores, soc="ascend910b2")

    assert_within_one_fp16_ulp(z, x.astype(np.float32) + y.astype(np.float32))
    assert np.array_equal(z, x + y)  # one rounding: exactly NumPy's fp16 add
    c = res.counters
    assert c["gm_read_bytes"] == 2 * n * 2
    assert c["gm_write_bytes"] == n * 2
    tiles = cores * tile_num * buffers
    assert c["dma_gm_to_ub"] == 2 * tiles and c["dma_ub_to_gm"] == tiles
    assert c["vector_instructions"] == tiles and c["vector_repeats"] == tiles  # 128 halves = one 256 B repeat
    assert c["cube_fractals"] == 0
    assert len(res.per_core) == cores
    assert all(pc["gm_read_bytes"] == 2 * (n // cores) * 2 for pc in res.per_core)


def test_cast_axpy_relu_with_tbuf_scratch_and_datacopypad_tail():
    kernel = build_kernel(KERNELS / "axpy_relu_cast.cpp", "axpy_relu_cast")
    cores, per_core, tile, alpha = 4, 1000, 256, 1.5  # 1000 = 3 tiles + 232 (464 B: not 32 B aligned)
    n = cores * per_core
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    z = np.zeros(n, np.float16)
    tiling = np.zeros(1, dtype=[("totalLength", "<u4"), ("tileLength", "<u4"), ("alpha", "<f4")])
    tiling[0] = (n, tile, alpha)

    res = kernel.run([x, y, z, None, tiling], block_dim=cores)

    ref = np.maximum(np.float32(alpha) * x.astype(np.float32) + y.astype(np.float32), 0)
    assert_within_one_fp16_ulp(z, ref)
    c = res.counters
    assert c["gm_read_bytes"] == 2 * n * 2 and c["gm_write_bytes"] == n * 2
    assert c["dma_gm_to_ub"] == cores * 4 * 2  # 3 DataCopy tiles + 1 DataCopyPad tail, x and y
    # per tile: 2 casts to float, Axpy and the final cast count len*4 bytes; Relu ceil(len/64) repeats
    per_tile = [256] * 3 + [232]
    repeats = sum(4 * -(-ln * 4 // 256) + -(-ln // 64) for ln in per_tile)
    assert c["vector_repeats"] == cores * repeats
    assert c["vector_instructions"] == cores * 5 * len(per_tile)


@pytest.mark.parametrize("name", ["gemm_f32", "gemm_relu_f16"])
def test_mmad_gemm_gm_l1_l0_l0c_gm(name):
    kernel = build_kernel(KERNELS / "mmad_gemm.cpp", name)
    m, n, k, k_step = 32, 32, 64, 32
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    out_dtype = np.float32 if name == "gemm_f32" else np.float16
    c = np.zeros((m, n), out_dtype)
    tiling = np.array([m, n, k, k_step], np.uint32)

    res = kernel.run([a, b, c, None, tiling], block_dim=1, soc="ascend910b3")

    ref = a.astype(np.float64) @ b.astype(np.float64)
    if name == "gemm_f32":
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
    else:
        assert_within_one_fp16_ulp(c, np.maximum(ref, 0).astype(np.float32))
    cnt = res.counters
    assert cnt["mmad_instructions"] == k // k_step
    assert cnt["cube_fractals"] == (m // 16) * (n // 16) * (k // 16)
    assert cnt["gm_read_bytes"] == (m * k + k * n) * 2
    assert cnt["gm_write_bytes"] == m * n * c.itemsize
    assert cnt["dma_gm_to_l1"] == 2 and cnt["dma_l0c_to_gm"] == 1
    assert cnt["l1_to_l0_bytes"] == 2 * (m * k + k * n)


@pytest.fixture(scope="module")
def probe_kernel():
    return build_kernel(KERNELS / "emu_semantics.cpp", "emu_probe")


def run_probe(kernel, mode, inp, out):
    kernel.run([inp, out, np.array([mode], np.uint32)], block_dim=1)
    return out


def test_datacopypad_pads_rows_as_documented(probe_kernel):
    out = run_probe(probe_kernel, 1, np.arange(64, dtype=np.float16), np.zeros(96, np.float16)).reshape(3, 32)
    for r in range(3):  # 2 pad, 10 data (12 apart in GM), 3 pad + 1 dummy = pad value; one 32 B gap block
        assert (out[r, :2] == 7).all() and (out[r, 12:16] == 7).all() and (out[r, 16:] == 0).all()
        assert np.array_equal(out[r, 2:12], np.arange(12 * r, 12 * r + 10, dtype=np.float16))


def test_cast_round_modes_float_to_half(probe_kernel):
    e = 2.0 ** -12  # 1 + e lies between the halves 1 and 1 + 2^-10; 1 + 2e is their midpoint
    x = np.array([1 + e, -(1 + e), 1 + 2 * e, 65520, 1e-8, -1e-8, 2.5, np.nan] * 2, np.float32)
    out = run_probe(probe_kernel, 2, x, np.zeros(16 * 7, np.float16)).reshape(7, 16)[:, :8]
    up, tiny, inf = np.float16(1 + 2 ** -10), np.float16(2.0 ** -24), np.inf
    expect = {  # NONE, RINT, FLOOR, CEIL, ROUND, TRUNC, ODD
        0: [1, 1, 1, up, 1, 1, up], 1: [-1, -1, -up, -1, -1, -1, -up],
        2: [1, 1, 1, up, up, 1, up], 3: [inf, inf, 65504, inf, inf, 65504, 65504],
        4: [0, 0, 0, tiny, 0, 0, tiny], 5: [0, 0, -tiny, 0, 0, 0, -tiny], 6: [2.5] * 7,
    }
    for col, want in expect.items():
        np.testing.assert_array_equal(out[:, col], np.array(want, np.float16), err_msg=f"input {x[col]}")
    assert np.isnan(out[:, 7]).all()


def test_cast_round_modes_float_to_int32(probe_kernel):
    x = np.array([2.5, -2.5, 1.5, -1.4, 3e9, -3e9, np.nan, 0.5], np.float32)
    out = run_probe(probe_kernel, 3, x, np.zeros(40, np.int32)).reshape(5, 8)
    imax, imin = 2 ** 31 - 1, -2 ** 31  # saturating
    np.testing.assert_array_equal(out, [[2, -2, 2, -1, imax, imin, 0, 0],    # RINT
                                        [2, -3, 1, -2, imax, imin, 0, 0],    # FLOOR
                                        [3, -2, 2, -1, imax, imin, 0, 1],    # CEIL
                                        [3, -3, 2, -1, imax, imin, 0, 1],    # ROUND
                                        [2, -2, 1, -1, imax, imin, 0, 0]])   # TRUNC


def test_repeat_form_block_and_repeat_strides(probe_kernel):
    out = run_probe(probe_kernel, 4, np.zeros(1, np.float16), np.zeros(256, np.float16))
    filled = np.r_[0:16, 32:48, 128:144, 160:176]  # 2 blocks per repeat, every other block, 8 blocks apart
    assert np.array_equal(np.nonzero(out)[0], filled)
    assert set(np.nonzero(out == 6)[0]) == {0, 2, 128, 130}  # bit mask 0b101 on both repeats


def test_axpy_half_to_float_and_strided_datacopy(probe_kernel):
    out = run_probe(probe_kernel, 5, np.arange(64, dtype=np.float16), np.zeros(64, np.float32))
    h = np.r_[0:16, 32:48].astype(np.float32)  # gathered with srcGap 1 block
    np.testing.assert_array_equal(out[np.r_[0:16, 32:48]], 2 * h + 1)  # scattered with dstGap 2 blocks
    assert (out[np.r_[16:32, 48:64]] == 0).all()


# ---- rules: each broken rule is an error naming the kernel and the source line ---------------

FAULT_SOURCE = (KERNELS / "emu_faults.cpp").read_text().splitlines()


def fault_line(name: str) -> int:
    return next(i for i, ln in enumerate(FAULT_SOURCE, 1) if f"FAULT:{name}" in ln)


FAULTS = [
    # mode, marker, soc, expected text
    (1, "ub_overflow", "ascend910b2", "needs 196608 B of UB but 0 B are already taken: total 196608 B > 188160 B"),
    (2, "datacopy_misaligned", "ascend910b2", "DataCopy of 20 bytes is not a multiple of 32 B (use DataCopyPad)"),
    (3, "deque_empty", "ascend910b2", "DeQue on an empty VECIN queue"),
    (4, "repeat_overflow", "ascend910b2", "Adds: repeatTime 300 is outside [0, 255]"),
    (5, "local_oob", "ascend910b2", "Add accesses dst elements [0, 1024) but the LocalTensor holds 512"),
    (6, "local_view_oob", "ascend910b2", "operator[] offset 600 past the end of a LocalTensor of 512 elements"),
    (7, "global_oob", "ascend910b2", "DataCopy accesses GlobalTensor elements [1008, 1040) past its "
     "SetGlobalBuffer size 1024"),
    (8, "enque_depth", "ascend910b2", "EnQue beyond the queue depth 1"),
    (9, "alloc_beyond_num", "ascend910b2", "all 1 buffers (InitBuffer num) are allocated or enqueued"),
    (10, "free_foreign", "ascend910b2", "FreeTensor of a tensor not allocated from this VECOUT queue"),
    (11, "use_after_free", "ascend910b2", "used after FreeTensor"),
    (12, "waitflag_without_setflag", "ascend910b2", "WaitFlag<HardEvent::V_MTE3>(1) has no SetFlag before it"),
    (13, "mask_overflow", "ascend910b2", "Add: mask 200 exceeds 128 lanes per repeat for 16-bit operands"),
    (14, "mix_ub_l1", "ascend910b2", "a buffer in L1 cannot be used on a vector-core (AIV: UB) block"),
    (15, "datacopypad", "ascend310p3", "DataCopyPad is not available on ascend310p3 (arch 2002)"),
    (16, "cast_mode", "ascend910b2", "Cast half -> float does not support CAST_RINT"),
    (17, "use_while_enqueued", "ascend910b2", "used after EnQue and before DeQue"),
    (18, "stale_handle", "ascend910b2", "src0 is a stale handle"),
    (19, "misaligned_operand", "ascend910b2", "Add: dst starts at UB byte address 6, which is not 32-byte aligned"),
    (20, "l0a_overflow", "ascend910b2", "needs 66048 B of L0A but 0 B are already taken: total 66048 B > 65536 B"),
]


@pytest.mark.parametrize("mode,marker,soc,text", FAULTS, ids=[f[1] for f in FAULTS])
def test_rule_violation_names_kernel_and_line(fault_kernel, mode, marker, soc, text):
    x = np.zeros(1024, np.float16)
    with pytest.raises(EmulationError) as info:
        fault_kernel.run([x, None, np.array([mode, x.size], np.uint32)], block_dim=2, soc=soc)
    err = info.value
    line = fault_line(marker)
    assert str(err).startswith(f"kernel 'emu_fault' line {line}: "), str(err)
    assert text in str(err), str(err)
    assert (err.kernel, err.line, err.block) == ("emu_fault", line, 0)
    assert isinstance(err, MegafuseError)


@pytest.mark.parametrize("mode,soc", [
    (1, "ascend310p3"),   # 192 KiB of UB fits the 248 KiB usable on 310P
    (14, "ascend310p3"),  # coupled cores: one block may hold UB and L1 buffers
    (15, "ascend910b2"),  # 910B has DataCopyPad
    (0, "ascend910b3"),   # no fault at all
])
def test_the_same_code_is_legal_on_another_soc(fault_kernel, mode, soc):
    x = np.zeros(1024, np.float16)
    fault_kernel.run([x, None, np.array([mode, x.size], np.uint32)], block_dim=1, soc=soc)


def test_counts_and_errors_are_per_run(add_kernel):
    n = 8 * 2 * 128
    x = np.ones(n, np.float16)
    bad = np.zeros(n // 2, np.float16)  # z too small: the last cores write past it
    with pytest.raises(EmulationError, match=r"outside every kernel argument buffer"):
        add_kernel.run([x, x, bad, None, np.array([n, 1], np.uint32)], block_dim=8)
    z = np.zeros(n, np.float16)
    res = add_kernel.run([x, x, z, None, np.array([n, 1], np.uint32)], block_dim=8)
    assert res.counters["gm_write_bytes"] == n * 2 and (z == 2).all()


# ---- building ------------------------------------------------------------------------------

def test_build_is_cached_by_content(add_kernel):
    t0 = time.perf_counter()
    again = build_kernel(KERNELS / "add_custom.cpp", "add_custom")
    assert again.lib_path == add_kernel.lib_path
    assert time.perf_counter() - t0 < 0.5


def test_compile_error_shows_gxx_diagnostics():
    src = '#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void k(GM_ADDR x)\n{\n    AscendC::NoSuchApi(x);\n}\n'
    with pytest.raises(EmulationBuildError, match=r"(?s)g\+\+ failed to compile kernel 'k'.*NoSuchApi"):
        build_kernel(src, "k")


def test_register_mask_without_set_vector_mask_is_refused():
    # isSetMask=false reads the mask register (vec_mask.h); nothing set it on this core.
    src = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x)\n{\n'
           '    TPipe pipe; TBuf<TPosition::VECCALC> b; pipe.InitBuffer(b, 512);\n'
           '    LocalTensor<half> t = b.Get<half>();\n'
           '    Duplicate(t, (half)0, 256);\n'
           '    Adds<half, false>(t, t, (half)1, 128, 1, {1, 1, 8, 8});\n}\n')
    with pytest.raises(EmulationError, match="no SetVectorMask / ResetMask set the mask register"):
        build_kernel(src, "k").run([np.zeros(4, np.float32)], block_dim=1)


def test_missing_kernel_symbol_is_reported(add_kernel):
    with pytest.raises(EmulationError, match=re.escape("kernel 'sub_custom' not found")):
        build_kernel(KERNELS / "add_custom.cpp", "sub_custom")
