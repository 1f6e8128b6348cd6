"""A directory megafuse replaces as a whole (`compile -o DIR`), safe under races and crashes.

Rules, each decided at the moment it acts, never from an earlier look:
- One writer per DIR: a lock file beside it (`.DIR.megafuse-lock`, flock, removed on release) is
  held from before the work to after the swap; a second writer fails at once with one line.
- The set is written into `.DIR.partial-<pid>-<rand>` beside DIR (marker first, so a killed
  run's leftover is recognisable), then swapped in with renameat2(RENAME_EXCHANGE) when DIR holds
  an earlier output, or renamed when DIR is absent or empty (rename(2) replaces only an empty
  directory, atomically; anything non-empty that appeared meanwhile makes it fail).
- "May I replace DIR?" is checked twice: up front (to fail before the work) and again on what the
  exchange actually moved aside (same inode as the one checked, contents exactly the manifest
  the marker lists). If it differs, it is exchanged back and the run fails: a directory someone
  created or changed at DIR in between survives untouched.
- Deleting an earlier output removes only the files its manifest lists, then the directories
  left empty; a file that appeared inside it meanwhile survives (named in a warning).
- Leftovers of a killed run (`.DIR.partial-<pid>-*` whose marker is ours and whose pid is dead)
  are removed by the next run that holds the lock.
Without renameat2 (old kernel, a filesystem without it) the fallback is rename-aside under the
lock, with the same inode and manifest check on what was moved and a move back on mismatch.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import shutil
import sys
import stat
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from fusion.core.errors import MegafuseError
from fusion.core.sanitize import display

MARKER = ".megafuse-output"   # JSON: {"writer": ..., "state": "partial"|"complete", "pid", "files": [...]}
WRITER = "megafuse compile -o"
NAME_MAX = 255                # bytes per path component (Linux); the lock/partial names add a suffix
PATH_MAX = 4096
_SUFFIX_ROOM = 40             # ".partial-<pid>-<8 random>" / ".megafuse-lock" beside the name

# Test hook, called between the final "may I replace?" decision and the swap (None in normal runs):
# a race test puts a foreign directory at DIR here and asserts it survives.
before_swap: Callable[[Path], None] | None = None
_force_fallback = False       # tests: take the no-renameat2 path

_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
_AT_FDCWD = -100


def check_output_path(text: str) -> Path:
    """The -o value, checked before any work: not empty, components and length within the
    filesystem's limits (with room for the names written beside it), not '/', not holding the
    current directory (a set cannot be swapped in around the process's own working directory)."""
    if not text or not text.strip():
        raise MegafuseError("-o needs a directory name, got ''")
    if "\0" in text:
        raise MegafuseError(f"-o '{display(text)}' contains a NUL byte")
    absolute = Path(os.path.abspath(text))
    if absolute == Path(absolute.anchor):
        raise MegafuseError(f"-o '{display(text)}' is the root directory")
    raw = os.fsencode(str(absolute))
    if len(raw) + _SUFFIX_ROOM >= PATH_MAX:
        raise MegafuseError(f"-o '{display(text)}' is too long ({len(raw)} bytes; at most "
                            f"{PATH_MAX - _SUFFIX_ROOM - 1})")
    for part in absolute.parts[1:]:
        if len(os.fsencode(part)) > NAME_MAX - (_SUFFIX_ROOM if part == absolute.name else 0):
            raise MegafuseError(f"-o '{display(text)}': the name '{display(part, 40)}' is too long "
                                f"({len(os.fsencode(part))} bytes; the output's own name at most "
                                f"{NAME_MAX - _SUFFIX_ROOM}, other components {NAME_MAX})")
    cwd = Path(os.getcwd())
    target = _real(absolute)
    if cwd == target or target in cwd.parents:
        raise MegafuseError(f"-o '{display(text)}' holds the current directory; run from outside it "
                            f"(the output is replaced as a whole)")
    return absolute


def _real(p: Path) -> Path:
    return p.parent.resolve() / p.name


class Reservation:
    """An exclusive hold on DIR from before the work to after the swap (see `reserve`)."""

    def __init__(self, out: Path, force: bool):
        self.out = _real(Path(os.path.abspath(out)))
        self.force = force
        self.warnings: list[str] = []
        self.token = uuid.uuid4().hex

    # -- the decision ----------------------------------------------------------------------
    def check(self) -> os.stat_result | None:
        """Whether DIR may be replaced, now: None when it is absent or empty (a plain rename
        suffices), else the stat of the earlier output it is (its inode is re-checked at the
        swap). Raises a one-line MegafuseError otherwise."""
        out = self.out
        for parent in out.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise MegafuseError(f"cannot create output directory '{display(out)}': "
                                        f"'{display(parent)}' is not a directory")
                break
        try:
            st = os.lstat(out)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise MegafuseError(f"cannot inspect output '{display(out)}': {e.strerror}") from None
        if not _isdir(st):
            raise MegafuseError(f"output '{display(out)}' exists and is not a directory")
        entries = _list(out)
        if not entries:
            return None
        _owned_files(out, foreign_error=True)
        if not self.force:
            raise MegafuseError(f"output directory '{display(out)}' holds an earlier run's output; "
                                f"pass --force to replace it")
        return st

    # -- writing and swapping ---------------------------------------------------------------
    def new_partial(self) -> Path:
        parent = self.out.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f"{_stem(self.out)}.partial-{os.getpid()}-", dir=parent))
        except OSError as e:
            raise MegafuseError(f"cannot create output directory '{display(self.out)}': {e.strerror}") from None
        _write_marker(tmp, {"writer": WRITER, "state": "partial", "pid": os.getpid(), "run": self.token})
        return tmp

    def discard(self, tmp: Path) -> None:
        """After a failure: remove tmp only while it still is this run's own set."""
        marker = _read_marker(tmp)
        if marker is not None and marker.get("run") == self.token:
            shutil.rmtree(tmp, ignore_errors=True)

    def commit(self, tmp: Path) -> None:
        """Seal tmp (manifest) and swap it onto DIR, re-deciding on what is there now."""
        files = sorted(rel for rel in _walk_files(tmp) if rel not in (MARKER, MARKER + ".tmp"))
        _write_marker(tmp, {"writer": WRITER, "state": "complete", "pid": os.getpid(), "run": self.token,
                            "files": files})
        os.chmod(tmp, 0o755 & ~_umask())
        checked = self.check()
        if before_swap is not None:
            before_swap(self.out)
        if checked is None:
            self._rename_into_place(tmp)
            return
        aside, holder = self._exchange(tmp, checked)
        self._delete_owned(aside)
        if holder is not None:            # the fallback's own container of the moved set
            _remove_marker_dir(holder)

    def _rename_into_place(self, tmp: Path) -> None:
        try:
            os.rename(tmp, self.out)       # replaces only an absent or empty directory
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise MegafuseError(f"output '{display(self.out)}' was created by someone else while this "
                                    f"run was writing; left untouched (choose another -o)") from None
            raise MegafuseError(f"cannot move the output into '{display(self.out)}': {e.strerror}") from None

    def _exchange(self, tmp: Path, checked: os.stat_result) -> tuple[Path, Path | None]:
        """tmp <-> DIR atomically; returns where the earlier output now is (tmp's path), and the
        fallback's container to remove afterwards (None with renameat2)."""
        swapped = _renameat2(tmp, self.out, _RENAME_EXCHANGE) if not _force_fallback else None
        if swapped is None:               # no renameat2 here: rename aside, under the lock
            aside = Path(tempfile.mkdtemp(prefix=f"{_stem(self.out)}.partial-{os.getpid()}-",
                                          dir=self.out.parent))
            moved = aside / "set"
            self._os(os.rename, self.out, moved)
            if not self._same(moved, checked):
                self._os(os.rename, moved, self.out)     # rename(2) back: only onto an absent/empty path
                _rmdir_quiet(aside)
                self._raced()
            try:
                self._rename_into_place(tmp)
            except MegafuseError:
                try:
                    os.rename(moved, self.out)
                    _rmdir_quiet(aside)
                except OSError:
                    pass
                raise
            return moved, aside
        if not self._same(tmp, checked):
            _renameat2(tmp, self.out, _RENAME_EXCHANGE)     # give it back exactly as it was
            self._raced()
        return tmp, None

    def _same(self, moved: Path, checked: os.stat_result) -> bool:
        try:
            st = os.lstat(moved)
            _owned_files(moved, foreign_error=True)
        except (OSError, MegafuseError):
            return False
        return _isdir(st) and (st.st_dev, st.st_ino) == (checked.st_dev, checked.st_ino)

    def _raced(self):
        raise MegafuseError(f"output '{display(self.out)}' changed while this run was writing (it is no longer "
                            f"the earlier output checked); left untouched, nothing written")

    def _os(self, fn, *a):
        try:
            fn(*a)
        except OSError as e:
            raise MegafuseError(f"cannot move the output into '{display(self.out)}': {e.strerror}") from None

    def _delete_owned(self, old: Path) -> None:
        left = delete_owned(old)
        if left:
            self.warnings.append(f"kept '{display(old)}': it holds '{display(left[0], 60)}'"
                                 f"{f' and {len(left) - 1} more' if len(left) > 1 else ''}, not written by megafuse")

    # -- leftovers --------------------------------------------------------------------------
    def clean_leftovers(self) -> None:
        """Remove `.DIR.partial-<pid>-*` of dead runs (their marker is ours); we hold the lock, so
        no live writer of DIR owns one."""
        prefix = f"{_stem(self.out)}.partial-"
        try:
            names = os.listdir(self.out.parent)
        except OSError:
            return
        for name in names:
            if not name.startswith(prefix):
                continue
            pid = name[len(prefix):].split("-", 1)[0]
            if not pid.isdigit() or _alive(int(pid)):
                continue
            path = self.out.parent / name
            marker = _read_marker(path)
            if marker is None:
                nested = path / "set"
                if _read_marker(nested) is not None and _read_marker(nested).get("state") == "complete":
                    delete_owned(nested)     # a fallback swap killed after the move aside
                    _rmdir_quiet(path)
                continue
            if marker.get("state") == "complete":
                delete_owned(path)
            else:
                shutil.rmtree(path, ignore_errors=True)   # a killed writer's own partial set


