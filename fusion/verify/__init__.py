"""Verification: numerics against ONNX Runtime on the CPU kernels and on the emulated Ascend C (blocks and chains)."""
