"""One fuzzer case: compile a model on a target and compare it with ONNX Runtime (fusion.verify.check).

Shared by tests/verify/test_fuzz_chains.py (a bounded slice) and benchmarks/fuzz_chains.py (the long
run); a case's outcome is a record, so the long run counts mismatches instead of stopping."""

from __future__ import annotations

import time
from dataclasses import dataclass
from fusion.verify.check import check_model
from fusion.driver.compiler import compile_model
from fusion.core.errors import MegafuseError


@dataclass(frozen=True)
class FuzzOutcome:
    target: str
    passed: bool
    max_rel: float
    tolerance: float
    fused_blocks: int
    seconds: float
    error: str = ""     # a MegafuseError (a refusal to compile is a finding too: it is recorded)
    # the reference barely depends on the input (check's INCONCLUSIVE): not passed, yet no mismatch
    inconclusive: bool = False

    @property
    def mismatch(self) -> bool:
        """Over the tolerance: a wrong result (an INCONCLUSIVE case within tolerance is not one)."""
        return not self.passed and not self.error and not self.inconclusive

    def to_json(self) -> dict:
        return dict(self.__dict__)


def check_on(model, target: str, seed: int = 0) -> FuzzOutcome:

    t0 = time.perf_counter()
    try:
        cm = compile_model(model, target=target)
        r = check_model(model, cm, seed=seed)
    except MegafuseError as e:
        return FuzzOutcome(target, False, float("nan"), float("nan"), 0, time.perf_counter() - t0, str(e))
    return FuzzOutcome(target, r.passed, r.max_rel, r.tolerance, len(cm.fused_blocks), time.perf_counter() - t0,
                       inconclusive=r.within_tolerance and not r.conclusive)