def delete_owned(old: Path) -> list[str]:
    """Delete what the manifest of `old` lists and the directories left empty; return the
    entries kept (not megafuse's)."""
    marker = _read_marker(old) or {}
    for rel in marker.get("files", []):
        if not isinstance(rel, str) or not _inside_without_links(old, rel):
            continue                       # never through a directory swapped for a symlink
        try:
            p = old / rel
            if p.is_symlink() or p.is_file():
                p.unlink()
        except OSError:
            pass
    try:
        (old / MARKER).unlink()
    except OSError:
        pass
    for dirpath, _, _ in sorted(os.walk(old, followlinks=False), key=lambda w: len(w[0]), reverse=True):
        _rmdir_quiet(Path(dirpath))
    return _walk_files(old) if old.exists() else []


def _walk_files(d: Path) -> list[str]:
    """Every non-directory under d (symlinks listed, never followed), relative to d."""
    out = []
    for dirpath, dirnames, filenames in os.walk(d, followlinks=False):
        base = Path(dirpath)
        out += [str((base / n).relative_to(d)) for n in filenames]
        out += [str((base / n).relative_to(d)) for n in dirnames if (base / n).is_symlink()]
    return sorted(out)


def _inside_without_links(root: Path, rel: str) -> bool:
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        return False
    d = root
    for part in parts[:-1]:
        d = d / part
        if d.is_symlink() or not d.is_dir():
            return False
    return True


