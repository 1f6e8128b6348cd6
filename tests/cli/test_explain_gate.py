"""`explain` and `compile` decide with the same fusion gate: a block that loses to its vendor-like
pair launched alone but wins inside the chain it joins is fused by compile (the fallback's chain
credit, settled over compiles), so explain must list it fused too -- and one no chain takes, refused."""

import json

import onnx
import pytest

from conftest import run_cli
from fusion.cli.explain import explain
from fusion.driver.compiler import compile_model
from fusion.driver.fallback import FusionGate
from models.mobilenet import mobilenet_v1


@pytest.fixture
def chain_only_wins(monkeypatch):
    """Every block loses alone by 1 us and wins in a chain (MODELED figures replaced)."""
    compare = FusionGate.compare
    monkeypatch.setattr(FusionGate, "compare", lambda self, wl: (compare(self, wl)[1] + 1.0, compare(self, wl)[1]))
    monkeypatch.setattr(FusionGate, "in_chain_us", lambda self, wl: 0.0)


def test_explain_lists_what_compile_fuses_with_the_chain_credit(tmp_path, capsys, chain_only_wins):
    path = tmp_path / "v1.onnx"
    onnx.save(mobilenet_v1(resolution=32, width=0.25), path)
    target = "sim:ascend910b2"
    cm = compile_model(str(path), target=target, dtype="float16", fallback=True)
    fused = {m for b in cm.fused_blocks for m in b.members}
    chained = {n for c in cm.chains for n in c.blocks}
    assert cm.chains and fused   # blocks fused for their chains' sake
    assert {b.name for b in cm.fused_blocks} <= chained   # and none left alone
    chains, _, _ = explain(str(path), target, dtype="float16", fallback=True)
    dws = {c.dw for c in chains}   # explain lists the DW chains (the classifier head fuses too, not a DW chain)
    fused_dw = fused & dws
    assert {c.dw for c in chains if c.fused} == fused_dw and fused_dw
    assert {m for c in chains if c.fused for m in c.members} <= fused
    # a plain gate (no chain credit) would have fused none of them: the case explain got wrong
    plain, _, _ = explain(str(path), target, dtype="float16", fallback=True, gate=FusionGate(cm.target))
    assert not any(c.fused for c in plain)
    # the CLI replays the gate of the compile its own options make
    code, out, _ = run_cli(capsys, "explain", str(path), "-t", target, "--dtype", "float16", "--no-db", "--json")
    assert code == 0
    doc = json.loads(out)
    assert {c["dw"] for c in doc["chains"] if c["fused"]} == fused_dw
    assert doc["fused"] == sum(c.fused for c in chains)
