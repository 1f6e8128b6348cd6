"""The hostile-model fuzzer: valid models mutated the way an attacker or a careless exporter would
(attributes, shapes, names, initializers, external data, versions), each run through the CLI.

A case holds when: the exit code is 0 (stderr: warning lines only; `-o` holds a complete set) or
2 (exactly one printable `megafuse: error:` line that is not an internal error), it ends within
CASE_SECONDS, nothing outside its work folder changed, and no file it was given was deleted or
altered. Anything else is a finding: crash (internal error, traceback, other exit code),
multi-line, hang, escape. Shared by tests/cli/test_hostile_fuzz.py (a bounded run) and
benchmarks/fuzz_hostile.py (the long run); a mutation is plain data, so a finding replays.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import models
from fusion.cli.main import main

CASE_SECONDS = 60
KINDS = ("attr", "shape", "name", "initializer", "external", "version", "output")
HOSTILE_FLOATS = (0.0, -0.0, -1.0, 1e-45, 1e30, 3.5e38, float("inf"), float("-inf"), float("nan"))
HOSTILE_INTS = (0, -1, 1, 2, 3, 7, 2**31, -(2**63), 2**62, 65536)
HOSTILE_NAMES = ("", "x", "y", "../../escape", "/etc/passwd", "\x1b[2J\x1b[31mred", "a\nb\rc", "CON", "a" * 5000,
                 "名字", "\u202egnp.exe", "%s%n", "w_dw", "block.0/conv", ".", "..")
LOCATIONS = ("w.bin", "sub/w.bin", "../w.bin", "/etc/hostname", "missing.bin", "w.bin\0x", "", "link.bin")
OP_ATTRS = {   # the attributes each operator of the bases has, with their ONNX types
    "Conv": (("group", "i"), ("strides", "ints"), ("pads", "ints"), ("kernel_shape", "ints"), ("dilations", "ints"),
             ("auto_pad", "s")),
    "BatchNormalization": (("epsilon", "f"), ("momentum", "f")),
    "LeakyRelu": (("alpha", "f"),), "HardSigmoid": (("alpha", "f"), ("beta", "f")),
    "Clip": (("min", "f"), ("max", "f")),
}
ATTRS = ("alpha", "beta", "epsilon", "group", "strides", "pads", "kernel_shape", "dilations", "auto_pad",
         "min", "max", "axis", "transB", "momentum")


def bases() -> list[onnx.ModelProto]:
    """Small valid models the mutations start from (seconds to compile)."""
    return [models.dwsep_block(cin=16, cout=16, h=8),
            models.dwsep_block(cin=16, cout=32, h=6, w=5, stride=2, act1="relu6", act2="hardswish", opset=14),
            models.dwsep_block(cin=16, cout=16, h=8, residual=True, act2="none", fold_bn=True)]


@dataclass(frozen=True)
class Mutation:
    kind: str
    pick: int          # which node / input / initializer (modulo how many there are)
    choice: int        # which hostile value / name / location
    extra: int = 0     # a second index (an attribute, a dimension, an offset)


@dataclass(frozen=True)
class Outcome:
    mutations: tuple
    argv: tuple
    code: int
    stderr_first: str
    seconds: float
    finding: str = ""   # "" when the case held

    def to_json(self) -> dict:
        return {"mutations": [m.__dict__ for m in self.mutations], "argv": list(self.argv), "code": self.code,
                "stderr_first": self.stderr_first[:300], "seconds": round(self.seconds, 3), "finding": self.finding}


# ---- mutations -------------------------------------------------------------------------------
def mutate(model: onnx.ModelProto, muts, work: Path) -> onnx.ModelProto:
    """Apply the mutations; files external data needs are written into `work`."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for mu in muts:
        try:
            with np.errstate(all="ignore"):
                globals()[f"_m_{mu.kind}"](m, mu, work)
        except Exception:  # noqa: BLE001 - onnx helpers raise their own types
            pass   # the mutation does not apply to what earlier ones left (the generator's limit, not a finding)
    return m


