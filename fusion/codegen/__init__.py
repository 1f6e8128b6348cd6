"""Code generation: Ascend C (ascendc/) and AscendNPU IR (npuir/) from the same plans and programs."""
