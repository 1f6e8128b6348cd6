"""The program's loop formulas (schedules/loops.py): the C++ the kernels get computes what the
program builder computes (compiled and run on the host), and no kernel template spells loop
arithmetic of its own."""

import itertools
import re
import shutil
import subprocess
from importlib.resources import files

import pytest

from fusion.codegen.ascendc.loop_cxx import camel, expr_cxx, loop_functions
from schedules import loops
from schedules.loops import FORMULAS, parse

# arguments per parameter name: the ranges the kernels use (WINDOW_START and WINDOW_VALID see
# negative window starts: padding above / left of the image)
VALUES = {"lo": range(-3, 12), "pad_lo": range(0, 4)}
DEFAULT = range(0, 9)
POSITIVE = {"step", "cores", "inner", "tiles_h", "tiles_w", "size", "per_image", "span", "stride", "k", "t",
            "parts", "frac", "mine", "m_tiles", "g", "co"}


def _cases(params):
    ranges = [VALUES.get(p, range(1, 9) if p in POSITIVE else DEFAULT) for p in params]
    return list(itertools.product(*ranges))


def test_every_formula_has_its_python_function():
    for name in FORMULAS:
        fn = getattr(loops, name.lower())
        assert fn.__name__ == name.lower()


def test_split_and_round_robin_from_the_formulas():
    assert loops.split(10, 4) == (4, 4, 2)
    assert loops.split(8, 4) == (4, 4)
    assert loops.round_robin(5, 3) == ((0, 3), (1, 4), (2,))
    assert loops.round_robin(2, 4) == ((0,), (1,), (), ())   # cores past the units get none
    assert loops.contiguous(5, 3) == ((0, 1), (2, 3), (4,))   # balanced ranges, the first ones longer
    assert loops.contiguous(2, 4) == ((0,), (1,), (), ())
    assert loops.contiguous(48, 24)[5] == (10, 11)


def test_rendering():
    assert camel("BLOCK_LEN") == "BlockLen" and camel("tiles_h") == "tilesH" and camel("lo") == "lo"
    assert expr_cxx(parse("Min(step, total - q * step)")) == "LoopMin(step, (total - (q * step)))"
    assert expr_cxx(parse("a // b if a < b else 0")) == "((a < b) ? (a / b) : 0)"
    with pytest.raises(ValueError, match="unsupported"):
        expr_cxx(parse("a ** 2"))
    with pytest.raises(ValueError, match="unsupported"):
        expr_cxx(parse("abs(a)"))


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host C++ compiler")
def test_cxx_functions_equal_the_python_ones(tmp_path):
    """Every formula, rendered as the kernels get it, compiled with g++ and evaluated over a grid
    of arguments (signed window starts included): the same values as the Python functions."""
    calls, expected = [], []
    for name, (params, _expr) in FORMULAS.items():
        fn = getattr(loops, name.lower())
        for args in _cases(params):
            calls.append(f"    std::printf(\"%d\\n\", {camel(name)}({', '.join(map(str, args))}));")
            expected.append(fn(*args))
    src = tmp_path / "loops.cpp"
    src.write_text("#include <cstdint>\n#include <cstdio>\n#define __aicore__\n" + loop_functions()
                   + "int main()\n{\n" + "\n".join(calls) + "\n    return 0;\n}\n")
    exe = tmp_path / "loops"
    subprocess.run(["g++", "-std=c++20", "-O0", "-Wall", "-Werror", "-o", str(exe), str(src)], check=True)
    got = [int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    assert len(expected) > 2000
    assert got == expected


# the loop arithmetic the templates spelled before they called the formulas: a tile or unit loop
# stepping by the core count, a block start / ragged length, a unit or tile decode
_SPELLED = [
    re.compile(r"\+=\s*(GetBlockNum\(\)|tl\.(blockDim|gemmCores|epiCores))"),
    re.compile(r"\*\s*tl\.(cib|cob|bm|kb)\b"),
    re.compile(r"\b(ht|wt|tile)\s*\*\s*tl\.(th|tw)\b"),
    re.compile(r"[%/]\s*tl\.(ciSteps|coSteps|tilesW|tilesH)\b"),
    re.compile(r"tl\.(c1|co1|oh|ow|mAl)\s*-\s*\w+\s*<\s*tl\."),
    re.compile(r"\bk\s*\*\s*tl\.blockDim"),
]


def test_templates_call_the_formulas_instead_of_spelling_loop_arithmetic():
    found = []
    for path in sorted((files("fusion.codegen.ascendc") / "templates").iterdir()):
        if not path.name.endswith((".h", ".cpp")) or path.name.startswith("loopnest_"):
            continue   # (loopnest_*.h are the generated files' header comments)
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0]
            if any(p.search(code) for p in _SPELLED):
                found.append(f"{path.name}:{i}: {line.strip()}")
    assert not found, "\n".join(found)
    text = "".join(p.read_text() for p in (files("fusion.codegen.ascendc") / "templates").iterdir() if p.name.endswith(".h"))
    for fn in ("UnitsOf", "UnitAt", "BlockStart", "BlockLen", "UnitOuter", "UnitInner", "TileRow", "WindowValid"):
        assert f"{fn}(" in text
