"""Numerics check: the compiled model against ONNX Runtime on the same random inputs.

Errors: max_abs = max |y − ref|; max_rel = max_abs / max |ref| (relative to the output's range:
elementwise relative error is meaningless where ReLU outputs are ~0). fp16 runs get inputs
rounded to fp16 first so both sides see identical values. The reference is always ONNX Runtime
on the model widened to float32 (fusion.verify.reference), also for models stored in float16.

float32 tolerance: max(1e-4, 2·s32), s32 = how far modeled float32 rounding moves the reference
(fusion/verify/fp32_bound.py: per node sqrt(n)·u·Σ|terms|, n its reduction length), so a deep network whose
output is a small difference of large terms gets a tolerance its honest rounding allows; the
result states s32 and the longest reduction.

float16 tolerance: max(2e-2, 2·s), s = how far fp16 storage alone moves the reference on these
inputs (ORT with weights and every node output rounded to fp16, fusion.verify.reference.
fp16_storage_shift). Well-conditioned models keep 2e-2; a deep chain with large weights, whose
fp16 rounding alone exceeds 2e-2 (with --no-fuse as much as fused), gets twice its measured
shift instead of a false failure. The result states s and the tolerance.
A result passes only when it is within tolerance AND the reference's output depends on its
input (`sensitivity`, fusion/verify/sensitivity.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import onnx
from fusion.verify.inputs import random_inputs  # noqa: F401  (part of check's API)
from fusion.core.tolerance import TOLERANCE  # noqa: F401  (check's public tolerance table)
from fusion.verify.reference import reference
from fusion.verify.reference import fp16_storage_shift
from fusion.verify.sensitivity import input_sensitivity
from fusion.verify.sensitivity import conclusive

from fusion.verify.fp32_bound import fp32_rounding_shift
from fusion.verify.quant_check import int8_tolerance

# float32 tolerance: max(1e-4, FP32_SHIFT_FACTOR x s32), s32 = how far modeled fp32 rounding moves
# the reference (fusion/verify/fp32_bound.py: sqrt(n) u sum|terms| per node). Source measurement: on
# mobilenet_v2 (96 px), ocr_detector, se_classifier, the MnasNet 1152->320 block and a small
# MobileOne training form, our kernels' max rel error vs ORT on llvm and sim:910b2 was 0.06-0.18 x
# s32 (2.6e-6 vs 3.6e-5 at most): the model is pessimistic, and 2 x s32 covers both sides' errors
FP32_SHIFT_FACTOR = 2.0
# how far an emitted Ascend C kernel may be from the CPU kernel of the same block (relative to the
# output range): fp16 DW taps accumulate in fp16 on the NPU (kh·kw roundings of 2^-11 each)
KERNEL_VS_BLOCK = {"float32": 1e-3, "float16": 5e-3}


def fp32_tolerance(shift: float | None) -> float:
    """The float32 tolerance given modeled fp32 rounding's shift of the output (module doc)."""
    return max(TOLERANCE["float32"], FP32_SHIFT_FACTOR * shift) if shift is not None and math.isfinite(shift) \
        else TOLERANCE["float32"]


def fp16_tolerance(shift: float) -> float:
    """The float16 tolerance given fp16 storage's own shift of the output (see the module doc);
    an infinite shift (fp16 overflows) keeps the base tolerance: such a model fails."""
    return max(TOLERANCE["float16"], 2 * shift) if math.isfinite(shift) else TOLERANCE["float16"]


@dataclass(frozen=True)
class OutputError:
    name: str
    max_abs: float
    max_rel: float


