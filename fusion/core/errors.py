"""Error types. Every user-facing failure is a MegafuseError with a one-line message;
the CLI prints it and exits 2 instead of showing a traceback."""


class MegafuseError(Exception):
    """Base class: a clear, one-line, user-facing error."""


class ModelLoadError(MegafuseError):
    """The ONNX file cannot be read or is malformed."""


class UnsupportedModelError(MegafuseError):
    """The model uses an operator or attribute megafuse does not support."""


class ShapeError(MegafuseError):
    """A shape is missing (dynamic input without --input-shape) or inconsistent."""


class UBOverflowError(MegafuseError):
    """A tile's buffers do not fit the chosen SoC's Unified Buffer."""


class TargetError(MegafuseError):
    """Unknown target or SoC name."""


class TuningDatabaseError(MegafuseError):
    """The tuning database cannot be used."""
