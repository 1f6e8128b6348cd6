"""The random inputs a check feeds both sides (the compiled model and its reference)."""

from __future__ import annotations

import numpy as np

def random_inputs(compiled, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, (shape, dtype) in compiled.program.inputs.items():
        x = rng.standard_normal(shape).astype(np.float32)
        feeds[name] = x.astype(dtype).astype(np.float32)  # identical values for both sides
    return feeds

