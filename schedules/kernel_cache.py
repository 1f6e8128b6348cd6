"""On-disk cache of compiled LLVM kernels (shared libraries), so a second `compile` of the same
model with the same settings skips scheduling and LLVM.

The key covers everything that changes the machine code: what the caller says identifies the
kernel (workload + tile, or the PrimFunc's structural hash), the LLVM target, the versions of
megafuse and TVM, and a hash of the source of every module that builds kernels (a schedule edit
invalidates every entry). Entries are written atomically (temporary file + rename); an entry
that does not load is deleted and rebuilt. Location: $MEGAFUSE_CACHE_DIR/kernels, default
~/.cache/megafuse/kernels. MEGAFUSE_KERNEL_CACHE=0 turns it off.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from fusion.core.version import __version__

log = logging.getLogger(__name__)

_ROOT = Path(__file__).resolve().parent.parent
# sources that decide the generated code: every module of schedules/ (TE computes, schedules,
# plans, build) and the target and cache definitions
CODE_SOURCES = ("schedules/*.py",)


def cache_dir() -> Path:
    root = os.environ.get("MEGAFUSE_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "megafuse"
    return base / "kernels"


def enabled() -> bool:
    return os.environ.get("MEGAFUSE_KERNEL_CACHE", "1") != "0"


@functools.cache
def code_version() -> str:
    import tvm


    h = hashlib.sha256(f"megafuse {__version__} tvm {tvm.__version__}".encode())
    for pattern in CODE_SOURCES:
        for p in sorted(_ROOT.glob(pattern)):
            h.update(str(p.relative_to(_ROOT)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def entry_key(kind: str, ident: str, target: object) -> str:
    text = f"{kind}|{ident}|{target}|{code_version()}"
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"


class CachedKernel:
    """A kernel loaded from the cache, with the parts of tvm's Executable the callers use."""

    def __init__(self, mod, path: Path):
        self.mod = mod
        self.path = path

    def __getitem__(self, name: str):
        return self.mod[name]

    def export_library(self, file_name: str, **_kw) -> None:
        shutil.copyfile(self.path, file_name)


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    rebuilt_corrupt: int = 0
    write_errors: int = 0

    def describe(self) -> str:
        extra = f", {self.rebuilt_corrupt} corrupt rebuilt" if self.rebuilt_corrupt else ""
        return f"kernel cache: {self.hits} hit(s), {self.misses} miss(es){extra} ({cache_dir()})"


STATS = CacheStats()


def load_or_build(kind: str, ident: str, target: object, build: Callable[[], object]):
    """A runtime module for the key: loaded from disk when present and loadable, else built by
    `build()` (a tvm Executable) and stored. Falls back to the built executable when the cache
    cannot be written (read-only home, full disk): caching never fails a compile."""
    import tvm

    if not enabled():
        return build()
    path = cache_dir() / f"{entry_key(kind, ident, target)}.so"
    if path.exists():
        try:
            mod = tvm.runtime.load_module(str(path))
            mod["main"]  # noqa: B018 - an entry without its entry point is corrupt
            STATS.hits += 1
            return CachedKernel(mod, path)
        except Exception as e:  # noqa: BLE001 - any load failure means: rebuild this entry
            log.warning("kernel cache: dropping unreadable entry %s (%s)", path.name, type(e).__name__)
            STATS.rebuilt_corrupt += 1
            path.unlink(missing_ok=True)
    STATS.misses += 1
    ex = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".so", dir=path.parent)
        os.close(fd)
        try:
            ex.export_library(tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except Exception as e:  # noqa: BLE001 - an unwritable cache only costs the next compile
        STATS.write_errors += 1
        log.warning("kernel cache: cannot store %s (%s)", path.name, e)
    return ex
