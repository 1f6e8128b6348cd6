"""Which ONNX operators the importer converts, and the one error that lists every operator of a
model it does not (with counts), so a user sees the whole gap at once instead of one op per run."""

from __future__ import annotations

from typing import Callable

from fusion.frontend.const_eval import FOLD_ONLY
from fusion.core.errors import UnsupportedModelError
from fusion.frontend import onnx_ops_index, onnx_ops_quant, onnx_ops_shape, onnx_ops_vision


def extra_converters(base: dict[str, Callable]) -> dict[str, Callable]:
    """The vision and data-movement converters, plus the shape-arithmetic operators that exist
    only as constants (folded by fusion.frontend.const_eval before any converter runs). `base` is the
    importer's own table: Div and ReduceMean extend its forms and delegate to it."""

    table: dict[str, Callable] = {op: onnx_ops_shape.fold_only for op in FOLD_ONLY}
    table.update(onnx_ops_vision.CONVERTERS)
    table.update(onnx_ops_shape.CONVERTERS)
    table.update(onnx_ops_quant.CONVERTERS)
    table.update(onnx_ops_index.CONVERTERS)  # run-time Where/Gather delegate to the constant forms
    table["Div"] = onnx_ops_vision.div(base["Div"])
    table["ReduceMean"] = onnx_ops_vision.reduce_mean(base["ReduceMean"])
    return table


def check_supported(nodes, names: list[str], supported) -> None:
    """Raise one UnsupportedModelError naming every unsupported operator, its count and a node."""
    found: dict[str, list[str]] = {}
    for n, name in zip(nodes, names):
        if n.domain not in ("", "ai.onnx"):
            op = f"{n.domain}.{n.op_type}"
        elif n.op_type not in supported:
            op = n.op_type
        else:
            continue
        found.setdefault(op, []).append(name)
    if not found:
        return
    if len(found) == 1 and len(next(iter(found.values()))) == 1:
        (op, (node,)), = found.items()
        raise UnsupportedModelError(f"unsupported operator '{op}' (node '{node}')")
    total = sum(len(v) for v in found.values())
    parts = [f"'{op}' x{len(v)} ({'first ' if len(v) > 1 else ''}node '{v[0]}')"
             for op, v in sorted(found.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    raise UnsupportedModelError(f"{len(found)} unsupported operators in {total} nodes: "
                                f"{', '.join(parts)}")
