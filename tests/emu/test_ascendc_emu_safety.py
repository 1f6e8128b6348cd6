"""`megafuse emu run` confines the user's code: endless loops, crashes, out-of-bounds raw GM
stores, missing --arg and forking programs each end in one line and the documented exit status
(1: the emulator stopped the kernel, 2: usage / build error), and nothing outlives the command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fusion.emu.confine import run_confined
from fusion.cli.main import main as cli_main

ROOT = Path(__file__).resolve().parents[2]

_KERNEL_OOB = r"""
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void raw_store(GM_ADDR out, uint32_t n)
{
    __gm__ float* p = (__gm__ float*)out;
    for (uint32_t i = 0; i < n; ++i) p[i] = 1.0f;   // n past the buffer: out of bounds
}
"""

_KERNEL_SPIN = r"""
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void spin(GM_ADDR out)
{
    volatile int x = 1;
    while (x) {}
}
"""

_KERNEL_SEGV = r"""
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void null_store(GM_ADDR out)
{
    volatile float* p = nullptr;
    *p = 1.0f;
}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_raw_gm_store_out_of_bounds_names_kernel_line_buffer_offset(tmp_path, capsys):
    src = _write(tmp_path, "raw_store.cpp", _KERNEL_OOB)
    rc = cli_main(["emu", "run", str(src), "--arg", "f32:1024=0", "--arg", "int:5000"])
    err = _one_line(capsys)
    assert rc == 1
    # the first byte past 4096 B of arg0: offset 4096, the store at line 6 of raw_store.cpp
    assert err.startswith("megafuse: error: kernel 'raw_store' line 6: out-of-bounds GM access at byte offset 4096 of "
                          "arg0 (a 4096-byte buffer)")
    assert "raw_store.cpp" in err


def test_in_bounds_raw_store_runs(tmp_path, capsys):
    src = _write(tmp_path, "raw_store.cpp", _KERNEL_OOB)
    out = tmp_path / "out"
    assert cli_main(["emu", "run", str(src), "--arg", "f32:1024=0", "--arg", "int:1024", "--out", str(out)]) == 0
    np.testing.assert_array_equal(np.fromfile(out / "arg0.bin", np.float32), np.ones(1024, np.float32))


def test_missing_arg_is_refused(tmp_path, capsys):
    src = _write(tmp_path, "raw_store.cpp", _KERNEL_OOB)
    assert cli_main(["emu", "run", str(src), "--arg", "f32:1024=0"]) == 2
    err = _one_line(capsys)
    assert "kernel 'raw_store' takes 2 parameter(s) (GM_ADDR out, uint32_t n) but 1 --arg were given" in err


def test_endless_kernel_is_stopped_at_the_timeout(tmp_path, capsys):
    src = _write(tmp_path, "spin.cpp", _KERNEL_SPIN)
    t0 = time.monotonic()
    rc = cli_main(["emu", "run", str(src), "--arg", "f32:8", "--timeout", "1.5"])
    assert rc == 1 and time.monotonic() - t0 < 30
    assert "kernel 'spin' did not finish within 1.5 s: stopped" in _one_line(capsys)


def test_segfault_names_signal_and_kernel(tmp_path, capsys):
    src = _write(tmp_path, "null_store.cpp", _KERNEL_SEGV)
    assert cli_main(["emu", "run", str(src), "--arg", "f32:8"]) == 1
    err = _one_line(capsys)
    assert "kernel 'null_store' line 6: crashed with SIGSEGV" in err


