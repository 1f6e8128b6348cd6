"""A NumPy interpreter for the subset of HIVM-level MLIR that fusion/npuir emits.

The vendor's CPU runner cannot execute these modules (see fusion/codegen/npuir/check.py), so the tests run
them here instead: buffers are NumPy arrays, memref.subview is a strided NumPy view, hivm.hir ops
are elementwise NumPy on those views. UB allocations start as NaN, so reading scratch or a buffer
before it is written poisons the output. Every core's program runs in turn (get_block_idx = core).
"""

from __future__ import annotations

import re

import numpy as np

DT = {"f16": np.float16, "f32": np.float32}
_TYPE = re.compile(r"memref<((?:\d+x)+)(f16|f32)")
_SSA = re.compile(r"%[\w]+")
_BIN = {"vadd": np.add, "vmul": np.multiply, "vmax": np.maximum, "vmin": np.minimum, "vdiv": np.divide}
_UN = {"vexp": np.exp}
_IDX = {"addi": lambda a, b: a + b, "subi": lambda a, b: a - b, "muli": lambda a, b: a * b,
        "divui": lambda a, b: a // b, "remui": lambda a, b: a % b, "minsi": min}


def _type(text: str) -> tuple[tuple[int, ...], type]:
    m = _TYPE.search(text)
    return tuple(int(d) for d in m.group(1).rstrip("x").split("x")), DT[m.group(2)]


def _list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def parse(text: str) -> list:
    """The function body as nested statements: (kind, ...) tuples; loops hold their bodies."""
    root: list = []
    stack = [root]
    body = text.split("attributes {hacc.entry} {", 1)[1]
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith("//") or line == "return":
            continue
        if line == "}":
            if len(stack) == 1:
                break
            stack.pop()
            continue
        if line.startswith("scf.for"):
            iv, lo, hi, st = re.match(r"scf\.for (%\w+) = (%\w+) to (%\w+) step (%\w+) \{", line).groups()
            loop = ("for", iv, lo, hi, st, [])
            stack[-1].append(loop)
            stack.append(loop[5])
            continue
        stack[-1].append(_statement(line))
    return root


def _statement(line: str):
    if line.startswith("hivm.hir."):
        m = re.match(r"hivm\.hir\.(\w+) ins\(([^:]*) :.*?\) outs\((%\w+) :", line)
        return ("op", m.group(1), _list(m.group(2)), m.group(3))
    dst, rhs = (s.strip() for s in line.split("=", 1))
    if rhs.startswith("arith.constant"):
        value = rhs.split()[1]
        return ("const", dst, float(value) if rhs.endswith(("f32", "f16")) else int(value))
    if rhs.startswith("memref.alloc"):
        return ("alloc", dst, *_type(rhs))
    if rhs.startswith("memref.subview"):
        m = re.match(r"memref\.subview (%\w+)\[([^\]]*)\] \[([^\]]*)\] \[([^\]]*)\]", rhs)
        return ("subview", dst, m.group(1), _list(m.group(2)), [int(v) for v in _list(m.group(3))],
                [int(v) for v in _list(m.group(4))])
    if rhs.startswith(("memref.collapse_shape", "memref.expand_shape")):
        return ("reshape", dst, _SSA.findall(rhs)[0], _type(rhs.rsplit("into", 1)[1])[0])
    if rhs.startswith("memref.load"):
        m = re.match(r"memref\.load (%\w+)\[([^\]]*)\]", rhs)
        return ("mload", dst, m.group(1), _list(m.group(2)))
    if rhs.startswith("arith.extf"):
        return ("extf", dst, _SSA.findall(rhs)[0])
    if rhs.startswith("arith.index_cast"):
        return ("copyv", dst, _SSA.findall(rhs)[0])
    if rhs.startswith("hivm.hir.get_block_idx"):
        return ("block", dst)
    op = rhs.split()[0].removeprefix("arith.")
    a, b = _SSA.findall(rhs)
    return ("idx", dst, op, a, b)


def run(text: str, gm: dict[str, np.ndarray], cores: int) -> None:
    """Execute the module's kernel on every core; `gm` arrays (keyed by argument name without %)
    are updated in place."""
    prog = parse(text)
    for core in range(cores):
        env = {f"%{k}": v for k, v in gm.items()}
        env["__core"] = core
        _exec(prog, env)


def _exec(stmts: list, env: dict) -> None:
    for s in stmts:
        kind = s[0]
        if kind == "for":
            _, iv, lo, hi, st, body = s
            for i in range(env[lo], env[hi], env[st]):
                env[iv] = i
                _exec(body, env)
        elif kind == "op":
            _op(s[1], [env[a] for a in s[2]], env[s[3]])
        elif kind == "const":
            env[s[1]] = s[2]
        elif kind == "alloc":
            env[s[1]] = np.full(s[2], np.nan, s[3])
        elif kind == "subview":
            _, dst, src, offs, sizes, steps = s
            sl = tuple(slice(env[o], env[o] + (n - 1) * k + 1, k) for o, n, k in zip(offs, sizes, steps))
            view = env[src][sl]
            assert view.shape == tuple(sizes), (dst, view.shape, sizes)   # no out-of-bounds view
            env[dst] = view
        elif kind == "reshape":
            arr = env[s[2]]
            out = arr.reshape(s[3])
            assert np.shares_memory(out, arr)
            env[s[1]] = out
        elif kind == "mload":
            env[s[1]] = env[s[2]][tuple(env[i] for i in s[3])]
        elif kind == "extf":
            env[s[1]] = np.float32(env[s[2]])
        elif kind == "copyv":
            env[s[1]] = env[s[2]]
        elif kind == "block":
            env[s[1]] = env["__core"]
        elif kind == "idx":
            env[s[1]] = _IDX[s[2]](env[s[3]], env[s[4]])


def _op(name: str, ins: list, out: np.ndarray) -> None:
    if name in ("load", "store", "copy"):
        assert ins[0].shape == out.shape and ins[0].dtype == out.dtype
        out[...] = ins[0]
    elif name == "vcast":
        assert ins[0].shape == out.shape
        out[...] = ins[0].astype(out.dtype)
    elif name == "vbrc":
        out[...] = ins[0]
    elif name in _UN:
        assert ins[0].shape == out.shape and ins[0].dtype == out.dtype, name
        with np.errstate(over="ignore"):
            out[...] = _UN[name](ins[0])
    elif name in _BIN:
        a, b = ins
        with np.errstate(over="ignore", divide="ignore"):
            res = _BIN[name](a, b)
        assert res.shape == out.shape and a.dtype == out.dtype, (name, res.shape, out.shape)
        out[...] = res
    else:
        raise NotImplementedError(name)
