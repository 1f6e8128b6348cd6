"""Command-line values and paths, bounded and checked before any work.

Numbers: parsed by `int_in` / `float_in` (argparse types: a bad value is argparse's one-line
error). Paths: an output file or directory is checked up front (name lengths, what exists there,
and a probe file created and removed where it will be written), so a sweep of minutes never
fails at its last step on `/proc/self/x` or a read-only folder; an input file must be a regular
file under a size cap (a FIFO would block a read forever). Local worker processes are bounded by
a small multiple of this machine's CPUs.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import stat
import tempfile
from pathlib import Path

from fusion.core.errors import MegafuseError
from fusion.core.sanitize import display

NAME_MAX, PATH_MAX = 255, 4096
WORKERS_PER_CPU = 4               # local worker processes per CPU: beyond it, only memory and switching
MAX_INPUT_FILE_BYTES = 64 << 20   # JSON reports / points files: megabytes at most


def max_workers() -> int:
    return WORKERS_PER_CPU * (os.cpu_count() or 1)


def int_in(lo: int, hi: int, what: str):
    def parse(text: str) -> int:
        try:
            v = int(text, 10)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"expected an integer in {lo}..{hi}, got '{display(text)}'") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer in {lo}..{hi}, got {v}")
        return v
    parse.__name__ = what   # argparse names the type in its messages
    return parse


def float_in(lo: float, hi: float, what: str, lo_open: bool = True):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"expected a number, got '{display(text)}'") from None
        if not math.isfinite(v) or v < lo or (lo_open and v == lo) or v > hi:
            raise argparse.ArgumentTypeError(f"expected a finite number {'>' if lo_open else '>='} {lo:g} and "
                                             f"<= {hi:g}, got '{display(text)}'")
        return v
    parse.__name__ = what
    return parse


def check_workers(n: int, flag: str = "--workers") -> int:
    if n > max_workers():
        raise MegafuseError(f"{flag} {n} is more than {WORKERS_PER_CPU} per CPU on this machine "
                            f"({os.cpu_count() or 1} CPUs: at most {max_workers()})")
    return n


def _check_name(text: str, flag: str) -> Path:
    if not text or not text.strip():
        raise MegafuseError(f"{flag} needs a path, got ''")
    if "\0" in text:
        raise MegafuseError(f"{flag} '{display(text)}' contains a NUL byte")
    absolute = Path(os.path.abspath(text))
    if len(os.fsencode(str(absolute))) + 40 >= PATH_MAX:
        raise MegafuseError(f"{flag} '{display(text)}' is too long")
    for part in absolute.parts[1:]:
        if len(os.fsencode(part)) + (40 if part == absolute.name else 0) > NAME_MAX:
            raise MegafuseError(f"{flag} '{display(text)}': the name '{display(part, 40)}' is too long "
                                f"({len(os.fsencode(part))} bytes)")
    return absolute


def _probe(directory: Path, flag: str, text: str) -> None:
    """Create and remove a file in `directory` (or its nearest existing ancestor): what will be
    written there can be."""
    d = directory
    while not d.exists():
        if d == d.parent:
            break
        d = d.parent
    if not d.is_dir():
        raise MegafuseError(f"{flag} '{display(text)}': '{display(d)}' is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".megafuse-probe-", dir=d)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise MegafuseError(f"{flag} '{display(text)}' cannot be written: {e.strerror} in "
                            f"'{display(d)}'") from None


def check_output_file(text: str | None, flag: str, parent_must_exist: bool = False) -> None:
    """A file that a command writes at its end: checked now. parent_must_exist: the writer
    (write_text_atomic) creates no folders, so a missing one would fail only after the work."""
    if text is None:
        return
    path = _check_name(text, flag)
    if parent_must_exist and not path.parent.is_dir():
        what = "is not a directory" if path.parent.exists() else "does not exist"
        raise MegafuseError(f"{flag} '{display(text)}': the folder '{display(path.parent)}' {what}")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise MegafuseError(f"{flag} '{display(text)}' cannot be written: {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise MegafuseError(f"{flag} '{display(text)}' is not a regular file ({_kind(st.st_mode)})")
    _probe(path.parent, flag, text)


def check_output_dir(text: str | None, flag: str) -> None:
    """A directory a command writes files into at its end: checked now."""
    if text is None:
        return
    path = _check_name(text, flag)
    if path.exists() and not path.is_dir():
        raise MegafuseError(f"{flag} '{display(text)}' exists and is not a directory")
    _probe(path, flag, text)


def check_input_file(text: str | None, flag: str) -> None:
    """A file a command reads: a regular file (a FIFO or device would block or never end) under
    MAX_INPUT_FILE_BYTES."""
    if text is None:
        return
    if not text:
        raise MegafuseError(f"{flag} needs a path, got ''")
    try:
        st = os.stat(text)
    except FileNotFoundError:
        raise MegafuseError(f"{flag} '{display(text)}' not found") from None
    except OSError as e:
        raise MegafuseError(f"{flag} '{display(text)}': {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise MegafuseError(f"{flag} '{display(text)}' is not a regular file ({_kind(st.st_mode)})")
    if st.st_size > MAX_INPUT_FILE_BYTES:
        raise MegafuseError(f"{flag} '{display(text)}' is {st.st_size:,} bytes, over the "
                            f"{MAX_INPUT_FILE_BYTES:,}-byte limit for such files")


def write_text_atomic(text_path: str, text: str, flag: str) -> None:
    """Write a report file whole or not at all: a temporary file beside it, then a rename (a full
    disk leaves the earlier file, not half of a new one)."""
    path = Path(text_path)
    fd, tmp = -1, None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.partial-", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            fd = -1
            f.write(text)
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise MegafuseError(f"cannot write {flag} '{display(text_path)}': {e.strerror}") from None
    finally:
        if fd >= 0:
            os.close(fd)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_cache_dir() -> None:
    """$MEGAFUSE_CACHE_DIR, when set (and the kernel cache on): a directory this run can write."""
    root = os.environ.get("MEGAFUSE_CACHE_DIR")
    if root is None or os.environ.get("MEGAFUSE_KERNEL_CACHE", "1") == "0":
        return
    if not root.strip():
        raise MegafuseError("MEGAFUSE_CACHE_DIR is set but empty; unset it or name a directory")
    path = Path(os.path.abspath(root))
    if path.exists() and not path.is_dir():
        raise MegafuseError(f"MEGAFUSE_CACHE_DIR '{display(root)}' is not a directory")
    _probe(path, "MEGAFUSE_CACHE_DIR", root)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"
