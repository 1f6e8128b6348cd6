"""megafuse: fuse depthwise-separable ONNX chains into NC1HWC0 mega-kernels."""
from fusion.driver import compile_model

__version__ = "0.1.0"


def compile(model, target="sim", input_shapes=None, dtype="float32", **options):  # noqa: A001
    """Compile an ONNX model (path, bytes or ModelProto); see fusion.driver.compile_model."""

    return compile_model(model, target=target, input_shapes=input_shapes, dtype=dtype, **options)