@dataclass(frozen=True)
class CheckResult:
    outputs: tuple[OutputError, ...]
    tolerance: float
    seed: int
    sensitivity: float | None = None   # fusion.verify.sensitivity: how much the reference moves with the input

    @property
    def conclusive(self) -> bool:
        return conclusive(self.sensitivity, self.tolerance)
    # fp16: fp16 storage's own shift of the output, the tolerance's basis (keyword-only:
    # subclasses add positional fields)
    fp16_shift: float | None = field(default=None, kw_only=True)
    # fp32: modeled fp32 rounding's shift of the output and the longest reduction it modeled
    fp32_shift: float | None = field(default=None, kw_only=True)
    fp32_terms: int | None = field(default=None, kw_only=True)
    int8: object = field(default=None, kw_only=True)   # fusion.verify.quant_check.Int8Tolerance of a QDQ model

    @property
    def fp16_overflow(self) -> bool:
        """ONNX Runtime itself, with float16 storage, gives non-finite outputs: the model overflows
        float16 (fusion.verify.reference.fp16_storage_shift), whatever the kernels do."""
        return self.fp16_shift is not None and math.isinf(self.fp16_shift)

    @property
    def max_rel(self) -> float:
        return max(o.max_rel for o in self.outputs)

    @property
    def max_abs(self) -> float:
        return max(o.max_abs for o in self.outputs)

    @property
    def within_tolerance(self) -> bool:
        return self.max_rel <= self.tolerance

    @property
    def passed(self) -> bool:
        """Within tolerance against a reference that depends on its input: a comparison that
        could not have failed is never a pass (fusion/verify/sensitivity.py)."""
        return self.within_tolerance and self.conclusive

    def to_json(self) -> dict:
        return {"passed": self.passed, "within_tolerance": self.within_tolerance,
                "tolerance": self.tolerance, "seed": self.seed,
                "fp16_shift": self.fp16_shift, "fp32_shift": self.fp32_shift, "fp32_terms": self.fp32_terms,
                "reference": "onnxruntime int8 kernels" if self.int8 else "onnxruntime float32",
                "int8_step": self.int8.step if self.int8 else None,
                "int8_float_ops": list(self.int8.float_ops) if self.int8 else None,
                "max_abs": self.max_abs, "max_rel": self.max_rel,
                "sensitivity": self.sensitivity, "conclusive": self.conclusive,
                "outputs": [o.__dict__ for o in self.outputs]}



def ort_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """ONNX Runtime on the model widened to float32 (fusion.verify.reference)."""

    return reference(model, feeds)


def compare(got: dict[str, np.ndarray], ref: dict[str, np.ndarray], tolerance: float, seed: int,
            sensitivity: float | None = None, fp16_shift: float | None = None,
            fp32: tuple[float, int] | None = None) -> CheckResult:
    rows = []
    for name, r in ref.items():
        y = np.asarray(got[name], np.float64)
        r = np.asarray(r, np.float64)
        err = float(np.abs(y - r).max()) if r.size else 0.0
        scale = float(np.abs(r).max()) if r.size else 0.0
        rows.append(OutputError(name, err, err / scale if scale > 0 else err))
    return CheckResult(tuple(rows), tolerance, seed, sensitivity, fp16_shift=fp16_shift,
                       fp32_shift=fp32[0] if fp32 else None, fp32_terms=fp32[1] if fp32 else None)


def check_model(model: onnx.ModelProto, compiled, seed: int = 0, tolerance: float | None = None) -> CheckResult:

    feeds = random_inputs(compiled, seed)
    ref = ort_reference(model, feeds)
    got = compiled.run(feeds)
    sens = input_sensitivity(lambda f: ort_reference(model, f), compiled, seed, ref)
    shift = fp16_storage_shift(model, feeds, ref) if compiled.dtype == "float16" else None
    int8 = int8_tolerance(compiled.graph, ref)
    fp32 = (fp32_rounding_shift(model, feeds, ref, seed) if compiled.dtype == "float32" and int8 is None
            else None)
    if tolerance is None:
        tolerance = (int8.tolerance if int8 is not None else fp16_tolerance(shift) if shift is not None
                     else fp32_tolerance(fp32[0] if fp32 else None))
    result = compare(got, ref, tolerance, seed, sens, shift, fp32)
    return replace(result, int8=int8) if int8 is not None else result