@contextmanager
def reserve(out: Path, force: bool) -> Iterator[Reservation]:
    """Hold DIR for this run: lock, leftovers of dead runs cleaned, the up-front check."""
    r = Reservation(out, force)
    with _locked(r.out):
        r.clean_leftovers()
        r.check()
        yield r
    for w in r.warnings:
        print(f"megafuse: warning: {w}", file=sys.stderr)


@contextmanager
def _locked(out: Path) -> Iterator[None]:
    parent = out.parent
    lock = parent / f"{_stem(out)}.megafuse-lock"
    made = [d for d in (parent, *parent.parents) if not d.exists()]   # removed again if the run fails
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        _rmdirs(made)
        raise MegafuseError(f"cannot create output directory '{display(out)}': {e.strerror}") from None
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            _rmdirs(made)
            raise MegafuseError(f"cannot lock output '{display(out)}' ('{display(lock.name)}'): "
                                f"{e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise MegafuseError(f"another megafuse run ({display(holder or 'unknown pid', 40)}) is writing "
                                f"'{display(out)}'; wait for it or choose another -o") from None
        st = os.fstat(fd)
        try:
            now = os.lstat(lock)
        except FileNotFoundError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)                   # released and unlinked by its holder meanwhile: again
            continue
        content = os.pread(fd, 64, 0)
        if content and not content.startswith(b"pid "):
            os.close(fd)
            raise MegafuseError(f"'{display(lock)}' exists and is not a megafuse lock; remove it or choose "
                                f"another -o")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        break
    ok = False
    try:
        yield
        ok = True
    finally:
        try:
            os.unlink(lock)                # while still holding it: a waiter re-checks the inode
        except OSError:
            pass
        os.close(fd)
        if not ok:
            _rmdirs(made)                  # a failed run leaves no directory it created


