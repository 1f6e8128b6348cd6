"""The program's loop formulas (schedules/loops.py) as C++: one __aicore__ inline function each,
put into every kernel's prelude (slot LOOP_FNS), so the templates call BlockLen(q, tl.cob, tl.co1)
where they used to spell the arithmetic."""

from __future__ import annotations

import ast
import functools

from fusion.codegen.ascendc.cxx import snippet, sub
from schedules.loops import FORMULAS, parse

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/", ast.Mod: "%"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def camel(name: str) -> str:
    """BLOCK_LEN -> BlockLen; tiles_h -> tilesH."""
    head, *rest = name.lower().split("_")
    if name.isupper():
        return "".join(p.capitalize() for p in (head, *rest))
    return head + "".join(p.capitalize() for p in rest)


def expr_cxx(node: ast.expr) -> str:
    """C++ text of a formula's syntax tree (every compound fully parenthesised)."""
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return f"({expr_cxx(node.left)} {_OPS[type(node.op)]} {expr_cxx(node.right)})"
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
        return f"({expr_cxx(node.left)} {_CMP[type(node.ops[0])]} {expr_cxx(node.comparators[0])})"
    if isinstance(node, ast.IfExp):
        return f"({expr_cxx(node.test)} ? {expr_cxx(node.body)} : {expr_cxx(node.orelse)})"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Min", "Max") \
            and len(node.args) == 2 and not node.keywords:
        a, b = (expr_cxx(x) for x in node.args)
        return f"Loop{node.func.id}({a}, {b})"
    if isinstance(node, ast.Name):
        return camel(node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return str(node.value)
    raise ValueError(f"loop formula: unsupported syntax {ast.dump(node)}")


@functools.cache
def loop_functions() -> str:
    """The __aicore__ functions of every loop formula (int32_t throughout: WINDOW_START may be
    negative; the other values are small non-negative counts and offsets)."""
    out = [snippet("LOOP_MINMAX")]
    for name, (params, expr) in FORMULAS.items():
        out.append(sub(snippet("LOOP_FN"), NAME=camel(name), PARAMS=", ".join(f"int32_t {camel(p)}" for p in params),
                       EXPR=expr_cxx(parse(expr)), FORMULA=f"{name}({', '.join(params)}) = {expr}"))
    return "".join(out)
