"""Checks that run before any work: the model file, the ONNX versions, the sizes, the weights.

- the file: a regular file (not a FIFO, device or directory; opened non-blocking so a FIFO
  swapped in after the check cannot hang us), at most `max_model_bytes` (CLI --max-model-bytes);
- the protobuf: IR and default-domain opset versions in the supported ranges, then the ONNX
  checker; the error states the ranges;
- the imported graph: every dimension >= 1, every tensor within int32 elements (TVM indexes
  with int32), and the bytes of all tensors within the memory budget (half the machine's RAM)
  before anything is allocated — the error names the largest tensor and the bytes;
- the weights: NaN or Inf is an error, or one warning line with --allow-nonfinite.

The CLI sets the limits for one run with `limits(...)`; library callers get the defaults.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
import sys
from dataclasses import dataclass, replace

import numpy as np

from fusion.core.errors import ModelLoadError, ShapeError
from fusion.core.sanitize import display

DEFAULT_MAX_MODEL_BYTES = 1 << 30   # 1 GiB: MobileNet-class models are a few MB
INT32_MAX = 2**31 - 1
# The default-domain opsets and IR versions this build accepts: from the oldest opset ONNX
# Runtime (the `check` reference) loads, to the newest the installed onnx package defines.
MIN_OPSET, MIN_IR = 7, 3


def max_opset() -> int:
    import onnx

    return onnx.defs.onnx_opset_version()


def max_ir() -> int:
    import onnx

    return onnx.IR_VERSION


def _memory_budget() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


@dataclass(frozen=True)
class Limits:
    max_model_bytes: int = DEFAULT_MAX_MODEL_BYTES
    allow_nonfinite: bool = False
    memory_bytes: int = 0            # 0: half the machine's RAM


_LIMITS: contextvars.ContextVar[Limits] = contextvars.ContextVar("megafuse_limits", default=Limits())


def current() -> Limits:
    return _LIMITS.get()


@contextlib.contextmanager
def limits(**changes):
    token = _LIMITS.set(replace(_LIMITS.get(), **changes))
    try:
        yield _LIMITS.get()
    finally:
        _LIMITS.reset(token)


# ---- the file ------------------------------------------------------------------------------
def read_model_file(path, label: str) -> bytes:
    """The bytes of a model file, refusing what is not a regular file or is over the size cap."""
    cap = current().max_model_bytes
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ModelLoadError(f"cannot load ONNX model '{label}': file not found") from None
    except IsADirectoryError:
        raise ModelLoadError(f"cannot load ONNX model '{label}': is a directory") from None
    except OSError as e:
        raise ModelLoadError(f"cannot load ONNX model '{label}': {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ModelLoadError(f"cannot load ONNX model '{label}': is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise ModelLoadError(f"cannot load ONNX model '{label}': not a regular file ({_kind(st.st_mode)})")
        if st.st_size > cap:
            raise ModelLoadError(f"cannot load ONNX model '{label}': {st.st_size:,} bytes is over the "
                                 f"{cap:,}-byte limit (raise it with --max-model-bytes)")
        chunks, total = [], 0
        while True:   # bounded even if the file grows while we read it
            chunk = os.read(fd, min(1 << 24, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise ModelLoadError(f"cannot load ONNX model '{label}': over the {cap:,}-byte limit "
                                     f"(raise it with --max-model-bytes)")
        return b"".join(chunks)
    except OSError as e:
        raise ModelLoadError(f"cannot load ONNX model '{label}': {e.strerror or e}") from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


# ---- the protobuf --------------------------------------------------------------------------
def check_proto(proto, label: str) -> None:
    """Versions first (their error says what is supported), then the ONNX checker."""
    import onnx

    ranges = f"supported: IR {MIN_IR}..{max_ir()}, opset {MIN_OPSET}..{max_opset()}"
    if not MIN_IR <= proto.ir_version <= max_ir():
        raise ModelLoadError(f"cannot load ONNX model '{label}': IR version {proto.ir_version} ({ranges})")
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx") and not MIN_OPSET <= imp.version <= max_opset():
            raise ModelLoadError(f"cannot load ONNX model '{label}': opset {imp.version} ({ranges})")
    # Per node, not check_model: the whole-model checker also demands declared shapes, which
    # models with dynamic inputs lack (they take --input-shape instead).
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = proto.ir_version
    ctx.opset_imports = {imp.domain: imp.version for imp in proto.opset_import}
    lex = onnx.checker.C.LexicalScopeContext()
    for node in proto.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue   # custom domains: the importer names the unsupported op
        try:
            onnx.checker.check_node(node, ctx, lex)
        except (onnx.checker.ValidationError, ValueError, TypeError) as e:
            first = " ".join(str(e).split())
            raise ModelLoadError(f"cannot load ONNX model '{label}': the ONNX checker rejects node "
                                 f"'{display(node.name)}' ({display(node.op_type)}): {display(first, 300)}") from None


def check_external_data(proto, base_dir: str, label: str) -> None:
    """Initializers stored outside the model: each a regular file inside the model's directory
    (symlinks resolved: no /dev/zero, FIFO or file elsewhere behind a link), within the size cap."""
    from onnx import TensorProto

    root = os.path.realpath(base_dir)
    cap, total = current().max_model_bytes, 0
    for t in proto.graph.initializer:
        if t.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in t.external_data}
        where = info.get("location", "")
        what = f"cannot load ONNX model '{label}': initializer '{display(t.name)}' external data '{display(where)}'"
        path = os.path.realpath(os.path.join(root, where)) if "\0" not in where else ""
        if not path or not where or os.path.isabs(where) or os.path.commonpath([root, path]) != root:
            raise ModelLoadError(f"{what} is not a file inside the model's directory")
        try:
            st = os.stat(path)
        except OSError as e:
            raise ModelLoadError(f"{what}: {e.strerror or e}") from None
        if not stat.S_ISREG(st.st_mode):
            raise ModelLoadError(f"{what} is not a regular file ({_kind(st.st_mode)})")
        try:
            offset, length = int(info.get("offset", 0)), int(info.get("length", st.st_size))
        except ValueError:
            raise ModelLoadError(f"{what} has a non-integer offset or length") from None
        if offset < 0 or length < 0 or offset + length > st.st_size:
            raise ModelLoadError(f"{what}: offset {offset} + length {length} is beyond its {st.st_size:,} bytes")
        total += length
        if total > cap:
            raise ModelLoadError(f"cannot load ONNX model '{label}': external data over the {cap:,}-byte limit "
                                 f"(raise it with --max-model-bytes)")


def inline_external_data(proto, base_dir: str, label: str):
    """A copy of proto whose external initializers are read in, from the model's own folder
    (checked first by check_external_data): ONNX Runtime, handed the bytes, would otherwise
    resolve them against the current directory."""
    from onnx import TensorProto
    from onnx.external_data_helper import load_external_data_for_tensor

    if not any(t.data_location == TensorProto.EXTERNAL for t in proto.graph.initializer):
        return proto
    check_external_data(proto, base_dir, label)
    m = type(proto)()
    m.CopyFrom(proto)
    for t in m.graph.initializer:
        if t.data_location == TensorProto.EXTERNAL:
            try:
                load_external_data_for_tensor(t, os.path.realpath(base_dir))
            except (OSError, ValueError) as e:
                raise ModelLoadError(f"cannot load ONNX model '{label}': initializer '{display(t.name)}' "
                                     f"external data cannot be read ({e})") from None
            t.data_location = TensorProto.DEFAULT
            del t.external_data[:]
    return m


# ---- the imported graph --------------------------------------------------------------------
def check_graph(g, label: str) -> None:
    lim = current()
    budget = lim.memory_bytes or _memory_budget()
    total, largest = 0, ("", 0)
    for name, t in g.types.items():
        shape = tuple(t.shape)
        if any(int(d) < 1 for d in shape):
            raise ShapeError(f"model '{label}': tensor '{display(name)}' has an empty dimension "
                             f"{list(shape)}")
        if any(int(d) > INT32_MAX for d in shape):
            raise ShapeError(f"model '{label}': tensor '{display(name)}' has a dimension over int32 "
                             f"{list(shape)}")
        elems = int(np.prod(shape, dtype=object)) if shape else 1
        if elems > INT32_MAX:
            raise ShapeError(f"model '{label}': tensor '{display(name)}' {list(shape)} has {elems:,} "
                             f"elements, over the int32 index range of the kernels")
        nbytes = elems * 4   # computed and checked in float32
        total += nbytes
        if nbytes > largest[1]:
            largest = (name, nbytes)
    if total > budget:
        raise ShapeError(f"model '{label}': its tensors need {total:,} bytes (largest '{display(largest[0])}' "
                         f"{largest[1]:,} bytes), over the {budget:,}-byte memory budget of this run")
    for name, arr in g.constants.items():
        a = np.asarray(arr)
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            bad = int(a.size - np.isfinite(a).sum())
            msg = f"model '{label}': weight '{display(name)}' holds {bad:,} NaN/Inf value(s)"
            if not lim.allow_nonfinite:
                raise ModelLoadError(f"{msg} (--allow-nonfinite compiles it anyway)")
            print(f"megafuse: warning: {msg}", file=sys.stderr)
