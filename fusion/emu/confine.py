"""Run a user's Ascend C code in a confined child process.

`megafuse emu run` executes the given code on the host (like a compiler's test runner). The
code runs in a child process, never inside megafuse:

* its own process group (setsid), stdin from /dev/null, stdout/stderr to files;
* RLIMIT_CPU (the timeout plus a second), RLIMIT_AS (`mem_bytes`), RLIMIT_FSIZE (`file_bytes`),
  RLIMIT_CORE 0;
* a wall-clock `timeout`; SIGTERM / SIGINT sent to megafuse are forwarded to the group;
* at the end the whole group is killed (SIGKILL) and reaped, and so is any descendant that left
  the group (megafuse is a child subreaper while the child runs, so orphans come back to it);
* MEGAFUSE_EMU_CONFINED=1 makes the emulation runtime guard GM buffers and report fatal signals
  as one line (include/megafuse_emu/guard.h), which `fault_line` turns into a message naming
  the kernel, the source line, the buffer and the offset.

    res = run_confined([exe], cwd=".", timeout=10)
    res.returncode, res.stdout, res.stderr, res.timed_out, res.signal
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

FAULT_EXIT = 86  # include/megafuse_emu/launch.h kFaultExit, guard.h OnFatalSignal
DEFAULT_MEM_BYTES = 8 << 30   # address space: MIX launches start one thread (8 MiB stack) per core
DEFAULT_FILE_BYTES = 1 << 30
_OUTPUT_LIMIT = 1 << 20       # bytes of stdout/stderr read back
_PR_SET_CHILD_SUBREAPER = 36
_SIGNAMES = {int(s): s.name for s in signal.Signals}


@dataclass(frozen=True)
class Confined:
    """How a confined child ended: `signal` is the signal name when a signal killed it,
    `timed_out` when megafuse stopped it at the wall-clock or CPU limit."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    signal: str | None
    forwarded: str | None = None  # SIGTERM / SIGINT megafuse received and passed on


def _limits(timeout: float, mem_bytes: int, file_bytes: int):
    cpu = int(timeout) + 2

    def apply() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _set_subreaper(on: bool) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _children() -> set[int]:
    """This process's direct children (Linux /proc)."""
    kids: set[int] = set()
    try:
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            try:
                kids |= {int(p) for p in (task / "children").read_text().split()}
            except OSError:
                continue
    except OSError:
        pass
    return kids


def _kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pgid: int, before: set[int]) -> None:
    """Kills and reaps what is left: the group, then any new child (an orphan that left it)."""
    for _ in range(50):
        _kill_group(pgid)
        try:
            while True:
                pid, _ = os.waitpid(-pgid, os.WNOHANG)
                if pid == 0:
                    break
        except ChildProcessError:
            pass
        strays = _children() - before
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            if not (_children() - before):
                return
        time.sleep(0.02)


def _read(f) -> str:
    f.seek(0)
    return f.read(_OUTPUT_LIMIT).decode(errors="replace")


def run_confined(cmd: Sequence[str], *, cwd: str | os.PathLike | None = None, timeout: float = 120.0,
                 env: dict[str, str] | None = None, mem_bytes: int = DEFAULT_MEM_BYTES,
                 file_bytes: int = DEFAULT_FILE_BYTES) -> Confined:
    """Runs cmd confined (module docstring); returns how it ended. Never raises for the child's
    behaviour (a hang is `timed_out`)."""
    child_env = dict(os.environ if env is None else env)
    child_env["MEGAFUSE_EMU_CONFINED"] = "1"
    _set_subreaper(True)   # until the group is reaped: orphans of the run come back to us
    before = _children()
    forwarded: list[str] = []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=child_env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True, preexec_fn=_limits(timeout, mem_bytes, file_bytes))
        pgid = proc.pid
        old: dict[int, object] = {}

        def forward(sig, _frame):
            forwarded.append(_SIGNAMES.get(sig, str(sig)))
            _kill_group(pgid, sig)

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                old[sig] = signal.signal(sig, forward)
        timed_out = False
        forwarded_at: float | None = None
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    proc.wait(timeout=0.05)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    if forwarded and forwarded_at is None:
                        forwarded_at = now
                    if forwarded_at is not None and now - forwarded_at > 2.0:
                        _kill_group(pgid)  # it had 2 s to end on the forwarded signal
                    if now >= deadline:
                        timed_out = True
                        _kill_group(pgid)
                        proc.wait()
                        break
        finally:
            _reap(pgid, before)
            if proc.returncode is None:
                proc.kill()
                proc.wait()
            for sig, handler in old.items():
                signal.signal(sig, handler)  # type: ignore[arg-type]
            _set_subreaper(False)
        rc = proc.returncode
        sig_name = _SIGNAMES.get(-rc, f"signal {-rc}") if rc < 0 else None
        if sig_name == "SIGXCPU":
            timed_out = True
        return Confined(rc, _read(out), _read(err), timed_out, sig_name, forwarded[0] if forwarded else None)


_OOB = re.compile(r"^megafuse-emu oob: (?P<kernel>[^\t]*)\t(?P<label>[^\t]*)\t(?P<off>-?\d+)\t(?P<bytes>\d+)\t"
                  r"(?P<obj>[^\t]*)\t(?P<pc>0x[0-9a-f]+|0)$")
_CRASH = re.compile(r"^megafuse-emu crash: (?P<kernel>[^\t]*)\t(?P<sig>\w+)\t(?P<obj>[^\t]*)\t(?P<pc>0x[0-9a-f]+|0)$")


def source_line(obj: str, pc: str) -> tuple[str, int] | None:
    """(file name, line) of a code address in a binary built with line tables (addr2line)."""
    if not obj or not os.path.isfile(obj):
        return None
    try:
        out = subprocess.run(["addr2line", "-e", obj, "-i", pc], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for ln in out.splitlines():  # innermost inlined frame first
        m = re.match(r"^(?P<file>.*):(?P<line>\d+)(?: \(discriminator \d+\))?$", ln.strip())
        if m and m.group("file") != "??" and int(m.group("line")) > 0:
            return os.path.basename(m.group("file")), int(m.group("line"))
    return None


def fault_line(stderr: str) -> str | None:
    """The guard handler's line in a child's stderr -> one message, or None when there is none."""
    for ln in reversed(stderr.splitlines()):
        m = _OOB.match(ln)
        if m:
            where = source_line(m.group("obj"), m.group("pc"))
            at = f" line {where[1]}" if where else ""
            tail = f" [{where[0]}]" if where else ""
            return (f"kernel '{m.group('kernel') or '?'}'{at}: out-of-bounds GM access at byte offset "
                    f"{int(m.group('off'))} of {m.group('label')} (a {int(m.group('bytes'))}-byte buffer){tail}")
        m = _CRASH.match(ln)
        if m:
            where = source_line(m.group("obj"), m.group("pc"))
            at = f" line {where[1]}" if where else ""
            tail = f" [{where[0]}]" if where else ""
            who = f"kernel '{m.group('kernel')}'" if m.group("kernel") else "the program (outside any kernel)"
            return f"{who}{at}: crashed with {m.group('sig')}{tail}"
    return None
