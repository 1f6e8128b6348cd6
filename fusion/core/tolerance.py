"""The numerics check's tolerance, relative to the output's range: one table for `check`, the
tuner's measured check and the generated host programs' self-checks."""

TOLERANCE = {"float32": 1e-4, "float16": 2e-2}
