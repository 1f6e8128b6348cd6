"""Hostile and broken inputs: every case is exit 2, exactly one line on stderr, no traceback,
nothing written outside the working directory's -o, in bounded time. Most cases run in-process
through fusion.cli.main; a few (FIFO, device, signals) need a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import models
from fusion.frontend import validate
from fusion.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CASE_SECONDS = 60          # per in-process case; a hang fails the test instead of the suite


# ---- models ------------------------------------------------------------------------------
def block(**kw) -> onnx.ModelProto:
    kw.setdefault("cin", 16)
    kw.setdefault("cout", 16)
    kw.setdefault("h", 8)
    return models.dwsep_block(**kw)


def renamed(new_name: str, node: str = "dw", **kw) -> onnx.ModelProto:
    m = block(**kw)
    for n in m.graph.node:
        if n.name == node:
            n.name = new_name
    return m


def raw_dwsep(cin=16, cout=16, h=8, w=8, batch=1, opset=13, ir=8, w_pw=None, w_dw=None) -> onnx.ModelProto:
    """DW 3x3 -> Relu -> PW 1x1 built by hand, so shapes and values can be anything."""
    rng = np.random.default_rng(0)
    w_dw = rng.standard_normal((cin, 1, 3, 3)).astype(np.float32) if w_dw is None else w_dw
    w_pw = rng.standard_normal((cout, cin, 1, 1)).astype(np.float32) if w_pw is None else w_pw
    nodes = [helper.make_node("Conv", ["x", "w_dw"], ["t"], name="dw", group=cin, pads=[1, 1, 1, 1],
                              kernel_shape=[3, 3]),
             helper.make_node("Relu", ["t"], ["r"], name="act"),
             helper.make_node("Conv", ["r", "w_pw"], ["y"], name="pw", kernel_shape=[1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, cin, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w_dw, "w_dw"), numpy_helper.from_array(w_pw, "w_pw")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


def external(location: str) -> onnx.ModelProto:
    m = block()
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", location
    return m


def with_versions(ir=None, opset=None) -> onnx.ModelProto:
    m = block()
    if ir is not None:
        m.ir_version = ir
    if opset is not None:
        m.opset_import[0].version = opset
    return m


def custom_op(name: str) -> onnx.ModelProto:
    m = block()
    m.graph.node.append(helper.make_node("Evil", ["y"], ["z"], name=name, domain="evil.domain"))
    m.graph.output[0].name = "z"
    m.opset_import.append(helper.make_opsetid("evil.domain", 1))
    return m


def nonfinite(value: float) -> onnx.ModelProto:
    w = np.ones((16, 16, 1, 1), np.float32)
    w[3, 5] = value
    return raw_dwsep(w_pw=w)


def dynamic(name: str = "x") -> onnx.ModelProto:
    m = block()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    m.graph.input[0].name = name
    for n in m.graph.node:
        n.input[:] = [name if i == "x" else i for i in n.input]
    return m


def cycle() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x2"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["x2"], name="r2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2])],
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def bad_attr() -> onnx.ModelProto:
    m = block()
    for n in m.graph.node:
        if n.op_type == "Conv":
            n.attribute.append(helper.make_attribute("group", "sixteen"))
            break
    return m


def no_outputs() -> onnx.ModelProto:
    m = block()
    del m.graph.output[:]
    return m


def undefined_input() -> onnx.ModelProto:
    m = block()
    m.graph.node[0].input[0] = "nowhere"
    return m


def duplicate_initializer() -> onnx.ModelProto:
    m = block()
    m.graph.initializer.append(m.graph.initializer[0])
    return m


# ---- the corpus: (id, files to create {name: ModelProto | bytes}, argv) -------------------
M = "m.onnx"
CASES = [
    # files
    ("missing-file", {}, ["compile", "nope.onnx"]),
    ("directory", {"d/": None}, ["compile", "d"]),
    ("empty-file", {M: b""}, ["compile", M]),
    ("garbage", {M: bytes(range(256)) * 8}, ["compile", M]),
    ("text-file", {M: b"hello, I am not a model\n"}, ["compile", M]),
    ("truncated", {M: ("trunc", block())}, ["compile", M]),
    ("over-size-cap", {M: block()}, ["compile", M, "--max-model-bytes", "100"]),
    ("symlink-loop", {"loop.onnx": ("symlink", "loop.onnx")}, ["compile", "loop.onnx"]),
    ("dangling-symlink", {"d.onnx": ("symlink", "gone.onnx")}, ["compile", "d.onnx"]),
    ("external-absolute", {M: external("/etc/passwd")}, ["compile", M]),
    ("external-dotdot", {M: external("../../etc/passwd")}, ["compile", M]),
    ("external-missing", {M: external("weights.bin")}, ["compile", M]),
    ("external-dev-zero-link", {M: external("zero.bin"), "zero.bin": ("symlink", "/dev/zero")}, ["compile", M]),
    ("external-fifo", {M: external("pipe.bin"), "pipe.bin": ("fifo",)}, ["compile", M]),
    ("external-link-outside", {M: external("w.bin"), "w.bin": ("symlink", "/etc/hostname")}, ["compile", M]),
    ("external-too-short", {M: external("w.bin"), "w.bin": b"\0" * 8}, ["compile", M]),
    # ONNX versions and structure
    ("ir-99", {M: with_versions(ir=99)}, ["compile", M]),
    ("ir-2", {M: with_versions(ir=2)}, ["compile", M]),
    ("opset-99", {M: with_versions(opset=99)}, ["compile", M]),
    ("opset-1", {M: with_versions(opset=1)}, ["compile", M]),
    ("opset-99-check", {M: with_versions(opset=99)}, ["check", M, "-t", "llvm"]),
    ("opset-1-check", {M: with_versions(opset=1)}, ["check", M, "-t", "llvm"]),
    ("no-outputs", {M: no_outputs()}, ["compile", M]),
    ("custom-op", {M: custom_op("evil")}, ["compile", M]),
    ("custom-op-ansi-name", {M: custom_op("\x1b[2J\x1b[31mred\nsecond line\r")}, ["compile", M]),
    ("checker-attr-type", {M: bad_attr()}, ["compile", M]),
    ("cycle", {M: cycle()}, ["compile", M]),
    ("undefined-input", {M: undefined_input()}, ["compile", M]),
    ("duplicate-initializer", {M: duplicate_initializer()}, ["compile", M]),
    # shapes and sizes
    ("pw-cout-0", {M: raw_dwsep(w_pw=np.zeros((0, 16, 1, 1), np.float32))}, ["compile", M]),
    ("pw-cout-0-check", {M: raw_dwsep(w_pw=np.zeros((0, 16, 1, 1), np.float32))}, ["check", M, "-t", "llvm"]),
    ("hw-100000", {M: raw_dwsep(h=100000, w=100000)}, ["compile", M]),
    ("hw-100000-llvm", {M: raw_dwsep(h=100000, w=100000)}, ["check", M, "-t", "llvm"]),
    ("batch-2^31", {M: raw_dwsep(batch=2**31)}, ["compile", M]),
    ("batch-2^31-check", {M: raw_dwsep(batch=2**31)}, ["check", M, "-t", "llvm"]),
    ("input-shape-2^31", {M: dynamic()}, ["compile", M, "--input-shape", "x=2147483648x16x8x8"]),
    ("dynamic-no-shape", {M: dynamic()}, ["compile", M]),
    ("dynamic-bad-shape-text", {M: dynamic()}, ["compile", M, "--input-shape", "x=1x16xeightx8"]),
    ("dynamic-shape-zero", {M: dynamic()}, ["compile", M, "--input-shape", "x=0x16x8x8"]),
    ("input-shape-unknown-name", {M: dynamic()}, ["compile", M, "--input-shape", "y=1x16x8x8"]),
    ("dynamic-newline-name", {M: dynamic("x\nevil")}, ["compile", M]),
    ("nan-weight", {M: nonfinite(float("nan"))}, ["compile", M]),
    ("inf-weight", {M: nonfinite(float("inf"))}, ["compile", M]),
    ("neg-inf-weight-check", {M: nonfinite(float("-inf"))}, ["check", M, "-t", "llvm"]),
    # command-line values
    ("cout-block-0", {M: block()}, ["compile", M, "--cout-block", "0"]),
    ("cout-block--1", {M: block()}, ["compile", M, "--cout-block", "-1"]),
    ("cout-block-1000", {M: block()}, ["compile", M, "--cout-block", "1000"]),
    ("cout-block-text", {M: block()}, ["compile", M, "--cout-block", "two"]),
    ("cin-block-0", {M: block()}, ["compile", M, "--cin-block", "0"]),
    ("cin-block-1000", {M: block()}, ["compile", M, "--cin-block", "1000"]),
    ("tile-huge", {M: block()}, ["compile", M, "--tile", "99999999999x99999999999"]),
    ("tile-zero", {M: block()}, ["compile", M, "--tile", "0x4"]),
    ("tile-text", {M: block()}, ["compile", M, "--tile", "big"]),
    ("tile-over-output", {M: block()}, ["compile", M, "--tile", "9x4"]),
    ("target-empty", {M: block()}, ["compile", M, "-t", ""]),
    ("target-colon", {M: block()}, ["compile", M, "-t", "ascend:"]),
    ("target-unknown", {M: block()}, ["compile", M, "-t", "gpu"]),
    ("target-unknown-soc", {M: block()}, ["compile", M, "-t", "sim:ascend999"]),
    ("target-llvm-soc", {M: block()}, ["compile", M, "-t", "llvm:ascend910b2"]),
    ("target-ansi", {M: block()}, ["compile", M, "-t", "\x1b[31mred"]),
    ("dtype-float64", {M: block()}, ["compile", M, "--dtype", "float64"]),
    ("unknown-flag", {M: block()}, ["compile", M, "--bogus"]),
    ("missing-model-arg", {}, ["compile"]),
    ("no-command", {}, []),
    ("unknown-command", {}, ["explode"]),
    ("seed-negative", {M: block()}, ["check", M, "--seed", "-1"]),
    ("tolerance-nan", {M: block()}, ["check", M, "--tolerance", "nan"]),
    ("tolerance-negative", {M: block()}, ["check", M, "--tolerance", "-1"]),
    ("max-dma-ratio-inf", {M: block()}, ["compile", M, "--max-dma-ratio", "inf"]),
    ("max-dma-ratio-0", {M: block()}, ["compile", M, "--max-dma-ratio", "0"]),
    ("max-model-bytes-0", {M: block()}, ["compile", M, "--max-model-bytes", "0"]),
    # outputs
    ("output-is-file", {M: block(), "out": b"x"}, ["compile", M, "-o", "out"]),
    ("output-not-empty", {M: block(), "out/old.txt": b"x"}, ["compile", M, "-o", "out"]),
    ("output-compile-json-dir", {M: block(), "out/compile.json/": None}, ["compile", M, "-o", "out"]),
    ("output-under-file", {M: block(), "f": b"x"}, ["compile", M, "-o", "f/sub"]),
    # tuning database and tune
    ("db-is-directory", {M: block(), "db/": None}, ["compile", M, "--db", "db"]),
    ("tune-workers-neg", {M: block()}, ["tune", M, "--workers", "-1"]),
    ("tune-trials-0", {M: block()}, ["tune", M, "--trials", "0"]),
    ("tune-opset-99", {M: with_versions(opset=99)}, ["tune", M, "--no-db"]),
    ("tune-target-empty", {M: block()}, ["tune", M, "-t", ""]),
    ("tune-db-directory", {M: block(), "db/": None}, ["tune", M, "--db", "db"]),
]


def _materialize(tmp: Path, files: dict) -> None:
    for name, content in files.items():
        path = tmp / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, tuple) and content[0] == "fifo":
            os.mkfifo(path)
        elif isinstance(content, tuple) and content[0] == "symlink":
            os.symlink(content[1], path)
        elif isinstance(content, tuple) and content[0] == "trunc":
            data = content[1].SerializeToString()
            path.write_bytes(data[: len(data) // 2])
        elif isinstance(content, onnx.ModelProto):
            path.write_bytes(content.SerializeToString())
        else:
            path.write_bytes(content)


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def assert_one_line_error(code: int, out: str, err: str) -> None:
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith("megafuse: error: "), err
    assert lines[0].isprintable(), repr(lines[0])    # control characters escaped
    assert "internal error" not in err, err          # each of these is an input error, not a bug


@pytest.fixture
def bounded():
    def on_alarm(signum, frame):
        raise TimeoutError(f"case took more than {CASE_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(CASE_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("files,argv", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_corpus(files, argv, tmp_path, monkeypatch, capsys, bounded):
    work = tmp_path / "work"
    work.mkdir()
    _materialize(work, files)
    monkeypatch.chdir(work)
    before = _tree(tmp_path)
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert_one_line_error(code, out, err)
    created = _tree(tmp_path) - before
    assert not created, f"files written by a failed run: {sorted(created)[:5]}"


def test_corpus_is_large_enough():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


def test_memory_budget_names_tensor_and_bytes(tmp_path, capsys):
    p = tmp_path / "m.onnx"
    onnx.save(block(), p)
    with validate.limits(memory_bytes=10_000):
        code = main(["compile", str(p)])
    out, err = capsys.readouterr()
    assert_one_line_error(code, out, err)
    assert "bytes" in err and "largest '" in err and "memory budget" in err


def test_nonfinite_allowed_is_one_warning(tmp_path, capsys):
    p = tmp_path / "m.onnx"
    onnx.save(nonfinite(float("nan")), p)
    code = main(["compile", str(p), "--allow-nonfinite"])
    out, err = capsys.readouterr()
    assert code == 0 and "fused blocks 1" in out
    assert err.count("\n") == 1 and err.startswith("megafuse: warning:") and "NaN/Inf" in err


def test_internal_error_is_one_line_and_debug_reraises(tmp_path, capsys, monkeypatch):
    p = tmp_path / "m.onnx"
    onnx.save(block(), p)

    def boom(*a, **k):
        raise ZeroDivisionError("boom\nsecond line")

    monkeypatch.setattr("fusion.cli.main.compile_model", boom)   # the name the CLI calls
    code = main(["compile", str(p)])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "internal error: ZeroDivisionError" in err
    assert "please report" in err and "Traceback" not in err
    monkeypatch.setenv("MEGAFUSE_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["compile", str(p)])


# ---- injection and paths ------------------------------------------------------------------
INJECT = 'x\nstatic int pwned = std::system("touch {flag}");\n// */ ??/\\'


def test_node_name_never_reaches_generated_code(tmp_path, capsys):
    """The code-injection repro: the name is a C++ statement; `check -t ascend` compiles and runs
    the generated kernel, and the statement must not be in it."""
    flag = tmp_path / "pwned"
    p = tmp_path / "m.onnx"
    onnx.save(renamed(INJECT.format(flag=flag)), p)
    out_dir = tmp_path / "out"
    code = main(["compile", str(p), "-t", "ascend", "-o", str(out_dir)])
    capsys.readouterr()
    assert code == 0
    files = {f: f.read_text(errors="replace") for f in out_dir.rglob("*") if f.is_file()}
    code_files = [f for f in files if f.suffix in (".cpp", ".h", ".py", ".txt", ".sh", ".md", ".cmake")]
    assert len(code_files) >= 4
    assert not any("std::system" in files[f] for f in code_files)
    # data files (JSON, YAML) keep the model's name for reference, escaped: never a raw line
    assert not any("\nstatic int pwned" in t for t in files.values())
    code = main(["check", str(p), "-t", "ascend"])
    out, err = capsys.readouterr()
    assert code == 0 and out.rstrip().splitlines()[-1].startswith("PASS"), (out, err)
    assert not flag.exists()


@pytest.mark.parametrize("name", ["../../escape/evil", "/tmp/megafuse-abs-evil", "a/b/c", "n" * 300, "..",
                                  "CON", "b0_fused", "B0_FUSED"],
                         ids=["dotdot", "absolute", "slashes", "300-chars", "dotdot-only", "dos-name", "safe",
                              "case-twin"])
def test_node_names_never_become_paths(name, tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    onnx.save(renamed(name), work / "m.onnx")
    code = main(["compile", "m.onnx", "-t", "ascend", "-o", "out"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert _tree(tmp_path) - {"work/m.onnx", "work"} and all(
        p == "work/m.onnx" or p.startswith("work/out") or p == "work" for p in _tree(tmp_path))
    assert not Path("/tmp/megafuse-abs-evil").exists()
    names = [p.name for p in (work / "out").iterdir()]
    assert all(len(n) < 100 for n in names)
    doc = json.loads((work / "out" / "compile.json").read_text())
    (b,) = doc["fused_blocks"]
    assert b["model_name"] == name + "_fused"   # the fused node is named after the DW node
    assert b["name"] == name + "_fused" if name in ("b0_fused", "B0_FUSED", "CON") else b["name"].startswith("block_0_")


def test_two_blocks_whose_names_fold_together_get_distinct_files(tmp_path, capsys):
    from fusion.core.sanitize import block_ident

    taken: set[str] = set()
    assert block_ident("a_b", 0, taken) == "a_b" and block_ident("aB", 1, taken).startswith("block_1_")


def test_control_characters_in_names_are_escaped_on_the_terminal(tmp_path, capsys):
    p = tmp_path / "m.onnx"
    m = renamed("\x1b[2J\x1b]0;title\x07name\r")
    m.graph.node[1].name = "\x1b[31mbn\x1b[0m"   # refused/fold records name it
    onnx.save(m, p)
    code = main(["compile", str(p), "--no-fuse"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out


# ---- outputs ------------------------------------------------------------------------------
def test_output_replaced_only_with_force_and_never_mixed(tmp_path, capsys):
    p1, p2 = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(renamed("first_dw"), p1)
    onnx.save(renamed("second_dw"), p2)
    out_dir = tmp_path / "out"
    assert main(["compile", str(p1), "-o", str(out_dir)]) == 0
    first = _tree(out_dir)
    assert main(["compile", str(p2), "-o", str(out_dir)]) == 2
    assert _tree(out_dir) == first
    assert main(["compile", str(p2), "-o", str(out_dir), "--force"]) == 0
    second = _tree(out_dir)
    assert not any("first" in f for f in second) and any("second" in f for f in second)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.onnx", "b.onnx", "out"]   # no temp left
    mine = tmp_path / "mine"          # not a megafuse output: never replaced, even with --force
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    assert main(["compile", str(p2), "-o", str(mine), "--force"]) == 2
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"]
    capsys.readouterr()


def test_failed_compile_leaves_no_partial_output(tmp_path, capsys, monkeypatch):
    p = tmp_path / "m.onnx"
    onnx.save(block(), p)

    def fail(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("fusion.driver.artifacts.schedule_dwsep", fail, raising=False)
    import schedules.dwsep_schedule as ds
    monkeypatch.setattr(ds, "schedule_dwsep", fail)
    code = main(["compile", str(p), "-o", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.onnx"]


# ---- real processes: FIFO, devices, signals ------------------------------------------------
def _cli(*argv, timeout=60, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TVM_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "fusion.cli.main", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env, **kw)


def test_fifo_and_dev_zero_do_not_block_or_read_forever(tmp_path):
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/zero"):
        t0 = time.perf_counter()
        r = _cli("compile", target, timeout=30)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a regular file" in r.stderr
        assert time.perf_counter() - t0 < 30


def _signals_as_in_a_shell() -> None:
    """The child starts with SIGINT / SIGTERM at their defaults, as a command typed in a shell does:
    a run launched in the background (`cmd &` in a script, nohup) inherits SIGINT ignored, and Python
    then installs no KeyboardInterrupt handler -- the signal this test sends would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _group_alive(pgid: int) -> list[int]:
    alive = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(d))
    return alive


