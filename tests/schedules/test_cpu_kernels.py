"""The scheduled CPU kernels of schedules/cpu_conv.py against a NumPy reference, on odd shapes:
dense and depthwise convs (strides 1–3, asymmetric pads, 5×5), rows that are no multiple of the
vector, channel counts that are no multiple of the register tile."""

import numpy as np
import pytest
import tvm
from tvm import s_tir, te

from schedules.targets import llvm_target
from schedules.cpu_conv import conv_compute, register_tile, schedule_conv


def _reference(x, w, b, stride, pads, depthwise):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh, ow = (h + pt + pb - kh) // stride + 1, (wd + pl + pr - kw) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for a in range(kh):
        for e in range(kw):
            patch = xp[:, :, a:a + stride * (oh - 1) + 1:stride, e:e + stride * (ow - 1) + 1:stride]
            y += patch * w[:, 0, a, e][None, :, None, None] if depthwise else \
                np.einsum("nchw,oc->nohw", patch, w[:, :, a, e])
    return y + b[None, :, None, None]


@pytest.mark.parametrize("c,o,h,k,stride,pads,dw", [
    (3, 12, 23, 3, 2, (1, 1, 1, 1), False),     # stem-like, odd image
    (20, 36, 9, 1, 1, (0, 0, 0, 0), False),      # 1x1, 9-wide rows
    (5, 7, 16, 5, 1, (2, 1, 0, 2), False),       # 5x5, asymmetric pads, prime Cout
    (24, 24, 19, 3, 2, (1, 1, 1, 1), True),      # depthwise stride 2, odd image
    (8, 8, 17, 3, 3, (0, 1, 2, 0), True),        # depthwise stride 3, asymmetric pads
])
def test_conv_matches_numpy(c, o, h, k, stride, pads, dw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, c, h, h)).astype(np.float32)
    w = rng.standard_normal((o, 1 if dw else c, k, k)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    args, wp, oshape = conv_compute(x.shape, w, b, (stride, stride), pads, "float32", dw)
    sch = s_tir.Schedule(te.create_prim_func(args))
    schedule_conv(sch, dw)
    f = tvm.compile(sch.mod, target=llvm_target())["main"]
    dev = tvm.cpu()
    out = tvm.runtime.empty(oshape, "float32", dev)
    f(tvm.runtime.tensor(x, dev), tvm.runtime.tensor(wp, dev), tvm.runtime.tensor(b, dev), out)
    ref = _reference(x, w, b, stride, pads, dw)
    assert np.abs(out.numpy() - ref).max() <= 1e-4 * np.abs(ref).max()


def test_register_tile_divides_and_fits():
    for o in (7, 16, 24, 96, 1000):
        for rv in (1, 2, 4, 7):
            ro, rj = register_tile(o, rv)
            assert o % ro == 0 and rv % rj == 0 and ro * rj <= 24
