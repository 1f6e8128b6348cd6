"""RmsNorm (tmp from PopStackBuffer), DeepNorm, LayerNorm + LayerNormGrad + LayerNormGradBeta
(adv_norm.h) on a devkit-style kernel of our own, tiled by the host functions, against the NumPy
formulas of the devkit's pages; and the refusals (a tiling left empty, InitBuffer over the
stack, gamma reused as dst)."""

from __future__ import annotations

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

_KERNEL = r"""
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;
struct NormTiling {
    RmsNormTiling rms; DeepNormTiling deep; LayerNormTiling ln; LayerNormGradTiling lng; LayerNormGradBetaTiling lnb;
};
// x, gx, dy: [2, 4, 16] floats; gamma, beta: [16]; out: y [128], mean [8], var [8], pdx [128], pdg [16], pdb [16]
extern "C" __global__ __aicore__ void norm(GM_ADDR x, GM_ADDR gx, GM_ADDR dy, GM_ADDR gb, GM_ADDR out,
                                          GM_ADDR tiling, uint32_t mode)
{
    GET_TILING_DATA_WITH_STRUCT(NormTiling, t, tiling);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bgx, bdy, bg, bb, by, bm, bv, bpx, brg, bpg, bpb;
    pipe.InitBuffer(bx, 512); pipe.InitBuffer(bgx, 512); pipe.InitBuffer(bdy, 512); pipe.InitBuffer(bg, 64);
    pipe.InitBuffer(bb, 64); pipe.InitBuffer(by, 512); pipe.InitBuffer(bm, 32); pipe.InitBuffer(bv, 32);
    pipe.InitBuffer(bpx, 512); pipe.InitBuffer(brg, 512); pipe.InitBuffer(bpg, 64); pipe.InitBuffer(bpb, 64);
    GlobalTensor<float> g0, g1, g2, g3, go;
    g0.SetGlobalBuffer((__gm__ float*)x, 128); g1.SetGlobalBuffer((__gm__ float*)gx, 128);
    g2.SetGlobalBuffer((__gm__ float*)dy, 128); g3.SetGlobalBuffer((__gm__ float*)gb, 32);
    go.SetGlobalBuffer((__gm__ float*)out, 304);
    LocalTensor<float> lx = bx.Get<float>(), lgx = bgx.Get<float>(), ldy = bdy.Get<float>(), lg = bg.Get<float>(),
        lb = bb.Get<float>(), ly = by.Get<float>(), lm = bm.Get<float>(), lv = bv.Get<float>(),
        lpx = bpx.Get<float>(), lrg = brg.Get<float>(), lpg = bpg.Get<float>(), lpb = bpb.Get<float>();
    DataCopy(lx, g0, 128); DataCopy(lgx, g1, 128); DataCopy(ldy, g2, 128); DataCopy(lg, g3, 16); DataCopy(lb, g3[16], 16);
    Duplicate(lm, 0.0f, 8); Duplicate(lv, 0.0f, 8); Duplicate(lpx, 0.0f, 128); Duplicate(lpg, 0.0f, 16);
    Duplicate(lpb, 0.0f, 16);
    if (mode == 0 || mode == 100 || mode == 101) {
        LocalTensor<uint8_t> stack;
        if (!PopStackBuffer<uint8_t, TPosition::LCM>(stack)) return;
        if (mode == 100) { TBuf<TPosition::VECCALC> late; pipe.InitBuffer(late, 32); }
        RmsNormTiling rt = t.rms;
        if (mode == 101) rt = RmsNormTiling{};
        RmsNorm<float>(ly, lx, lg, stack, 0.5f, rt);
    }
    if (mode == 1) DeepNorm<float>(ly, lm, lv, lx, lgx, lb, lg, -2.5f, 0.25f, t.deep);
    if (mode == 2) {
        LayerNorm<float>(ly, lm, lv, lx, lg, lb, 1e-4f, t.ln);
        LayerNormGrad<float>(lpx, lrg, ldy, lx, lv, lm, lg, 1e-4f, t.lng);
        LayerNormGradBeta<float>(lpg, lpb, lrg, ldy, t.lnb);
    }
    if (mode == 102) RmsNorm<float>(lg, lx, lg, 0.5f, t.rms);
    DataCopy(go, ly, 128); DataCopy(go[128], lm, 8); DataCopy(go[136], lv, 8); DataCopy(go[144], lpx, 128);
    DataCopy(go[272], lpg, 16); DataCopy(go[288], lpb, 16);
}

extern "C" __attribute__((visibility("default"))) int make_tiling(uint8_t* buf, uint32_t size)
{
    NormTiling t;
    TensorShape s({2, 4, 16});
    uint32_t mx = 0, mn = 0;
    if (!GetRmsNormMaxMinTmpSize(s, 4, mx, mn) || !GetRmsNormTilingInfo(s, s, mn, 4, t.rms)) return 1;
    if (!GetDeepNormMaxMinTmpSize(s, 4, false, false, mx, mn) || !GetDeepNormTilingInfo(s, s, mn, 4, false, false, t.deep))
        return 2;
    TensorShape s4({2, 4, 16, 16});
    GetLayerNormMaxMinTmpSize(s4, 4, false, mx, mn);
    GetLayerNormNDTilingInfo(s4, mn, 4, false, t.ln);
    GetLayerNormGradNDTilingInfo(s4, mn, 4, false, t.lng);
    GetLayerNormGradBetaNDTilingInfo(s4, mn, 4, false, t.lnb);
    if (size < sizeof(t)) return 3;
    std::memcpy(buf, &t, sizeof(t));
    return 0;
}
"""