def _rmdirs(made: list[Path]) -> None:
    for d in made:                         # deepest first; only while empty
        _rmdir_quiet(d)


# ---- small helpers -------------------------------------------------------------------------
def _stem(out: Path) -> str:
    return f".{out.name}"


def _isdir(st: os.stat_result) -> bool:
    return stat.S_ISDIR(st.st_mode)


def _list(d: Path) -> list[str]:
    try:
        return os.listdir(d)
    except OSError as e:
        raise MegafuseError(f"cannot read output directory '{display(d)}': {e.strerror}") from None


def _write_marker(d: Path, doc: dict) -> None:
    tmp = d / (MARKER + ".tmp")
    try:
        tmp.write_text(json.dumps(doc) + "\n")
        os.replace(tmp, d / MARKER)
    except OSError as e:
        raise MegafuseError(f"cannot write the output marker in '{display(d)}': {e.strerror}") from None


def _read_marker(d: Path) -> dict | None:
    try:
        with open(d / MARKER, "rb") as f:
            doc = json.loads(f.read(1 << 22))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("writer") == WRITER else None


def _owned_files(d: Path, foreign_error: bool) -> list[str]:
    """The manifest of an earlier output at d; raises when d is not one or holds anything more."""
    marker = _read_marker(d)
    if marker is None or marker.get("state") != "complete" or not isinstance(marker.get("files"), list):
        legacy = (d / MARKER).is_file()
        raise MegafuseError(f"output directory '{display(d)}' is not empty and not a megafuse output"
                            + (" with a manifest (an older version wrote it; delete it yourself)" if legacy else "")
                            + "; refusing to replace it (choose another -o)")
    listed = {f for f in marker["files"] if isinstance(f, str)} | {MARKER}
    present = set(_walk_files(d))
    extra = sorted(present - listed)
    if extra and foreign_error:
        raise MegafuseError(f"output directory '{display(d)}' holds '{display(extra[0], 60)}'"
                            f"{f' and {len(extra) - 1} more' if len(extra) > 1 else ''} that megafuse did not "
                            f"write; refusing to replace it (move it out or choose another -o)")
    return sorted(listed)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_marker_dir(d: Path) -> None:
    for name in (MARKER, MARKER + ".tmp"):
        try:
            (d / name).unlink()
        except OSError:
            pass
    _rmdir_quiet(d)


def _rmdir_quiet(d: Path) -> None:
    try:
        d.rmdir()
    except OSError:
        pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_libc = None


def _renameat2(src: Path, dst: Path, flags: int) -> bool | None:
    """renameat2(2) through libc; None when this system has no renameat2 for these paths."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                                        ctypes.c_uint]
        except (OSError, AttributeError):
            _libc = False
    if _libc is False:
        return None
    if _libc.renameat2(_AT_FDCWD, os.fsencode(str(src)), _AT_FDCWD, os.fsencode(str(dst)), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL):
        return None
    raise MegafuseError(f"cannot move the output into '{display(dst)}': {os.strerror(err)}")