_FORKING = r"""
#include "acl/acl.h"
#include <cstdio>
#include <unistd.h>
int main()
{
    if (fork() == 0) {            // a child that would outlive its parent
        setsid();                 // and even leaves the process group
        FILE* f = std::fopen("child.pid", "w");
        std::fprintf(f, "%d\n", (int)getpid());
        std::fclose(f);
        for (;;) sleep(1);
    }
    for (;;) sleep(1);
}
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_forking_program_is_stopped_and_nothing_outlives_it(tmp_path, capsys):
    src = _write(tmp_path, "forks.asc", _FORKING)
    rc = cli_main(["emu", "run", str(src), "--workdir", str(tmp_path), "--timeout", "2"])
    assert rc == 1
    assert "program forks.asc did not finish within 2 s: stopped" in _one_line(capsys)
    pid = int((tmp_path / "child.pid").read_text())
    assert not _alive(pid)


def test_sigterm_reaches_the_child_and_the_command_ends(tmp_path):
    src = _write(tmp_path, "spin.cpp", _KERNEL_SPIN)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "fusion.cli.main", "emu", "run", str(src), "--arg", "f32:8", "--timeout", "60"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _descendant_runs(proc.pid, "kernel_child") and time.monotonic() < deadline:
        time.sleep(0.2)   # building, then starting the confined child
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert err.count("\n") == 1 and "kernel 'spin': stopped, megafuse received SIGTERM" in err, err


def _descendant_runs(pid: int, word: str) -> bool:
    try:
        kids = [int(k) for t in Path(f"/proc/{pid}/task").iterdir() for k in (t / "children").read_text().split()]
        return any(word in Path(f"/proc/{k}/cmdline").read_text() for k in kids)
    except OSError:
        return False


def test_confined_limits_and_group_kill():
    res = run_confined(["sh", "-c", "ulimit -v; ulimit -t; echo hi"], timeout=5, mem_bytes=1 << 30)
    lines = res.stdout.split()
    assert lines == [str((1 << 30) // 1024), "7", "hi"] and res.returncode == 0 and not res.timed_out
    t0 = time.monotonic()
    res = run_confined(["sh", "-c", "sleep 100 & sleep 100"], timeout=0.5)
    assert res.timed_out and time.monotonic() - t0 < 10


_PROGRAM_OOB = r"""
#include "acl/acl.h"
__global__ __vector__ void raw_copy(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    for (uint32_t i = 0; i < n; ++i) ((__gm__ int32_t*)y)[i] = ((__gm__ int32_t*)x)[i];
}
int main(int argc, char** argv)
{
    uint8_t *x = nullptr, *y = nullptr;
    aclrtMalloc((void**)&x, 256, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&y, 128, ACL_MEM_MALLOC_HUGE_FIRST);
    raw_copy<<<1, nullptr, nullptr>>>(x, y, argc > 1 ? 2048 : 32);
    return 0;
}
"""


def test_program_raw_gm_store_out_of_bounds(tmp_path, capsys):
    src = _write(tmp_path, "raw_copy.asc", _PROGRAM_OOB)
    assert cli_main(["emu", "run", str(src), "--workdir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert cli_main(["emu", "run", str(src), "--workdir", str(tmp_path), "--program-arg", "big"]) == 1
    err = _one_line(capsys)
    assert err.startswith("megafuse: error: kernel 'raw_copy' line 5: out-of-bounds GM access at byte offset 128 of "
                          "aclrtMalloc block #1 (a 128-byte buffer)"), err


_KERNEL_SCALARS = r"""
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void scalars(GM_ADDR y, int64_t n, const uint32_t m, int8_t s, float f)
{
    __gm__ int64_t* py = (__gm__ int64_t*)y;
    py[0] = n; py[1] = (int64_t)m; py[2] = s;
}
"""


@pytest.mark.parametrize("values,words", [
    (["int:9223372036854775808", "int:0", "int:0"], "--arg 1: 9223372036854775808 does not fit parameter 'int64_t n'"),
    (["int:0", "int:4294967296", "int:0"], "--arg 2: 4294967296 does not fit parameter 'const uint32_t m' "
                                           "(uint32_t: 0..4294967295)"),
    (["int:0", "int:-1", "int:0"], "--arg 2: -1 does not fit parameter 'const uint32_t m'"),
    (["int:0", "int:0", "int:128"], "--arg 3: 128 does not fit parameter 'int8_t s' (int8_t: -128..127)"),
    (["int:0", "int:0", "int:0x" + "f" * 40], "--arg 3: 14615016373309029182...(49 digits) does not fit"),
])
def test_scalar_that_does_not_fit_its_parameter_is_refused(tmp_path, capsys, values, words):
    src = _write(tmp_path, "scalars.cpp", _KERNEL_SCALARS)
    argv = ["emu", "run", str(src), "--arg", "i64:4=0", *[a for v in values for a in ("--arg", v)], "--arg", "int:1"]
    assert cli_main(argv) == 2
    err = _one_line(capsys)
    assert words in err, err


def test_integer_for_a_float_parameter_is_refused(tmp_path, capsys):
    src = _write(tmp_path, "scalars.cpp", _KERNEL_SCALARS)
    argv = ["emu", "run", str(src), "--arg", "i64:4=0", "--arg", "int:0", "--arg", "int:0", "--arg", "int:0",
            "--arg", "int:1"]
    assert cli_main(argv) == 2
    assert "--arg 4: parameter 'float f' is a floating-point scalar" in _one_line(capsys)


def test_scalars_at_the_edges_of_their_types_arrive_unchanged(tmp_path, capsys):
    src = _write(tmp_path, "scalars.cpp", _KERNEL_SCALARS)
    # the unused float parameter gets null (int:V is refused for it)
    argv = ["emu", "run", str(src), "--arg", "i64:4=0", "--arg", "int:-9223372036854775808",
            "--arg", "int:4294967295", "--arg", "int:-128", "--arg", "null", "--out", str(tmp_path / "out")]
    assert cli_main(argv) == 0, capsys.readouterr().err
    got = np.fromfile(tmp_path / "out" / "arg0.bin", np.int64)
    assert got.tolist() == [-(1 << 63), (1 << 32) - 1, -128, 0]
