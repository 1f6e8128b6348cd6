"""A small writer for MLIR text: memref types, SSA names, hoisted constants, nested regions."""

from __future__ import annotations

from dataclasses import dataclass

ELEM = {"float16": "f16", "float32": "f32"}
ELEM_BYTES = {"f16": 2, "f32": 4}


@dataclass(frozen=True)
class MemRef:
    shape: tuple[int, ...]
    elem: str                      # f16 | f32
    space: str                     # gm | ub
    strides: tuple[int, ...] | None = None   # None: contiguous, identity layout

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        layout = "" if self.strides is None else \
            f", strided<[{', '.join(str(s) for s in self.strides)}], offset: ?>"
        return f"memref<{dims}x{self.elem}{layout}, #hivm.address_space<{self.space}>>"

    @property
    def row_major(self) -> tuple[int, ...]:
        if self.strides is not None:
            return self.strides
        out, acc = [], 1
        for d in reversed(self.shape):
            out.append(acc)
            acc *= d
        return tuple(reversed(out))

    @property
    def nbytes(self) -> int:
        n = ELEM_BYTES[self.elem]
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class Value:
    name: str
    type: MemRef


class Writer:
    """Collects the body of one func.func; index/float constants are hoisted to its top."""

    def __init__(self):
        self.lines: list[str] = []
        self.consts: dict[str, str] = {}
        self.depth = 2
        self.counter = 0

    def fresh(self, hint: str) -> str:
        self.counter += 1
        return f"%{hint}{self.counter}"

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def index(self, v: int) -> str:
        name = f"%c{v}" if v >= 0 else f"%cm{-v}"
        self.consts.setdefault(name, f"{name} = arith.constant {v} : index")
        return name

    def scalar(self, v: float, elem: str) -> str:
        text = repr(float(v))
        if "." not in text:   # MLIR float literals need a dot: 1e+20 -> 1.0e+20
            text = text.replace("e", ".0e", 1)
        tag = text.replace(".", "p").replace("-", "m").replace("+", "")
        name = f"%{elem}_{tag}"
        self.consts.setdefault(name, f"{name} = arith.constant {text} : {elem}")
        return name

    # --- structure ---------------------------------------------------------------------------
    def open_for(self, lo: str, hi: str, step: str, hint: str) -> str:
        iv = self.fresh(hint)
        self.emit(f"scf.for {iv} = {lo} to {hi} step {step} {{")
        self.depth += 1
        return iv

    def close(self) -> None:
        self.depth -= 1
        self.emit("}")

    def close_n(self, n: int) -> None:
        for _ in range(n):
            self.close()

    # --- values ------------------------------------------------------------------------------
    def alloc(self, hint: str, t: MemRef) -> Value:
        v = Value(self.fresh(hint), t)
        self.emit(f"{v.name} = memref.alloc() : {t}")
        return v

    def subview(self, src: Value, offsets: list[str], sizes: tuple[int, ...],
                steps: tuple[int, ...] | None = None, hint: str = "sv") -> Value:
        steps = steps or (1,) * len(sizes)
        strides = tuple(s * k for s, k in zip(src.type.row_major, steps))
        t = MemRef(tuple(sizes), src.type.elem, src.type.space, strides)
        v = Value(self.fresh(hint), t)
        self.emit(f"{v.name} = memref.subview {src.name}[{', '.join(offsets)}] "
                  f"[{', '.join(str(s) for s in sizes)}] [{', '.join(str(k) for k in steps)}] "
                  f": {src.type} to {t}")
        return v

    def arith(self, op: str, a: str, b: str, hint: str = "i") -> str:
        name = self.fresh(hint)
        self.emit(f"{name} = arith.{op} {a}, {b} : index")
        return name

    def op(self, name: str, ins: list, out: Value, attrs: str = "") -> None:
        """hivm.hir.NAME ins(...) outs(...): ins are Values or (ssa, elem) scalars."""
        names = ", ".join(i.name if isinstance(i, Value) else i[0] for i in ins)
        types = ", ".join(str(i.type) if isinstance(i, Value) else i[1] for i in ins)
        tail = f" {attrs}" if attrs else ""
        self.emit(f"hivm.hir.{name} ins({names} : {types}) outs({out.name} : {out.type}){tail}")

    def body(self) -> list[str]:
        return ["    " + c for c in self.consts.values()] + self.lines
