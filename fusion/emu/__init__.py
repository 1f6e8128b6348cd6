"""Host emulation of the Ascend C kernel API: build generated kernels with g++ and run them on
NumPy buffers with the hardware's rules enforced (see README.md in this directory)."""

from fusion.emu.harness import (
    CXX_FLAGS,
    INCLUDE_DIR,
    KERNEL_TYPES,
    CoreInfo,
    EmuKernel,
    EmulationBuildError,
    EmulationError,
    EmuResult,
    build_kernel,
    cache_dir,
)

__all__ = [
    "CXX_FLAGS",
    "INCLUDE_DIR",
    "KERNEL_TYPES",
    "CoreInfo",
    "EmuKernel",
    "EmuResult",
    "EmulationBuildError",
    "EmulationError",
    "build_kernel",
    "cache_dir",
]
