"""The epilogue of a conv kernel: + bias, the activation, + residual, cast on store.

A Conv node that passes/conv_epilogue merged with its activation and residual Add carries
`epilogue_act` and `residual` (input 3); every conv kernel (schedules/cpu_conv, the generic and
blocked ones of schedules/ops) builds its output stage "y" through `Epilogue`, so the three agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import te

from schedules.activations import te_expr
from schedules.dwsep_te import ACC


@dataclass(frozen=True)
class Epilogue:
    act: str = "none"
    residual: str | None = None   # tensor name of the Add's other operand

    @staticmethod
    def of(n) -> "Epilogue":
        res = n.inputs[3] if n.attr("residual", False) and len(n.inputs) > 3 else None
        return Epilogue(n.attr("epilogue_act", "none") or "none", res)

    def placeholders(self, out_shape, dtype: str) -> list:
        """[R] when there is a residual (the kernel's parameter after the bias), else []."""
        return [te.placeholder(tuple(int(s) for s in out_shape), dtype, name="r")] if self.residual else []

    def params(self) -> tuple:
        return (self.residual,) if self.residual else ()

    def value(self, acc, idx, phs: list):
        """act(acc) (+ residual) in fp32; `acc` = conv + bias at output index `idx`."""
        v = te_expr(acc, self.act)
        if phs:
            v = v + phs[0](*idx).astype(ACC)
        return v
