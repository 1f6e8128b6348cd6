"""The element-wise advanced (lib) APIs of adv_math.h on a devkit-style kernel of our own: each
op against NumPy, the host tmp-size query against the kernel's check, and the refusals
(sharedTmpBuffer below the query's minimum, dst overlapping src, calCount past a tensor)."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_N = 256
_KERNEL = r"""
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;
static_assert(Std::is_same_v<Std::remove_cv_t<const volatile int>, int> && Std::is_floating_point<half>::value == false);
constexpr CumSumConfig kDown{false, false, true, CumSumAlgorithm::LINE_BY_LINE};
// y = op(x0, x1) over 256 floats; tmpBytes of scratch from a TBuf (0: the no-buffer overloads);
// mode 100 runs Acosh in place (refused), 101 asks for 300 elements (refused)
extern "C" __global__ __aicore__ void adv(GM_ADDR x0, GM_ADDR x1, GM_ADDR y, uint32_t mode, uint32_t tmpBytes)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qa, qb; TQue<TPosition::VECOUT, 1> qo; TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(qa, 1, 1024); pipe.InitBuffer(qb, 1, 1024); pipe.InitBuffer(qo, 1, 1024);
    pipe.InitBuffer(tb, tmpBytes > 0 ? tmpBytes : 32);
    GlobalTensor<float> g0, g1, gy;
    g0.SetGlobalBuffer((__gm__ float*)x0, 256); g1.SetGlobalBuffer((__gm__ float*)x1, 256);
    gy.SetGlobalBuffer((__gm__ float*)y, 256);
    LocalTensor<float> a = qa.AllocTensor<float>(), b = qb.AllocTensor<float>();
    DataCopy(a, g0, 256); DataCopy(b, g1, 256);
    qa.EnQue(a); qb.EnQue(b);
    a = qa.DeQue<float>(); b = qb.DeQue<float>();
    LocalTensor<float> o = qo.AllocTensor<float>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    const bool tmp = tmpBytes > 0;
    switch (mode) {
        case 0: if (tmp) Acosh(o, a, t, 256); else Acosh(o, a); break;
        case 1: if (tmp) Erf(o, a, t); else Erf<float, false>(o, a, 256); break;
        case 2: if (tmp) Exp<float, 4, false>(o, a, t, 256); else Exp<float, 0, false>(o, a, 256); break;
        case 3: if (tmp) Fmod(o, a, b, t, 256); else Fmod(o, a, b); break;
        case 4: if (tmp) Power(o, a, b, t); else Power(o, a, 2.0f); break;
        case 5: if (tmp) GeGLU(o, a, b, t, 256); else Gelu(o, a, 256); break;
        case 6: if (tmp) SwiGLU(o, a, b, 1.5f, t); else Swish(o, a, 256, 1.5f); break;
        case 7: if (tmp) ClampMin(o, a, t, 0.25f, 256); else ClampMax(o, a, 0.25f, 256); break;
        case 8: if (tmp) Frac(o, a, t, 256); else Ceil(o, a, 256); break;
        case 9: Arange(o, -2.0f, 0.25f, 256); break;
        case 10: CumSum<float, kDown>(o, o[192], a, t, {3, 64}); break;   // rows 0..2, last row after
        case 11: CumSum<float>(o, b, a, t, {4, 64}); break;               // along each row
        case 12: { uint32_t ds[2] = {4, 64}, ss[2] = {1, 64}; Broadcast<float, 2, 0>(o, a, ds, ss); break; }
        case 13: { uint32_t ds[2] = {8, 32}, ss[2] = {8, 1}; Broadcast<float, 2, 1>(o, a, ds, ss, t); break; }
        case 102: { uint32_t ds[2] = {4, 64}, ss[2] = {2, 64}; Broadcast<float, 2, 0>(o, a, ds, ss); break; }
        case 100: Acosh(a, a, 256); DataCopy(o, a, 256); break;
        case 101: Acosh(o, a, 300); break;
    }
    qo.EnQue(o);
    o = qo.DeQue<float>();
    DataCopy(gy, o, 256);
    qo.FreeTensor(o); qa.FreeTensor(a); qb.FreeTensor(b);
}

