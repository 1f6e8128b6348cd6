"""The modeled Ascend int8 kernel's arithmetic (schedules/quant_ascend_ref.py) against ONNX Runtime's
int8 kernels on ORT-quantized DW->PW blocks: the fp32 DW and the Fixpipe-order requant are exact;
the 310P half epilogue is within one output quantization step."""

import numpy as np
import pytest

from fusion.frontend.onnx_import import load_graph
from fusion.frontend.onnx_ops_quant import QRANGE
from fusion.verify.reference import run_ort
from models.quantized import dwsep_int8
from passes.quant_fuse import quant_fuse
from schedules.quant_ascend_ref import qdwsep_ascend

CASES = [dict(cin=32, cout=48, h=9, w=13, stride=1, per_channel=False, activation_type="uint8"),
         dict(cin=40, cout=24, h=11, w=7, stride=2, per_channel=True, activation_type="uint8"),
         dict(cin=24, cout=40, h=8, w=10, stride=1, per_channel=True, activation_type="int8", act2="none")]


def _quantize(x, n):
    s, zp, dt = np.float32(n.attr("scale")), int(n.attr("zero_point")), n.attr("dtype")
    lo, hi = QRANGE[dt]
    return np.rint(np.clip(x / s, lo - zp, hi - zp)) + zp


@pytest.mark.parametrize("case", CASES, ids=["u8-tensor", "u8-channel-s2", "i8-channel"])
def test_ascend_int8_arithmetic_vs_ort(case):
    kw = dict(case)
    pc, act = kw.pop("per_channel"), kw.pop("activation_type")
    m = dwsep_int8(per_channel=pc, activation_type=act, seed=3, **kw)
    g, _ = quant_fuse(load_graph(m))
    q, blk, dq = g.nodes
    assert (q.op_type, blk.op_type, dq.op_type) == ("QuantizeLinear", "QDwSep", "DequantizeLinear")
    x = np.random.default_rng(7).standard_normal(g.types["x"].shape).astype(np.float32) * 2
    want = run_ort(m, {"x": x})["y"]
    s, zp = np.float32(dq.attr("scale")), int(dq.attr("zero_point"))
    want_q = np.rint(want / s).astype(np.int64) + zp
    consts = [np.asarray(g.constants[t]) for t in blk.inputs[1:]]
    xq = _quantize(x, q)
    fix = qdwsep_ascend(xq, consts, dict(blk.attrs), "fixpipe")
    np.testing.assert_array_equal(fix, want_q)            # exact: the fp32 DW and ORT's requant order
    vec = qdwsep_ascend(xq, consts, dict(blk.attrs), "vector")
    assert np.abs(vec - want_q).max() <= 1                  # 310P half epilogue: at most one step
