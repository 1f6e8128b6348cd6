"""Wall-clock measurement on this CPU, following the project's measurement protocol: warm-ups, then samples;
p50, p95, CV (std/mean; > 0.15 is flagged as noisy). Several candidates are measured interleaved
(A, B, C, A, B, C, …) so a noisy neighbour hits all of them alike."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

# TVM's pool workers spin after every parallel call (TVM_THREAD_POOL_SPIN_COUNT, 300,000 iterations
# by default, read once per process). Interleaved with ONNX Runtime they keep a core busy while ORT
# runs -- measured on this project's 2-core VM: ORT MobileNetV2 at 2 threads 7.8 ms in a process
# whose TVM pool spins, 4.4 ms with the spin off, 4.5 ms alone. ORT's workers are set not to spin
# either (bench.bench_llvm), so neither side steals the other's cores.
NO_SPIN_ENV = {"TVM_THREAD_POOL_SPIN_COUNT": "0"}


def no_spin() -> None:
    """Turn TVM's worker spin off for this process (before its first parallel TVM call; a value
    the user set wins)."""
    for k, v in NO_SPIN_ENV.items():
        os.environ.setdefault(k, v)


CV_LIMIT = 0.15


@dataclass(frozen=True)
class Timing:
    samples_us: tuple[float, ...]

    @property
    def p50_us(self) -> float:
        return float(np.median(self.samples_us))

    @property
    def p95_us(self) -> float:
        return float(np.percentile(self.samples_us, 95))

    @property
    def min_us(self) -> float:
        return float(np.min(self.samples_us))

    @property
    def mean_us(self) -> float:
        return float(np.mean(self.samples_us))

    @property
    def cv(self) -> float:
        return float(np.std(self.samples_us) / np.mean(self.samples_us))

    @property
    def noisy(self) -> bool:
        return self.cv > CV_LIMIT

    def as_dict(self) -> dict:
        return {"avg_us": self.mean_us, "p50_us": self.p50_us, "p95_us": self.p95_us,
                "min_us": self.min_us, "cv": self.cv, "noisy": self.noisy, "samples": len(self.samples_us)}


def interleaved(candidates: dict[str, Callable[[], object]], warmup: int = 3, samples: int = 50) -> dict[str, Timing]:
    for fn in candidates.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {k: [] for k in candidates}
    for _ in range(samples):
        for name, fn in candidates.items():
            t0 = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t0) * 1e6)
    return {k: Timing(tuple(v)) for k, v in times.items()}


def tvm_threads() -> int:
    import tvm
    return int(tvm.runtime.num_threads()) if hasattr(tvm.runtime, "num_threads") else int(
        os.environ.get("TVM_NUM_THREADS", "1"))
