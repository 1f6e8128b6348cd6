"""megafuse: fuse depthwise-separable ONNX chains into NC1HWC0 mega-kernels.

Every module of the compiler imports this package first, so it loads nothing but the version:
`fusion.compile` imports the driver on its first call (an eager import would run the whole
compiler's import graph under whichever low-level module was imported first)."""
from fusion.core.version import __version__  # noqa: F401


def compile(model, target="sim", input_shapes=None, dtype="float32", **options):  # noqa: A001
    """Compile an ONNX model (path, bytes or ModelProto); see fusion.driver.compiler.compile_model."""
    from fusion.driver.compiler import compile_model  # deferred: see the module docstring

    return compile_model(model, target=target, input_shapes=input_shapes, dtype=dtype, **options)