@pytest.mark.parametrize("sig,code", [(signal.SIGKILL, -9), (signal.SIGTERM, 143), (signal.SIGINT, 130)],
                         ids=["SIGKILL", "SIGTERM", "SIGINT"])
def test_killing_tune_leaves_no_process(sig, code, tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(models.dwsep_block(cin=64, cout=128, h=56), model)
    env = dict(os.environ, PYTHONPATH=str(ROOT), TVM_NUM_THREADS="1")
    p = subprocess.Popen([sys.executable, "-m", "fusion.cli.main", "tune", str(model), "--no-db", "--workers", "2",
                          "--quiet", "--exhaustive"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, env=env, text=True, preexec_fn=_signals_as_in_a_shell)
    try:
        t0 = time.time()
        while len(_group_alive(p.pid)) < 3 and time.time() - t0 < 60:   # tune + 2 workers (+ tracker)
            time.sleep(0.1)
        assert len(_group_alive(p.pid)) >= 3, "tune did not start its workers"
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)     # the pipes close: nobody holds them
        assert p.returncode == code
        if sig != signal.SIGKILL:
            assert err.splitlines() == [f"megafuse: {'terminated' if sig == signal.SIGTERM else 'interrupted'}"]
        else:
            assert err == ""
        deadline = time.time() + 10
        while _group_alive(p.pid) and time.time() < deadline:
            time.sleep(0.1)
        assert _group_alive(p.pid) == []
    finally:
        for pid in _group_alive(p.pid):
            os.kill(pid, signal.SIGKILL)
