"""Executable model: an ordered list of kernel steps over named tensors (TVM runtime tensors)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import tvm

from fusion.core.errors import ShapeError


@dataclass
class KernelCall:
    name: str
    kind: str                 # fused | op
    func: object              # compiled TVM function (ex["main"])
    params: list              # tensor name (str) or bound constant (tvm tensor)
    out: str
    out_shape: tuple[int, ...]
    out_dtype: str
    executable: object = None  # for time_evaluator


@dataclass
class ModelExecutable:
    inputs: dict[str, tuple[tuple[int, ...], str]]   # name → (shape, dtype)
    outputs: list[str]
    steps: list[KernelCall] = field(default_factory=list)
    constants: dict[str, np.ndarray] = field(default_factory=dict)   # graph outputs that are constants
    _env: dict | None = field(default=None, init=False, repr=False)
    _calls: list = field(default_factory=list, init=False, repr=False)

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        env = self.execute(feeds)
        return {name: env[name].numpy() for name in self.outputs}

    def step_args(self, env: dict, st: KernelCall) -> list:
        return [env[p] if isinstance(p, str) else p for p in st.params] + [env[st.out]]

    def peak_bytes(self) -> int:
        """Peak of live activation bytes plus bound constants over the step sequence."""
        last_use = {}
        for i, st in enumerate(self.steps):
            for p in st.params:
                if isinstance(p, str):
                    last_use[p] = i
        for o in self.outputs:
            last_use[o] = len(self.steps)
        consts = sum(p.numpy().nbytes for st in self.steps for p in st.params if not isinstance(p, str))
        live = {name: int(np.prod(shape)) * np.dtype(dt).itemsize for name, (shape, dt) in self.inputs.items()}
        peak = sum(live.values())
        for i, st in enumerate(self.steps):
            live[st.out] = int(np.prod(st.out_shape)) * np.dtype(st.out_dtype).itemsize
            peak = max(peak, sum(live.values()))
            live = {k: v for k, v in live.items() if last_use.get(k, -1) > i}
        return peak + consts

    def _buffers(self) -> dict:
        """Every input and step output, allocated once on the first run and reused by the next
        ones (a run allocates nothing); the argument lists are bound once too."""
        if self._env is None:
            dev = tvm.cpu(0)
            env = {name: tvm.runtime.empty(tuple(shape), dtype, dev) for name, (shape, dtype) in self.inputs.items()}
            env.update({name: tvm.runtime.tensor(np.ascontiguousarray(a), dev) for name, a in self.constants.items()})
            for st in self.steps:
                env[st.out] = tvm.runtime.empty(st.out_shape, st.out_dtype, dev)
            self._calls = [(st.func, self.step_args(env, st)) for st in self.steps]
            self._env = env
        return self._env

    def execute(self, feeds: dict[str, np.ndarray]) -> dict:
        """Run every step; returns the environment of all tensors (runtime tensors, owned by the
        program: the next run overwrites them)."""
        env = self._buffers()
        for name, (shape, dtype) in self.inputs.items():
            if name not in feeds:
                raise ShapeError(f"missing input '{name}' (expected shape {list(shape)})")
            arr = np.ascontiguousarray(np.asarray(feeds[name]).astype(dtype, copy=False))
            if arr.shape != tuple(shape):
                raise ShapeError(f"input '{name}' has shape {list(arr.shape)}, compiled for {list(shape)}")
            env[name].copyfrom(arr)
        for func, args in self._calls:
            func(*args)
        return env