// the host query the kernel's check agrees with: writes {max, min} for Acosh of 256 floats
extern "C" __attribute__((visibility("default"))) void acosh_query(uint32_t* out)
{
    TensorShape s({256});
    GetAcoshMaxMinTmpSize(s, sizeof(float), false, out[0], out[1]);
}
"""


def _gelu(x):
    return x / (1 + np.exp(-1.5957691216057308 * (x + 0.044715 * x ** 3)))


def _taylor_exp(x, n):
    xa = np.floor(x)
    xb = (x - xa).astype(np.float64)
    item, s = np.ones_like(xb), np.ones_like(xb)
    for i in range(n):
        item *= xb / (i + 1)
        s += item
    return np.exp(xa) * s


def _cumsum_down(a, b):
    c = np.cumsum(a[:192].reshape(3, 64), axis=0, dtype=np.float32)
    return np.concatenate([c.reshape(-1), c[-1]])


_CASES = {  # (mode, tmp?) -> (x0 range, x1 range, reference)
    (0, True): ((1.0, 8.0), (0, 1), lambda a, b: np.arccosh(a)),
    (0, False): ((1.0, 8.0), (0, 1), lambda a, b: np.arccosh(a)),
    (1, True): ((-3, 3), (0, 1), lambda a, b: np.vectorize(math.erf)(a)),
    (2, True): ((-5, 5), (0, 1), lambda a, b: _taylor_exp(a, 4)),
    (2, False): ((-5, 5), (0, 1), lambda a, b: np.exp(a)),
    (3, True): ((-9, 9), (0.5, 3), lambda a, b: np.fmod(a, b)),
    (4, True): ((0.5, 3), (-2, 2), lambda a, b: np.power(a, b)),
    (4, False): ((-3, 3), (0, 1), lambda a, b: a * a),
    (5, True): ((-2, 2), (-3, 3), lambda a, b: a * _gelu(b)),
    (5, False): ((-4, 4), (0, 1), lambda a, b: _gelu(a)),
    (6, True): ((-4, 4), (-4, 4), lambda a, b: a * b / (1 + np.exp(-1.5 * b))),
    (6, False): ((-4, 4), (0, 1), lambda a, b: a / (1 + np.exp(-1.5 * a))),
    (7, True): ((-1, 1), (0, 1), lambda a, b: np.maximum(a, 0.25)),
    (7, False): ((-1, 1), (0, 1), lambda a, b: np.minimum(a, 0.25)),
    (8, True): ((-50, 50), (0, 1), lambda a, b: a - np.floor(a)),
    (8, False): ((-50, 50), (0, 1), lambda a, b: np.ceil(a)),
    (9, False): ((0, 1), (0, 1), lambda a, b: -2.0 + 0.25 * np.arange(_N)),
    (10, True): ((-3, 3), (0, 1), _cumsum_down),
    (12, False): ((-3, 3), (0, 1), lambda a, b: np.tile(a[:64], 4)),
    (13, True): ((-3, 3), (0, 1), lambda a, b: np.repeat(a[:8], 32)),
    (11, True): ((-3, 3), (0, 1), lambda a, b: np.cumsum(a.astype(np.float32).reshape(4, 64), axis=1, dtype=np.float32).reshape(-1)),
}


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "adv")


def _run(kernel, mode, tmp_bytes, a=None, b=None):
    rng = np.random.default_rng(mode)
    a = rng.uniform(-1, 1, _N).astype(np.float32) if a is None else a
    b = rng.uniform(-1, 1, _N).astype(np.float32) if b is None else b
    y = np.zeros(_N, np.float32)
    kernel.run([a, b, y, mode, tmp_bytes], block_dim=1, soc="ascend910b2")
    return y


@pytest.mark.parametrize("mode,tmp", sorted(_CASES))
def test_advanced_op_matches_numpy(kernel, mode, tmp):
    (lo0, hi0), (lo1, hi1), ref = _CASES[(mode, tmp)]
    rng = np.random.default_rng(7 + mode)
    a = rng.uniform(lo0, hi0, _N).astype(np.float32)
    b = rng.uniform(lo1, hi1, _N).astype(np.float32)
    y = _run(kernel, mode, 1024 if tmp else 0, a, b)
    np.testing.assert_allclose(y, ref(a.astype(np.float64), b.astype(np.float64)).astype(np.float32),
                               rtol=2e-6, atol=1e-6)


def test_kernel_accepts_exactly_the_host_query_minimum(kernel):
    out = (ctypes.c_uint32 * 2)()
    ctypes.CDLL(str(kernel.lib_path)).acosh_query(out)
    max_value, min_value = out
    assert 0 < min_value <= max_value
    a = np.linspace(1.0, 5.0, _N, dtype=np.float32)
    np.testing.assert_allclose(_run(kernel, 0, min_value, a=a), np.arccosh(a), rtol=2e-6)
    with pytest.raises(EmulationError, match=r"less than the minimum"):
        _run(kernel, 0, min_value - 32, a=a)


def test_tmp_buffer_below_the_host_query_minimum_is_refused(kernel):
    with pytest.raises(EmulationError, match=r"Acosh: sharedTmpBuffer holds 256 bytes, less than the minimum 512"):
        _run(kernel, 0, 256, a=np.full(_N, 2.0, np.float32))


def test_broadcast_shape_mismatch_is_refused(kernel):
    with pytest.raises(EmulationError, match=r"Broadcast: srcShape\[0\] = 2 neither equals dstShape\[0\] = 4"):
        _run(kernel, 102, 0)


def test_in_place_and_overlong_count_are_refused(kernel):
    with pytest.raises(EmulationError, match=r"Acosh: dst and src overlap"):
        _run(kernel, 100, 0)
    with pytest.raises(EmulationError, match=r"Acosh accesses dst elements \[0, 300\) but the LocalTensor holds 256"):
        _run(kernel, 101, 0)
