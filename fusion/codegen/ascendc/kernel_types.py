"""What an emitted kernel is: its GM arguments, its launches, its sources and tiling values."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from schedules.plan import KernelPlan


@dataclass(frozen=True)
class ArgSpec:
    name: str
    role: str              # input | weight | output | workspace | tiling
    dtype: str             # float16 | float32 | uint8
    fmt: str               # NC1HWC0 | FRACTAL_Z | C1C0 | DW_C1HWC0 | ND
    shape: tuple[int, ...]
    desc: str

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * {"float16": 2, "float32": 4, "uint8": 1}[self.dtype]


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a block (every variant is one launch)."""
    symbol: str
    block_dim: int         # cores (AIV / AI cores), or AICs of a MIX launch
    core: str              # AIV | AICORE | MIX_AIC_1_2
    args: tuple[str, ...]  # names of the block's ArgSpecs, in parameter order
    what: str
    kernel_type: str | None = None   # how the host launches it on 2201 (emulator run(kernel_type=...))


@dataclass(frozen=True)
class EmittedKernel:
    block: str
    symbol: str
    op_type: str
    plan: KernelPlan
    variant: str                           # vector-pw | cube-pw | cube-pw-mix (see VARIANTS)
    source: str                            # kernel/<symbol>.cpp
    tiling_header: str                     # kernel/<symbol>_tiling.h
    tiling_struct: str
    args: tuple[ArgSpec, ...]              # the kernel's GM parameters in order
    tiling_fields: tuple[tuple[str, int], ...]
    launches: tuple[Launch, ...]
    workspace_bytes: int = 0               # user workspace the kernel uses (the 910B hand-off slots)
    system_workspace_bytes: int = 0        # reserved in front of it on the device (GetUserWorkspace)
    notes: tuple[str, ...] = field(default_factory=tuple)
    workspace_zeroed_bytes: int = 0        # leading workspace bytes the host zeroes (SyncAll flags)
    chain_body: str = ""                   # two-phase: helpers + classes, what a chain kernel composes

    @property
    def source_name(self) -> str:
        return f"{self.symbol}.cpp"

    @property
    def tiling_header_name(self) -> str:
        return f"{self.symbol}_tiling.h"

    @property
    def block_dim(self) -> int:
        return self.launches[0].block_dim

    @property
    def device_workspace_bytes(self) -> int:
        """What the host allocates for the workspace argument on a device."""
        return self.workspace_bytes + self.system_workspace_bytes if self.workspace_bytes else 0

    def tiling_bytes(self) -> bytes:
        return struct.pack(f"<{len(self.tiling_fields)}I", *(v for _, v in self.tiling_fields))

    def arg(self, name: str) -> ArgSpec:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def signature(self) -> str:
        params = ", ".join(f"GM_ADDR {a.name}" for a in self.args)
        return f'extern "C" __global__ __aicore__ void {self.symbol}({params})'
