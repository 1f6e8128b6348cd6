"""Property-based fuzzing of random DW-separable chains against ONNX Runtime on llvm and sim.

A bounded, derandomized slice runs by default (a few chains, well under a minute); the long run
(>= 1,000 chains, counted, timed, with a JSON result) is benchmarks/fuzz_chains.py."""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from fusion.verify.fuzz import check_on  # noqa: E402
from models.random_chain import BlockSpec, ChainSpec, build_chain, chain_strategy  # noqa: E402

DEFAULT_EXAMPLES = 6


@settings(max_examples=DEFAULT_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(chain_strategy())
def test_random_chains_match_onnxruntime(spec):
    model = build_chain(spec)
    for target in ("llvm", "sim"):
        out = check_on(model, target)
        assert out.passed, (spec, out)


def test_a_fusable_chain_is_fused_and_matches():
    """The strategy's space includes chains that fuse (a fuzzer that never fuses proves little)."""
    spec = ChainSpec(5, 9, 11, (BlockSpec(19, 5, 2, (0, 2, 3, 1), True, "hardswish", "relu6"),
                                BlockSpec(19, 3, 1, (1, 1, 1, 1), False, "relu", "none", residual=True)),
                     dtype="float16", hswish_form="hardsigmoid")
    for target in ("llvm", "sim"):
        out = check_on(build_chain(spec), target)
        assert out.passed and out.fused_blocks == 2, out
