"""Ascend C code generation for fused DW→PW blocks, from the block's KernelPlan.

    emit_kernel(plan, name)         -> EmittedKernel (kernel + tiling header text, args, tiling)
    write_ascend_package(cm, out)   -> the per-block kernel/host trees and op_pkg/ (megafuse compile -o)

The generated kernels build with bisheng on a CANN machine and, here, with g++ against the host
emulation in fusion/emu (fusion/verify/ascend_check.py runs them against ONNX Runtime)."""

from fusion.codegen.ascendc.emit_kernel import ArgSpec, EmittedKernel, emit_kernel, kernel_names
from fusion.codegen.ascendc.package import write_ascend_package

__all__ = ["ArgSpec", "EmittedKernel", "emit_kernel", "kernel_names", "write_ascend_package"]