def _m_attr(m, mu, work):
    """Mostly an attribute the operator has, with a hostile value of its own type (so the case gets
    past the ONNX checker into import and the passes); sometimes any attribute, any type."""
    node = m.graph.node[mu.pick % len(m.graph.node)]
    own = OP_ATTRS.get(node.op_type)
    typed = own is not None and mu.choice % 5 != 4
    name, kind = own[mu.extra % len(own)] if typed else (ATTRS[mu.extra % len(ATTRS)], None)
    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            break
    v = {"f": 0, "i": 1, "ints": 2, "s": 3}[kind] if typed else mu.choice % 4
    if v == 0:
        value = HOSTILE_FLOATS[mu.choice // 4 % len(HOSTILE_FLOATS)]
    elif v == 1:
        value = HOSTILE_INTS[mu.choice // 4 % len(HOSTILE_INTS)]
    elif v == 2:
        value = [HOSTILE_INTS[(mu.choice // 4 + k) % len(HOSTILE_INTS)] for k in range(mu.choice // 4 % 5)]
        if not value:
            return   # an empty list has no attribute type: the attribute stays removed
    else:
        value = HOSTILE_NAMES[mu.choice // 4 % len(HOSTILE_NAMES)].encode("utf-8", "surrogatepass")
    node.attribute.append(helper.make_attribute(name, value))


def _m_shape(m, mu, work):
    vis = list(m.graph.input) + list(m.graph.output)
    vi = vis[mu.pick % len(vis)]
    dims = vi.type.tensor_type.shape.dim
    c = mu.choice % 6
    if c == 5:
        vi.type.tensor_type.ClearField("shape")
        return
    if c == 4:
        dims.add().dim_value = HOSTILE_INTS[mu.extra % len(HOSTILE_INTS)] % (2**62)
        return
    if not len(dims):
        return
    d = dims[mu.extra % len(dims)]
    if c == 0:
        d.dim_value = 0
    elif c == 1:
        d.dim_param = HOSTILE_NAMES[mu.extra % len(HOSTILE_NAMES)] or "N"
    elif c == 2:
        d.dim_value = 2**31 + mu.extra
    else:
        d.dim_value = 1 + mu.extra % 97


def _m_name(m, mu, work):
    """Rename a node, or a tensor everywhere it appears (consistent), or in one place only."""
    new = HOSTILE_NAMES[mu.choice % len(HOSTILE_NAMES)]
    mode = mu.extra % 3
    if mode == 0:
        m.graph.node[mu.pick % len(m.graph.node)].name = new
        return
    tensors = sorted({t for n in m.graph.node for t in list(n.input) + list(n.output) if t})
    old = tensors[mu.pick % len(tensors)]
    for n in m.graph.node:
        for seq in (n.input, n.output):
            for i, t in enumerate(seq):
                if t == old and (mode == 1 or n is m.graph.node[0]):
                    seq[i] = new
    if mode == 1:
        for seq in (m.graph.input, m.graph.output, m.graph.value_info):
            for vi in seq:
                if vi.name == old:
                    vi.name = new
        for t in m.graph.initializer:
            if t.name == old:
                t.name = new


def _m_initializer(m, mu, work):
    if not len(m.graph.initializer):
        return
    t = m.graph.initializer[mu.pick % len(m.graph.initializer)]
    a = numpy_helper.to_array(t)
    c = mu.choice % 8
    if c == 0:
        a = a.copy()
        a.flat[mu.extra % a.size] = HOSTILE_FLOATS[mu.extra % len(HOSTILE_FLOATS)]
        t.CopyFrom(numpy_helper.from_array(a.astype(a.dtype), t.name))
    elif c == 1:
        t.CopyFrom(numpy_helper.from_array(a.reshape(-1), t.name))                 # wrong rank
    elif c == 2:
        t.CopyFrom(numpy_helper.from_array(a.astype([np.float16, np.float64, np.int64, np.int8][mu.extra % 4]),
                                           t.name))
    elif c == 3:
        t.raw_data = t.raw_data[: len(t.raw_data) // (2 + mu.extra % 3)]           # truncated data
    elif c == 4:
        m.graph.initializer.append(t)                                               # defined twice
    elif c == 5:
        del m.graph.initializer[mu.pick % len(m.graph.initializer)]                 # gone
    elif c == 6:
        t.dims[0] = t.dims[0] * 2 + mu.extra % 3                                    # dims disagree with data
    else:
        x = m.graph.input[0]                                                        # shadows the input
        shape = [d.dim_value or 1 for d in x.type.tensor_type.shape.dim]
        m.graph.initializer.append(numpy_helper.from_array(np.ones(shape, np.float32), x.name))


def _m_external(m, mu, work):
    if not len(m.graph.initializer):
        return
    t = m.graph.initializer[mu.pick % len(m.graph.initializer)]
    data = t.raw_data or numpy_helper.from_array(numpy_helper.to_array(t)).raw_data
    where = LOCATIONS[mu.choice % len(LOCATIONS)]
    offset = (0, 0, 8, 1 << 40, -4)[mu.extra % 5]
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", where), ("offset", str(offset)), ("length", str(len(data)))):
        e = t.external_data.add()
        e.key, e.value = key, value
    if where in ("w.bin", "sub/w.bin") and offset >= 0 and offset < 1 << 20:
        f = work / where
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"\0" * offset + (data if mu.extra % 2 == 0 else data[: len(data) // 2]))
    elif where == "link.bin":
        with contextlib.suppress(FileExistsError):
            os.symlink("/dev/zero" if mu.extra % 2 else "/etc/hostname", work / where)


def _m_version(m, mu, work):
    if mu.extra % 2:
        m.ir_version = HOSTILE_INTS[mu.choice % len(HOSTILE_INTS)] % 100
    else:
        m.opset_import[0].version = HOSTILE_INTS[mu.choice % len(HOSTILE_INTS)] % 100


def _m_output(m, mu, work):
    """Graph outputs that are inputs, initializers, duplicates, or nothing."""
    c = mu.choice % 4
    names = [m.graph.input[0].name] + [t.name for t in m.graph.initializer] + [n.output[0] for n in m.graph.node]
    name = names[mu.pick % len(names)]
    if c == 0:
        m.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    elif c == 1:
        m.graph.output.append(m.graph.output[0])
    elif c == 2:
        del m.graph.output[:]
        m.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    else:
        m.graph.output[0].name = HOSTILE_NAMES[mu.extra % len(HOSTILE_NAMES)]


# ---- running a case ---------------------------------------------------------------------------
def _snapshot(root: Path, skip: Path) -> dict[str, str]:
    """Every path under root (outside `skip`) with a digest of its content."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        d = Path(dirpath)
        if d == skip or skip in d.parents:
            continue
        for name in dirnames + filenames:
            p = d / name
            if p == skip:
                continue
            if p.is_symlink():
                out[str(p)] = "link:" + os.readlink(p)
            elif p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[str(p)] = "dir"
    return out


class _Timeout(BaseException):
    pass


def run_case(base: onnx.ModelProto, muts, root: Path, command: str = "compile") -> Outcome:
    """One case in a fresh folder `root/work` (root holds a sentinel file outside it)."""
    work = root / "work"
    work.mkdir(parents=True)
    (root / "sentinel.txt").write_text("outside the work folder")
    m = mutate(base, muts, work)
    (work / "m.onnx").write_bytes(m.SerializeToString())
    given = _snapshot(work, work / "out")
    outside = _snapshot(root, work)
    argv = ["compile", "m.onnx", "--no-db", "-o", "out"] if command == "compile" else \
        ["check", "m.onnx", "--no-db", "-t", "llvm"]
    cwd = os.getcwd()
    err, out = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(CASE_SECONDS)
    t0 = time.perf_counter()
    hung = False
    try:
        os.chdir(work)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(argv)
    except _Timeout:
        code, hung = -1, True
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(cwd)
    seconds = time.perf_counter() - t0
    text = err.getvalue()
    lines = text.splitlines()
    finding = judge(code, text, lines, hung, command)
    now_given = _snapshot(work, work / "out")
    if not finding and any(now_given.get(k) != v for k, v in given.items()):
        finding = "escape: a given file was deleted or altered"
    if not finding and _snapshot(root, work) != outside:
        finding = "escape: something outside the work folder changed"
    if not finding and code == 0 and command == "compile" and not (work / "out" / ".megafuse-output").is_file():
        finding = "exit 0 without a complete -o set"
    return Outcome(tuple(muts), tuple(argv), code, lines[0] if lines else "", seconds, finding)


def judge(code: int, text: str, lines: list[str], hung: bool, command: str) -> str:
    if hung:
        return f"hang: more than {CASE_SECONDS} s"
    if "Traceback" in text:
        return "crash: traceback"
    if code == 2:
        if len(lines) != 1 or not text.endswith("\n"):
            return f"multi-line: {len(lines)} lines on stderr"
        if not lines[0].startswith("megafuse: error: ") or not lines[0].isprintable():
            return "error line not in the contract"
        if "internal error" in lines[0]:
            return "crash: internal error"
        return ""
    if code == 0 or (code == 1 and command == "check"):
        bad = [ln for ln in lines if not ln.startswith("megafuse: warning: ") or not ln.isprintable()]
        return f"stderr not warnings only: {bad[0][:80]!r}" if bad else ""
    return f"crash: exit code {code}"


def _on_alarm(signum, frame):
    raise _Timeout()


def mutation_strategy(max_mutations: int = 3):
    """Hypothesis: (base index, mutations, command)."""
    from hypothesis import strategies as st

    mut = st.builds(Mutation, st.sampled_from(KINDS), st.integers(0, 63), st.integers(0, 255), st.integers(0, 63))
    return st.tuples(st.integers(0, len(bases()) - 1), st.lists(mut, min_size=1, max_size=max_mutations),
                     st.sampled_from(("compile", "compile", "compile", "check")))
