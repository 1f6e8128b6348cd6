"""The architecture, checked: no import cycle between the project's modules (imports inside
functions count: they run at call time but are dependencies all the same), at most a few
function-local imports of the project's own modules (each with its reason), each module
importing only its own layer and those below it, and no module over ~600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fusion", "passes", "schedules")

# Bottom to top. A module may import its own layer and the layers before it; the package
# `fusion` itself (its __init__: the public `fusion.compile`) sits on top.
LAYERS = (
    "fusion.core",        # IR, SoC facts with their sources, errors, logging, tolerances
    "fusion.frontend",    # ONNX import, shape rules, constant folding, subgraph cut, validation
    "schedules",          # plan -> kernel program -> TE/TIR and CPU schedules; the op library
    "passes",             # graph passes (the fuse gate asks the planner whether a tile fits)
    "fusion.cost",        # the step simulator, L2 rule, vendor-like baselines, fidelity
    "fusion.codegen",     # Ascend C and AscendNPU IR emitters
    "fusion.emu",         # the host emulation of the Ascend C API
    "fusion.driver",      # compile: tile policy, chains, fallback, artifacts, runtime
    "fusion.tuning",      # tile sweeps and the tuning database
    "fusion.verify",      # numerics checks against ONNX Runtime, on CPU and on the emulator
    "fusion.report",      # bench reports and traces
    "fusion.cli",         # the command line
    "fusion",
)
# function-local imports of project modules that are deliberate, with the reason
LOCAL_IMPORTS_ALLOWED = {
    "fusion/__init__.py": "the public fusion.compile loads the driver on first use: every module imports "
                          "the `fusion` package first, which must stay at the bottom (test_the_package_root_is_bottom)",
}
MAX_LOCAL_IMPORTS = 20
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _targets(node, name: str, path: Path, modules: dict[str, Path]) -> list[str]:
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
            base = ".".join(up + ([base] if base else []))
        # `from pkg import sub` depends on the submodule, not on the package's own body
        targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    return [t for t in targets if t in modules and t != name]


def _import_nodes(path: Path):
    """(node, is_module_level) for every import statement of a module."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, id(node) in top


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `name` imports, at module level or inside functions."""
    return {t for node, _ in _import_nodes(path) for t in _targets(node, name, path, modules)}


def _local_imports(modules: dict[str, Path]) -> list[str]:
    out = []
    for name, path in sorted(modules.items()):
        for node, top in _import_nodes(path):
            if not top and _targets(node, name, path, modules):
                out.append(str(path.relative_to(ROOT)))
    return out


def _layer(module: str) -> int:
    best = None
    for i, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            if best is None or len(layer) > len(LAYERS[best]):
                best = i
    assert best is not None, f"{module} is in no layer"
    return best


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return [f"{a} ({LAYERS[_layer(a)]}) imports {b} ({LAYERS[_layer(b)]})"
            for a in sorted(graph) for b in sorted(graph[a]) if _layer(b) > _layer(a)]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _graph():
    modules = _modules()
    return modules, {name: _imports(name, path, modules) for name, path in modules.items()}


def test_no_import_cycles():
    _, graph = _graph()
    assert _cycles(graph) == []


def test_few_function_local_imports():
    modules, _ = _graph()
    local = _local_imports(modules)
    unexplained = [loc for loc in local if loc not in LOCAL_IMPORTS_ALLOWED]
    assert unexplained == [] and len(local) <= MAX_LOCAL_IMPORTS


def test_layers_import_only_downwards():
    _, graph = _graph()
    assert _upward(graph) == []


def test_the_package_root_is_bottom():
    """Python runs fusion/__init__ before any fusion.* module: were it to import the driver at module
    level, importing e.g. schedules.program_totals first would re-enter it half-initialized."""
    modules = _modules()
    top = {t for node, top in _import_nodes(modules["fusion"]) if top
           for t in _targets(node, "fusion", modules["fusion"], modules)}
    assert all(t.startswith("fusion.core") for t in top)


def test_every_module_imports_alone():
    """Each module imported first in a fresh interpreter (the runtime check of the rules above)."""
    import subprocess
    import sys

    names = sorted(_modules())
    # one interpreter; the project's modules are dropped from sys.modules before each import
    # (third-party ones such as TVM stay loaded: they cannot take part in the project's cycles)
    code = ("import importlib, sys\n"
            "bad = []\n"
            "for n in sys.argv[1:]:\n"
            "    for m in [m for m in sys.modules if m.split('.')[0] in ('fusion', 'passes', 'schedules', 'models')]:\n"
            "        del sys.modules[m]\n"
            "    try:\n"
            "        importlib.import_module(n)\n"
            "    except Exception as e:\n"
            "        bad.append(f'{n}: {type(e).__name__}: {e}')\n"
            "print('\\n'.join(bad))\n")
    r = subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == ""


def test_modules_are_small():
    big = {str(p.relative_to(ROOT)): n for p in _modules().values()
           if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert big == {}


def test_the_checker_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_checker_sees_an_upward_import_and_a_local_one(tmp_path):
    assert _upward({"fusion.core.ir": {"fusion.driver.compiler"}, "fusion.driver.compiler": set()}) \
        == ["fusion.core.ir (fusion.core) imports fusion.driver.compiler (fusion.driver)"]
    assert _layer("fusion.cost.fused") == LAYERS.index("fusion.cost")
    mod = tmp_path / "m.py"
    mod.write_text("import os\n\ndef f():\n    from fusion.core import ir\n    import json\n")
    nodes = [(type(n).__name__, top) for n, top in _import_nodes(mod)]
    assert nodes == [("Import", True), ("ImportFrom", False), ("Import", False)]


def summary() -> str:
    """The figures the tests above check, as `python tests/test_import_cycles.py` prints them."""
    modules, graph = _graph()
    local = _local_imports(modules)
    sizes = sorted((len(p.read_text().splitlines()), str(p.relative_to(ROOT))) for p in modules.values())
    return "\n".join([
        f"modules: {len(modules)} in {', '.join(PACKAGES)}",
        f"import cycles (function-local imports counted): {len(_cycles(graph))}",
        f"function-local imports of the project's own modules: {len(local)} (at most {MAX_LOCAL_IMPORTS}, "
        f"{sum(1 for loc in local if loc not in LOCAL_IMPORTS_ALLOWED)} without a listed reason)",
        f"imports against the layering: {len(_upward(graph))}",
        f"largest module: {sizes[-1][1]} ({sizes[-1][0]} lines; limit {MAX_LINES})",
        f"modules over {MAX_LINES} lines: {sum(1 for n, _ in sizes if n > MAX_LINES)}"])


if __name__ == "__main__":
    print(summary())
