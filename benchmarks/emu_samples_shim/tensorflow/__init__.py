"""A stand-in for the one TensorFlow name the devkit samples' NumPy scripts use as a dtype.

Several devkit data generators / verifiers import tensorflow only for
`tf.bfloat16.as_numpy_dtype`, the NumPy bfloat16 scalar type; TensorFlow (>= 2.14) takes that
type from the `ml_dtypes` package, so `ml_dtypes.bfloat16` is the same dtype, not an
approximation. benchmarks/emu_samples.py puts this directory on PYTHONPATH of the sample's
scripts only when the real tensorflow cannot be imported. Any other attribute (tf.add,
tf.compat.v1 ...) raises, so a script that really computes with TensorFlow still fails as
"data generator failed" instead of getting a made-up result.
"""

from __future__ import annotations

import ml_dtypes


class _DType:
    def __init__(self, name: str, numpy_type: type) -> None:
        self.name = name
        self.as_numpy_dtype = numpy_type

    def __repr__(self) -> str:
        return f"tf.{self.name} (megafuse stand-in: {self.as_numpy_dtype.__module__}.{self.as_numpy_dtype.__name__})"


bfloat16 = _DType("bfloat16", ml_dtypes.bfloat16)


def __getattr__(name: str):
    raise AttributeError(f"tensorflow.{name}: megafuse's tensorflow stand-in (benchmarks/emu_samples_shim) "
                         "offers only tf.bfloat16.as_numpy_dtype; install tensorflow for this sample")
