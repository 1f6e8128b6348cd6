"""Refusal records: every 'no' of a pass says what, why and with which numbers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Refusal:
    pass_name: str            # fold_bn | fuse_dwsep | ...
    nodes: tuple[str, ...]    # the candidate (first node = anchor)
    reason: str               # one line, with the numbers
    kind: str = "legality"    # legality | profitability

    def describe(self) -> str:
        return f"[{self.pass_name}] {self.nodes[0]}: {self.reason}"

    def to_json(self) -> dict:
        return {"pass": self.pass_name, "nodes": list(self.nodes), "reason": self.reason, "kind": self.kind}
