"""The two-phase tile search's wide DW tiles (fusion/driver/tile_policy._two_phase_best): finalists of
their own, so the choice is never slower than without them, and faster where the simulator says so."""

import pytest

import fusion.driver.tile_policy as tp
from fusion.cost import model_block
from schedules.targets import parse_target
from schedules.workload import DwSepWorkload


def _body(plan) -> float:
    k = model_block(plan, timeline=False)
    return k.time_us - k.launch_us


def _in_chain_plan(monkeypatch, wl, target, wide_finalists):
    monkeypatch.setattr(tp, "TWO_PHASE_WIDE_FINALISTS", wide_finalists)
    monkeypatch.setattr(tp, "_TWO_PHASE_BEST", {})
    return tp.two_phase_plan(wl, target, in_chain=True)


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
def test_wide_finalists_never_slow_the_choice(monkeypatch, soc):
    # MobileNetV1's b3 (128 -> 128 at 56x56): on 910B2 a 19x28 tile beats the narrow shapes (MODELED)
    wl = DwSepWorkload(1, 128, 128, 56, 56, (3, 3), (1, 1), (1, 1, 1, 1), "relu", "relu", False, "float16")
    target = parse_target(f"sim:{soc}")
    without = _in_chain_plan(monkeypatch, wl, target, 0)
    with_wide = _in_chain_plan(monkeypatch, wl, target, 2)
    assert _body(with_wide) <= _body(without) + 1e-12
    if soc == "ascend910b2":
        assert with_wide.tile.tw in (28, 56) and _body(with_wide) < _body(without) - 0.05
