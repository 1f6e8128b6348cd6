"""Targets: `llvm` (real CPU), `sim[:soc]` (default: numerics via LLVM + the Ascend cost model),
`ascend[:soc]` (Ascend C emission, executed on the host emulation), `npuir[:soc]` (AscendNPU IR
modules for the vendor's BiShengIR compiler; 910B parts only, the ones that compiler targets)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from fusion.core.errors import TargetError
from fusion.core.soc import SocSpec, get_soc
from schedules.cpu_tile import cpu_soc

KINDS = ("llvm", "sim", "ascend", "npuir")
NPUIR_SOCS = ("ascend910b2", "ascend910b3")


@dataclass(frozen=True)
class Target:
    kind: str      # llvm | sim | ascend | npuir
    soc: SocSpec   # the SoC whose UB budget the plans obey (llvm: this CPU, schedules/cpu_tile)

    @property
    def name(self) -> str:
        return self.kind if self.kind == "llvm" else f"{self.kind}:{self.soc.name}"


def pw_engines(target: Target, dtype: str) -> tuple[str, ...]:
    """Units the PW GEMM may run on: the CPU has one; the Ascend C cube kernels are fp16 only; the
    AscendNPU IR emitter writes the vector-PW variant only."""
    if target.kind in ("llvm", "npuir") or (target.kind == "ascend" and dtype != "float16"):
        return ("vector",)
    return ("vector", "cube")


def per_channel_acts(target: Target) -> bool:
    """Whether the target's fused kernels carry per-channel activation operands (PRelu slopes):
    the TVM build (llvm, sim) and the Ascend C kernels (slope vectors beside the biases) do; the
    AscendNPU IR emitter takes one constant per activation, so there such a block stays unfused,
    with its reason."""
    return target.kind in ("llvm", "sim", "ascend")


def vector_only_reason(target: Target) -> str:
    """Why pw_engines gives the vector unit only (for the compile report and the -v log)."""
    if target.kind == "npuir":
        return "the AscendNPU IR emitter writes vector PW only"
    if target.kind == "llvm":
        return "the CPU has no cube"
    return "the Ascend C cube kernels are float16 only"


def parse_target(text: str | Target | None) -> Target:
    if isinstance(text, Target):
        return text
    text = (text or "sim").strip().lower()
    kind, _, soc = text.partition(":")
    if kind not in KINDS:
        raise TargetError(f"unknown target '{text}'; use llvm, sim[:SOC], ascend[:SOC] or npuir[:SOC]")
    if kind == "llvm" and soc:
        raise TargetError("target 'llvm' takes no SoC")
    if kind == "llvm":
        return Target(kind, cpu_soc(get_soc(None)))
    spec = get_soc(soc or None)
    if kind == "npuir" and spec.name not in NPUIR_SOCS:
        raise TargetError(f"target 'npuir' supports {', '.join(NPUIR_SOCS)} (the vendor compiler has no "
                          f"{spec.name} target)")
    return Target(kind, spec)


@functools.cache
def llvm_target() -> dict:
    """The LLVM target for this CPU: AVX-512 or AVX2 code when the CPU has it (plain 'llvm' is SSE
    only: 2–3× slower kernels on this project's blocks). Detected at run time, never hard-coded."""
    flags = _cpu_flags()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return {"kind": "llvm", "mcpu": "x86-64-v4"}
    if {"avx2", "fma"} <= flags:
        return {"kind": "llvm", "mcpu": "haswell"}
    return {"kind": "llvm"}


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()
