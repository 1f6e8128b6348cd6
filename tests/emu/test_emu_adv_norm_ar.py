"""LayerNorm [A, R] with rstd (isNoBeta too) and Normalize from a given mean / variance
(adv_norm_ar.h), with the buffer taken by TBuf::AllocTensor, on a devkit-style kernel of our own
against NumPy; and the refusals (para outside the tiling, an empty tiling, SetOverflow(2))."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;
static constexpr LayerNormConfig NO_BETA = {true, false, false, true};
// x: [4, 16] floats (rows of 12 values + 4 padding); gb: gamma [16], beta [16]; out: y [64], mean [8], rstd [8], ny [64]
extern "C" __global__ __aicore__ void lnar(GM_ADDR x, GM_ADDR gb, GM_ADDR out, uint32_t mode)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bg, bb, by, bm, br, bv, bn, bt;
    pipe.InitBuffer(bx, 256); pipe.InitBuffer(bg, 64); pipe.InitBuffer(bb, 64); pipe.InitBuffer(by, 256);
    pipe.InitBuffer(bm, 32); pipe.InitBuffer(br, 32); pipe.InitBuffer(bv, 32); pipe.InitBuffer(bn, 256);
    pipe.InitBuffer(bt, 1024);
    GlobalTensor<float> gx, gg, go;
    gx.SetGlobalBuffer((__gm__ float*)x, 64); gg.SetGlobalBuffer((__gm__ float*)gb, 32);
    go.SetGlobalBuffer((__gm__ float*)out, 144);
    LocalTensor<float> lx = bx.Get<float>(), lg = bg.Get<float>(), lb = bb.Get<float>(), ly = by.Get<float>(),
        lm = bm.Get<float>(), lr = br.Get<float>(), lv = bv.Get<float>(), ln = bn.Get<float>();
    DataCopy(lx, gx, 64); DataCopy(lg, gg, 16); DataCopy(lb, gg[16], 16);
    Duplicate(ly, 0.0f, 64); Duplicate(ln, 0.0f, 64); Duplicate(lm, 0.0f, 8); Duplicate(lr, 0.0f, 8);
    AscendCUtils::SetOverflow(1);
    TensorShape shape({4, 12});
    uint32_t mx = 0, mn = 0;
    GetLayerNormMaxMinTmpSize(shape, 4, false, true, false, mx, mn);
    LayerNormSeparateTiling t;
    GetLayerNormNDTilingInfo(shape, mn, 4, false, true, t);
    LayerNormPara p{4, 12, 16};
    LocalTensor<uint8_t> tmp = bt.AllocTensor<uint8_t>();
    if (mode == 0) {
        LayerNorm<float, float>(ly, lm, lr, lx, lg, lb, 0.01f, tmp, p, t);
        Mul(lv, lr, lr, 8); Reciprocal(lv, lv, 8); Adds(lv, lv, -0.01f, 8);  // the variance back from rstd
        NormalizePara np{4, 12, 16};
        Normalize<float, float>(ln, lr, lm, lv, lx, lg, lb, tmp, 0.01f, np);
    }
    if (mode == 1) LayerNorm<float, float, false, NO_BETA>(ly, lm, lr, lx, lg, lb, 0.01f, p, t);
    if (mode == 100) { LayerNormPara big{5, 12, 16}; LayerNorm<float, float>(ly, lm, lr, lx, lg, lb, 0.01f, p, LayerNormSeparateTiling{}); }
    if (mode == 101) { LayerNormPara big{5, 12, 16}; LayerNorm<float, float>(ly, lm, lr, lx, lg, lb, 0.01f, big, t); }
    if (mode == 102) AscendCUtils::SetOverflow(2);
    bt.FreeTensor(tmp);
    AscendCUtils::SetOverflow(0);
    DataCopy(go, ly, 64); DataCopy(go[64], lm, 8); DataCopy(go[72], lr, 8); DataCopy(go[80], ln, 64);
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "lnar")


def _run(kernel, mode):
    rng = np.random.default_rng(9)
    x = rng.uniform(-3, 3, (4, 16)).astype(np.float32)
    gb = rng.uniform(-1, 1, 32).astype(np.float32)
    out = np.zeros(144, np.float32)
    kernel.run([x, gb, out, mode], block_dim=1, soc="ascend910b2")
    return x[:, :12].astype(np.float64), gb[:12].astype(np.float64), gb[16:28].astype(np.float64), out


@pytest.mark.parametrize("mode", [0, 1])
def test_layernorm_ar_and_normalize(kernel, mode):
    x, g, b, out = _run(kernel, mode)
    m = x.mean(axis=1, keepdims=True)
    rs = 1 / np.sqrt(x.var(axis=1, keepdims=True) + 0.01)
    want = (x - m) * rs * g + (0 if mode == 1 else b)
    y = out[:64].reshape(4, 16)
    np.testing.assert_allclose(y[:, :12], want, rtol=1e-5, atol=1e-6)
    assert not y[:, 12:].any()  # the padding columns are not written (zeros from Duplicate)
    np.testing.assert_allclose(out[64:68], m[:, 0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out[72:76], rs[:, 0], rtol=1e-6)
    if mode == 0:
        np.testing.assert_allclose(out[80:144].reshape(4, 16)[:, :12], want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode,msg", [
    (100, r"LayerNorm: the LayerNormSeparateTiling is empty"),
    (101, r"LayerNorm: para \{aLength 5, rLength 12\} does not fit the tiling's \{A 4, R 12\}"),
    (102, r"SetOverflow\(2\): CTRL\[48\] takes 0"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
