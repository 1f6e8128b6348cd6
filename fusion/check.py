"""Numerics check: the compiled model against ONNX Runtime on the same random inputs.

Errors: max_abs = max |y − ref|; max_rel = max_abs / max |ref| (relative to the output's range:
elementwise relative error is meaningless where ReLU outputs are ~0). fp16 runs get inputs
rounded to fp16 first so both sides see identical values; the reference is the fp32 model.
A result passes only when it is within tolerance AND the reference's output depends on its
input (`sensitivity`, fusion/sensitivity.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

TOLERANCE = {"float32": 1e-4, "float16": 2e-2}


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
    sensitivity: float | None = None   # fusion.sensitivity: how much the reference moves with the input

    @property
    def conclusive(self) -> bool:
        from fusion.sensitivity import conclusive
        return conclusive(self.sensitivity, self.tolerance)

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
        could not have failed is never a pass (fusion/sensitivity.py)."""
        return self.within_tolerance and self.conclusive

    def to_json(self) -> dict:
        return {"passed": self.passed, "within_tolerance": self.within_tolerance,
                "tolerance": self.tolerance, "seed": self.seed,
                "max_abs": self.max_abs, "max_rel": self.max_rel,
                "sensitivity": self.sensitivity, "conclusive": self.conclusive,
                "outputs": [o.__dict__ for o in self.outputs]}


def random_inputs(compiled, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, (shape, dtype) in compiled.program.inputs.items():
        x = rng.standard_normal(shape).astype(np.float32)
        feeds[name] = x.astype(dtype).astype(np.float32)  # identical values for both sides
    return feeds


def ort_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    typed = {k: v.astype(onnx.helper.tensor_dtype_to_np_dtype(want[k])) for k, v in feeds.items()}
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, typed)))


def compare(got: dict[str, np.ndarray], ref: dict[str, np.ndarray], tolerance: float, seed: int,
            sensitivity: float | None = None) -> CheckResult:
    rows = []
    for name, r in ref.items():
        y = np.asarray(got[name], np.float64)
        r = np.asarray(r, np.float64)
        err = float(np.abs(y - r).max()) if r.size else 0.0
        scale = float(np.abs(r).max()) if r.size else 0.0
        rows.append(OutputError(name, err, err / scale if scale > 0 else err))
    return CheckResult(tuple(rows), tolerance, seed, sensitivity)


def check_model(model: onnx.ModelProto, compiled, seed: int = 0, tolerance: float | None = None) -> CheckResult:
    feeds = random_inputs(compiled, seed)
    ref = ort_reference(model, feeds)
    got = compiled.run(feeds)
    from fusion.sensitivity import input_sensitivity
    sens = input_sensitivity(lambda f: ort_reference(model, f), compiled, seed, ref)
    return compare(got, ref, TOLERANCE[compiled.dtype] if tolerance is None else tolerance, seed, sens)
