"""Worker processes of `megafuse tune` never outlive the run.

The pool's processes are created (`start_pool`) with SIGINT/SIGTERM held back and the workers'
stdout/stderr pointed at /dev/null: a signal can no longer land in the middle of a worker's
start-up handshake (which made the half-started worker print a traceback; the workers inherit
the held mask), the parent takes it as soon as they exist, and no worker (nor
multiprocessing's resource tracker) holds the caller's pipes — a caller reading our output sees
EOF as soon as this process is gone. Worker results and exceptions come back through the pool.

Each spawn worker, at start: asks the kernel for SIGKILL when its parent dies
(prctl PR_SET_PDEATHSIG, Linux), starts a watchdog thread that exits as soon as the parent's pid
changes (any POSIX system, and the window before prctl took effect), and ignores SIGINT — Ctrl-C
reaches the whole foreground process group, and the parent alone reports it. When the parent
leaves the pool because of an exception or a signal, it kills the workers instead of waiting
for their tasks.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

PR_SET_PDEATHSIG = 1
WATCHDOG_PERIOD_S = 0.2


# After a SIGKILL of the parent, multiprocessing's resource tracker (a helper process started with
# the parent's -W options) would print a two-line "leaked semaphore" warning on the caller's stderr.
_QUIET_TRACKER = "ignore::UserWarning:multiprocessing.resource_tracker"


def quiet_resource_tracker() -> None:
    """Call before the first pool starts (the tracker copies sys.warnoptions when it starts)."""
    import sys

    if _QUIET_TRACKER not in sys.warnoptions:
        sys.warnoptions.append(_QUIET_TRACKER)


def init_worker(parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):   # not Linux: the watchdog alone
        pass
    if os.getppid() != parent_pid:      # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watchdog, args=(parent_pid,), daemon=True, name="megafuse-parent-watch").start()


def _watchdog(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)
        time.sleep(WATCHDOG_PERIOD_S)


def ping() -> int:
    return os.getpid()


def start_pool(workers: int):
    """A spawn ProcessPoolExecutor with all `workers` processes started and initialized."""
    import sys
    from concurrent.futures import ProcessPoolExecutor, wait
    from multiprocessing import get_context

    quiet_resource_tracker()
    held = {signal.SIGINT, signal.SIGTERM}
    in_main = threading.current_thread() is threading.main_thread()
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, held) if in_main else None
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    ex = futures = None
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        ex = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                                 initializer=init_worker, initargs=(os.getpid(),))
        # one task per worker, submitted at once: each submit starts a process (none is idle yet),
        # which inherits /dev/null and the held signals
        futures = [ex.submit(ping) for _ in range(workers)]
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [null]:
            os.close(fd)
        if futures is None:   # the start failed: the exception goes on
            if old_mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            if ex is not None:
                kill_workers(ex)
    try:
        # the workers exist: a held signal is delivered now, not after their start-up (a cold
        # import of TVM can take tens of seconds), and Ctrl-C while they start kills them
        if old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        wait(futures)
    except BaseException:
        kill_workers(ex)   # the caller never owned this pool: nothing else would stop its workers
        raise
    return ex


def kill_workers(executor) -> None:
    """SIGKILL every live worker of a ProcessPoolExecutor, then let it shut down without waiting."""
    _quiet_manager_thread()
    procs = list((getattr(executor, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    for p in procs:
        try:
            p.join(timeout=2)
        except (OSError, ValueError, AssertionError, AttributeError):
            pass
    try:
        executor.shutdown(wait=False, cancel_futures=True)
    except Exception:  # noqa: BLE001 - a broken pool is being discarded anyway
        pass


def _quiet_manager_thread() -> None:
    """The pool's manager thread, seeing its workers killed, fails every pending future; on
    Python 3.11 it raises InvalidStateError for those the sweep already cancelled, and the thread's
    traceback would reach the terminal. That one exception of that one thread is dropped."""
    from concurrent.futures import InvalidStateError
    from concurrent.futures import process as cf_process

    manager = getattr(cf_process, "_ExecutorManagerThread", None)
    previous = threading.excepthook
    if getattr(previous, "_megafuse_quiet", False) or manager is None:
        return

    def hook(args):
        if isinstance(args.thread, manager) and isinstance(args.exc_value, InvalidStateError):
            return
        previous(args)

    hook._megafuse_quiet = True
    threading.excepthook = hook
