"""megafuse: fuse depthwise-separable ONNX chains into NC1HWC0 mega-kernels."""
from fusion.core.version import __version__  # noqa: F401
from fusion.driver.compiler import compile_model


def compile(model, target="sim", input_shapes=None, dtype="float32", **options):  # noqa: A001
    """Compile an ONNX model (path, bytes or ModelProto); see fusion.driver.compiler.compile_model."""

    return compile_model(model, target=target, input_shapes=input_shapes, dtype=dtype, **options)
