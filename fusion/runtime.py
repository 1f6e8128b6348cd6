"""Executable model: an ordered list of kernel steps over named tensors (TVM runtime tensors)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import tvm

from fusion.errors import ShapeError


@dataclass
class Step:
    name: str
    kind: str                 # fused | op
    func: object              # compiled TVM function (ex["main"])
    params: list              # tensor name (str) or bound constant (tvm tensor)
    out: str
    out_shape: tuple[int, ...]
    out_dtype: str
    executable: object = None  # for time_evaluator


@dataclass
class Program:
    inputs: dict[str, tuple[tuple[int, ...], str]]   # name → (shape, dtype)
    outputs: list[str]
    steps: list[Step] = field(default_factory=list)

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        dev = tvm.cpu(0)
        env = {}
        for name, (shape, dtype) in self.inputs.items():
            if name not in feeds:
                raise ShapeError(f"missing input '{name}' (expected shape {list(shape)})")
            arr = np.ascontiguousarray(np.asarray(feeds[name]).astype(dtype, copy=False))
            if arr.shape != tuple(shape):
                raise ShapeError(f"input '{name}' has shape {list(arr.shape)}, compiled for {list(shape)}")
            env[name] = tvm.runtime.tensor(arr, dev)
        for st in self.steps:
            out = tvm.runtime.empty(st.out_shape, st.out_dtype, dev)
            args = [env[p] if isinstance(p, str) else p for p in st.params]
            st.func(*args, out)
            env[st.out] = out
        return {name: env[name].numpy() for name in self.outputs}
