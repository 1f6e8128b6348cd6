"""Quantized (QDQ) versions of the reference models, written by ONNX Runtime's own quantizer.

`quantize_static(..., quant_format=QDQ)` on the fp32 builds (BN folded first, as exporters do
before quantizing), calibrated on seeded random inputs, so the int8 models are exactly what a
user of ORT's tooling brings. ORT 1.31 writes (checked by tests/verify/test_quant.py):
per-tensor activation QuantizeLinear/DequantizeLinear pairs (uint8 by default, int8 with
activation_type=QInt8), weights as int8 constants with a DequantizeLinear (per-tensor, or
per-channel on axis 0 with per_channel=True), Conv bias as int32 with scale x_scale*w_scale and
zero point 0, Relu/Clip removed when the output quantization range already clamps them, and QDQ
pairs around Add and the other ops it quantizes (GlobalAveragePool, Flatten, Gemm).
"""

from __future__ import annotations

import os
import tempfile
from typing import Callable

import numpy as np
import onnx

from .dwsep import dwsep_block
from .mobilenet import mobilenet_v1, mobilenet_v2


class _Calibration:
    """Seeded standard-normal batches for one input (ORT's CalibrationDataReader protocol)."""

    def __init__(self, name: str, shape: list[int], batches: int, seed: int):
        rng = np.random.default_rng(seed)
        self._it = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(batches)])

    def get_next(self):
        return next(self._it, None)


def quantize_qdq(model: onnx.ModelProto, per_channel: bool = False, activation_type: str = "uint8",
                 calib_batches: int = 4, seed: int = 0) -> onnx.ModelProto:
    """The fp32 `model` quantized by onnxruntime.quantization.quantize_static in QDQ format."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    if activation_type not in ("uint8", "int8"):
        raise ValueError(f"activation_type must be uint8 or int8, got {activation_type!r}")
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "fp32.onnx"), os.path.join(tmp, "int8.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, _Calibration(inp.name, shape, calib_batches, seed),
                        quant_format=QuantFormat.QDQ, per_channel=per_channel,
                        activation_type=QuantType.QUInt8 if activation_type == "uint8" else QuantType.QInt8,
                        weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax)
        out = onnx.load(dst)
    out.graph.name = model.graph.name + "_qdq"
    return out


def _quantized(builder: Callable[..., onnx.ModelProto]) -> Callable[..., onnx.ModelProto]:
    def build(per_channel: bool = False, activation_type: str = "uint8", seed: int = 0,
              **kw) -> onnx.ModelProto:
        kw.setdefault("fold_bn", True)
        return quantize_qdq(builder(seed=seed, **kw), per_channel, activation_type, seed=seed)

    build.__doc__ = f"{builder.__name__} quantized to QDQ int8 by ORT (quantize_static)."
    return build


mobilenet_v1_int8 = _quantized(mobilenet_v1)
mobilenet_v2_int8 = _quantized(mobilenet_v2)
dwsep_int8 = _quantized(dwsep_block)

QUANT_REGISTRY: dict[str, Callable[..., onnx.ModelProto]] = {
    "mobilenet_v1_int8": mobilenet_v1_int8,
    "mobilenet_v2_int8": mobilenet_v2_int8,
    "dwsep_int8": dwsep_int8,
}
