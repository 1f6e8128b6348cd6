"""The driver: compile_model (passes, tile policy, kernels), block chains and GEMM stages, fallback, artifacts and the runnable model."""
