"""Numerics check: the compiled model against ONNX Runtime on the same random inputs.

Errors: max_abs = max |y − ref|; max_rel = max_abs / max |ref| (relative to the output's range:
elementwise relative error is meaningless where ReLU outputs are ~0). fp16 runs get inputs
rounded to fp16 first so both sides see identical values. The reference is always ONNX Runtime
on the model widened to float32 (fusion.reference), also for models stored in float16.

float16 tolerance: max(2e-2, 2 · u · n · κ) with u = 2^-11 (fp16 unit roundoff), n the model's
node count (each node's output is rounded to fp16 at most once) and κ the conditioning (max of
the |W|·|x| chain / max |y|, fusion.reference.conditioning): the forward error bound of n
roundings carried through the chain, doubled. Well-conditioned models keep 2e-2; a deep chain
with large, cancelling weights gets the bound its fp16 rounding alone needs (with --no-fuse as
much as fused) instead of a false failure. The result states κ and the tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx

TOLERANCE = {"float32": 1e-4, "float16": 2e-2}
FP16_UNIT_ROUNDOFF = 2.0 ** -11


def fp16_tolerance(nodes: int, cond: float) -> float:
    return max(TOLERANCE["float16"], 2 * FP16_UNIT_ROUNDOFF * max(1, nodes) * cond)


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
    # fp16: the conditioning the tolerance was derived from (keyword-only: subclasses add fields)
    conditioning: float = field(default=1.0, kw_only=True)

    @property
    def max_rel(self) -> float:
        return max(o.max_rel for o in self.outputs)

    @property
    def max_abs(self) -> float:
        return max(o.max_abs for o in self.outputs)

    @property
    def passed(self) -> bool:
        return self.max_rel <= self.tolerance

    def to_json(self) -> dict:
        return {"passed": self.passed, "tolerance": self.tolerance, "seed": self.seed,
                "conditioning": self.conditioning, "reference": "onnxruntime float32",
                "max_abs": self.max_abs, "max_rel": self.max_rel,
                "outputs": [o.__dict__ for o in self.outputs]}


def random_inputs(compiled, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, (shape, dtype) in compiled.program.inputs.items():
        x = rng.standard_normal(shape).astype(np.float32)
        feeds[name] = x.astype(dtype).astype(np.float32)  # identical values for both sides
    return feeds


def ort_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """ONNX Runtime on the model widened to float32 (fusion.reference)."""
    from fusion.reference import reference

    return reference(model, feeds)


def compare(got: dict[str, np.ndarray], ref: dict[str, np.ndarray], tolerance: float, seed: int,
            conditioning: float = 1.0) -> CheckResult:
    rows = []
    for name, r in ref.items():
        y = np.asarray(got[name], np.float64)
        r = np.asarray(r, np.float64)
        err = float(np.abs(y - r).max()) if r.size else 0.0
        scale = float(np.abs(r).max()) if r.size else 0.0
        rows.append(OutputError(name, err, err / scale if scale > 0 else err))
    return CheckResult(tuple(rows), tolerance, seed, conditioning=conditioning)


def check_model(model: onnx.ModelProto, compiled, seed: int = 0, tolerance: float | None = None) -> CheckResult:
    from fusion.reference import conditioning

    feeds = random_inputs(compiled, seed)
    ref = ort_reference(model, feeds)
    got = compiled.run(feeds)
    cond = 1.0
    if tolerance is None:
        tolerance = TOLERANCE[compiled.dtype]
        if compiled.dtype == "float16":
            cond = conditioning(model, feeds, ref)
            tolerance = fp16_tolerance(len(model.graph.node), cond)
    return compare(got, ref, tolerance, seed, cond)