@pytest.fixture(scope="module")
def kernel():
    return build_kernel(_KERNEL, "norm")


def _tiling(kernel):
    import ctypes
    buf = (ctypes.c_uint8 * 4096)()
    fn = kernel._lib.make_tiling
    fn.restype = ctypes.c_int
    assert fn(buf, 4096) == 0
    return bytes(buf)


def _run(kernel, mode):
    rng = np.random.default_rng(11)
    x, gx, dy = (rng.uniform(-2, 2, (2, 4, 16)).astype(np.float32) for _ in range(3))
    gb = rng.uniform(-1, 1, 32).astype(np.float32)
    out = np.zeros(304, np.float32)
    kernel.run([x, gx, dy, gb, out, _tiling(kernel), mode], block_dim=1, soc="ascend910b2")
    f = lambda a: a.astype(np.float64)  # noqa: E731
    return f(x), f(gx), f(dy), f(gb[:16]), f(gb[16:]), out


def test_rmsnorm_with_the_stack_buffer(kernel):
    x, _, _, g, _, out = _run(kernel, 0)
    want = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 0.5) * g
    np.testing.assert_allclose(out[:128].reshape(2, 4, 16), want, rtol=1e-6, atol=1e-7)


def test_deepnorm_outputs_mean_and_variance(kernel):
    x, gx, _, g, b, out = _run(kernel, 1)
    y = -2.5 * x + gx
    m, v = y.mean(axis=-1), y.var(axis=-1)
    np.testing.assert_allclose(out[:128].reshape(2, 4, 16), (y - m[..., None]) / np.sqrt(v[..., None] + 0.25) * g + b,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[128:136], m.reshape(-1), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out[136:144], v.reshape(-1), rtol=1e-6)


def test_layernorm_forward_and_backward(kernel):
    x, _, dy, g, b, out = _run(kernel, 2)
    eps, H = 1e-4, 16
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    rs = 1 / np.sqrt(v + eps)
    np.testing.assert_allclose(out[:128].reshape(2, 4, 16), (x - m) * rs * g + b, rtol=1e-5, atol=1e-5)
    pxl = dy * g
    pd_var = (-0.5 * pxl * (x - m) * rs ** 3).sum(axis=-1, keepdims=True)
    pd_mean = (-pxl * rs).sum(axis=-1, keepdims=True) + pd_var / H * (-2 * (x - m)).sum(axis=-1, keepdims=True)
    pd_x = pxl * rs + pd_var * 2 / H * (x - m) + pd_mean / H
    np.testing.assert_allclose(out[144:272].reshape(2, 4, 16), pd_x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[272:288], (dy * (x - m) * rs).sum(axis=(0, 1)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[288:304], dy.sum(axis=(0, 1)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,msg", [
    (100, r"InitBuffer\(TBuf VECCALC, num=1, len=32\) needs 32 B of UB but 188160 B are already taken.*line 30: VECCALC 1 x 184768 B"),
    (101, r"RmsNorm: the tiling's shape \[B, S, H\] = \[0, 0, 0\]"),
    (102, r"RmsNorm: dst and gamma overlap"),
])
def test_refusals(kernel, mode, msg):
    with pytest.raises(EmulationError, match=msg):
        _run(kernel, mode)
