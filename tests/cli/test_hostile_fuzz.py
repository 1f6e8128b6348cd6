"""The hostile-model fuzzer, bounded (the long run: benchmarks/fuzz_hostile.py): mutated models
through the CLI; every case ends in one error line + exit 2 or a clean success, in bounded time,
with nothing written outside its folder and no given file altered (fusion/hostile_fuzz.judge)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from fusion.cli.hostile_fuzz import Mutation, bases, judge, mutation_strategy, run_case

BASES = bases()


@seed(20261127)
@settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck),
          phases=(Phase.generate,))
@given(mutation_strategy())
def test_mutated_models_hold_the_contract(tmp_path_factory, case):
    base, muts, command = case
    o = run_case(BASES[base], muts, tmp_path_factory.mktemp("case"), command)
    assert not o.finding, (o.finding, o.stderr_first, muts, command)


@pytest.mark.parametrize("mut,words", [
    (Mutation("external", 0, 2, 0), "not a file inside the model's directory"),    # ../w.bin
    (Mutation("external", 0, 3, 0), "not a file inside the model's directory"),    # /etc/hostname
    (Mutation("external", 0, 4, 0), "No such file"),                               # missing.bin
    (Mutation("initializer", 0, 7, 0), None),                                      # initializer shadows x
    (Mutation("attr", 1, 4 * 6 + 0, 2), "epsilon = inf is not finite"),             # BN epsilon = inf
    (Mutation("output", 1, 0, 0), None),                                           # an initializer as output
])
def test_replayed_mutations(tmp_path, mut, words):
    o = run_case(BASES[0], (mut,), tmp_path)
    assert not o.finding, (o.finding, o.stderr_first)
    if words:
        assert o.code == 2 and words in o.stderr_first, o.stderr_first


def test_the_judge_flags_what_breaks_the_contract():
    assert judge(2, "megafuse: error: internal error: KeyError\n", ["megafuse: error: internal error: KeyError"],
                 False, "compile").startswith("crash")
    assert judge(2, "a\nb\n", ["a", "b"], False, "compile").startswith("multi-line")
    assert judge(0, "Traceback...\n", ["Traceback..."], False, "compile").startswith("crash")
    assert judge(120, "", [], False, "compile").startswith("crash")
    assert judge(-1, "", [], True, "compile").startswith("hang")
    assert judge(0, "megafuse: warning: w\n", ["megafuse: warning: w"], False, "compile") == ""
