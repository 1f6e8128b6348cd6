"""How many of the Ascend C devkit's own samples `megafuse emu run` runs unchanged.

    python benchmarks/emu_samples.py --samples ~/src/asc-devkit [--under examples/01_simd_cpp_api]
        [--soc ascend910b2] [--timeout 120] [--only SUBSTR] [--out benchmarks/results/emu_samples.json]

--samples is a local checkout of the devkit (fetch it yourself; nothing of it is vendored here).
Every sample directory under --under (a CMakeLists.txt whose add_executable names an .asc / .cpp
with a host main) is run the way its README says, in a scratch copy:

    build/$ python3 ../scripts/gen_data.py ARGS      (the sample's own data generator, if any)
    build/$ megafuse emu run ../SOURCES -D ...         (instead of cmake + make + ./demo)
    build/$ python3 ../scripts/verify_result.py ARGS (the sample's own verifier, if any)

The -D definitions are the CMakeLists' add_definitions / target_compile_definitions with the
README's cmake cache values (else the CMakeLists defaults); shell variables of the README's
block (SCENARIO_NUM=1, export NAME=VAL) are substituted (and CMake string(REGEX MATCH) results).
A sample whose CMakeLists builds only for dav-2002 (Atlas inference AI Core) runs on ascend310p3.
Verdicts: pass (the verifier printed its
pass line; without a verifier, the program printed its own pass line or every line of the
README's expected-result block, the device printf's "[AIV Block i/N]" tag aside), ran
(unverified) (no verifier and nothing to compare with), fail (wrong result), refused (the
emulator stopped the kernel: the reason), compile error (the first missing API), error (the
generator failed). A sample whose README shows a kernel assertion failing as its result passes
when the emulator stops the kernel at that same assertion. Excluded, with the reason: samples
whose README lists only Ascend 950 products (or that build only for dav-3510), and framework-integration samples that need a
framework runtime (PyTorch / TensorFlow / ONNX / GE / aclgraph, aclnn / aclop op packages,
the profiler); a README without a product section counts as Ascend 950 only when its CMakeLists
builds for dav-3510 alone. The results file names the devkit commit.

Several samples' NumPy scripts import tensorflow only for `tf.bfloat16.as_numpy_dtype`; when
tensorflow is not installed the scripts run with emu_samples_shim/ on PYTHONPATH, whose
`tensorflow` offers exactly that dtype (ml_dtypes.bfloat16, where TensorFlow takes it from) and
raises on any other name, so a script that computes with TensorFlow still fails honestly.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIM = Path(__file__).resolve().parent / "emu_samples_shim"
sys.path.insert(0, str(ROOT))

from fusion.emu.confine import run_confined  # noqa: E402

FRAMEWORK = {  # path component -> why the sample is excluded
    "00_framework": "framework integration (PyTorch / TensorFlow / ONNX / GE / aclgraph runtime)",
    "99_acl_based": "aclnn / aclop operator-package flow (op_host registration, graph engine)",
    "04_profiling": "needs the profiler (msprof)",
}
_SET_CACHE = re.compile(r'set\(\s*(\w+)\s+"?([^"\s)]*)"?\s+CACHE', re.I)
_OPTION = re.compile(r'option\(\s*(\w+)\s+"[^"]*"\s+(ON|OFF)\s*\)', re.I)
_COND = re.compile(r"^\s*(if|elseif|else|endif)\s*\((.*)\)\s*$", re.I)
_PLAIN_SET = re.compile(r'^\s*set\(\s*(\w+)\s+"?([^"\s)]*)"?\s*\)\s*$', re.I)
_STRING_MATCH = re.compile(r'^\s*string\(\s*REGEX\s+MATCH\s+"([^"]*)"\s+(\w+)\s+"([^"]*)"\s*\)', re.I)
_DEFS = re.compile(r"(?:add_definitions|target_compile_definitions\s*\(\s*[\w${}]+)\s*\(?([^)]*)\)", re.I | re.S)
_EXE = re.compile(r"add_executable\s*\(\s*[\w${}]+\s+([^)]*)\)", re.I | re.S)
_LIB = re.compile(r"add_library\s*\(\s*[\w${}]+\s+(?:SHARED|STATIC|OBJECT)?\s*([^)]*)\)", re.I | re.S)
_MISSING = [  # g++ diagnostics -> the missing name
    re.compile(r"error: (?:‘|')([^’']+)(?:’|') in namespace (?:‘|')([^’']+)(?:’|')"),
    re.compile(r"error: (?:‘|')[^’']+(?:’|') has no member named (?:‘|')([^’']+)(?:’|')"),
    re.compile(r"error: '([^']+)' (?:was not declared|is not a member of|has not been declared|does not name a type)"),
    re.compile(r"error: '([^']+)' is not a (?:class|namespace)"),
    re.compile(r"fatal error: ([^:]+): No such file or directory"),
    re.compile(r"error: no matching function for call to '([^'(]+)"),
    re.compile(r"error: (?:‘|')([^’']+)(?:’|') (?:was not declared|is not a member of|has not been declared|does not name a type)"),
    re.compile(r"error: no matching function for call to (?:‘|')([^’'(]+)"),
]


def _bash_block(readme: str) -> list[str]:
    """The README's run block: the first fenced block with a cmake command line."""
    blocks: list[list[str]] = []
    cur: list[str] | None = None
    for ln in readme.splitlines():
        if ln.strip().startswith("```"):
            if cur is None:
                cur = []
            else:
                blocks.append(cur)
                cur = None
        elif cur is not None:
            cur.append(ln.split("#")[0].strip())
    for block in blocks:
        if any(re.search(r"(^|[;&]\s*)cmake\b", ln) for ln in block):
            return block
    return []


def _subst(text: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), text)


def _cond_true(cond: str, var: dict[str, str]) -> bool | None:
    """A CMake if() condition of the forms the samples use (NAME, NOT ..., NAME STREQUAL "v",
    NAME MATCHES "re", joined by AND / OR); None when it reads anything else."""
    def term(t: str) -> bool | None:
        t = t.strip()
        if t.upper().startswith("NOT "):
            v = term(t[4:])
            return None if v is None else not v
        m = re.fullmatch(r'\$?\{?(\w+)\}?\s+(STREQUAL|MATCHES)\s+"?([^"]*)"?', t, re.I)
        if m:
            val = var.get(m.group(1))
            if val is None:
                return None
            return val == m.group(3) if m.group(2).upper() == "STREQUAL" else re.search(m.group(3), val) is not None
        m = re.fullmatch(r'\$?\{?(\w+)\}?\s+(EQUAL|LESS|GREATER)\s+"?(-?\d+)"?', t, re.I)
        if m:  # numeric comparison (CMake: false when the variable is not a number)
            val = var.get(m.group(1))
            if val is None:
                return None
            if not re.fullmatch(r"-?\d+", val.strip()):
                return False
            a, b = int(val), int(m.group(3))
            return {"EQUAL": a == b, "LESS": a < b, "GREATER": a > b}[m.group(2).upper()]
        m = re.fullmatch(r"\w+", t)
        if m and t in var:
            return var[t].upper() not in ("OFF", "0", "FALSE", "NO", "N", "") and not var[t].upper().endswith("-NOTFOUND")
        return None
    for joiner, combine in ((" OR ", any), (" AND ", all)):
        if joiner in cond.upper():
            parts = [term(x) for x in re.split(joiner, cond, flags=re.I)]
            return None if None in parts else combine(parts)
    return term(cond)


def _active_lines(cmake: str, var: dict[str, str]) -> str:
    """The CMakeLists lines the configuration runs: if / elseif / else branches decided where the
    condition is understood (both kept otherwise); plain set(NAME value) in them joins `var`."""
    out: list[str] = []
    stack: list[list[bool]] = []  # per open if: [this branch active, some branch taken]
    for ln in cmake.splitlines():
        m = _COND.match(ln)
        if m:
            kw = m.group(1).lower()
            c = _cond_true(m.group(2), var) if kw in ("if", "elseif") else True
            if kw == "if":
                stack.append([c is not False, c is True])
            elif kw == "elseif" and stack:
                taken = stack[-1][1]
                stack[-1] = [not taken and c is not False, taken or c is True]
            elif kw == "else" and stack:
                stack[-1] = [not stack[-1][1], True]
            elif kw == "endif" and stack:
                stack.pop()
            continue
        if all(f[0] for f in stack):
            s = _PLAIN_SET.match(ln)
            if s and "CACHE" not in ln.upper():
                var[s.group(1)] = s.group(2)
            r = _STRING_MATCH.match(ln)  # string(REGEX MATCH "re" NAME "input"): NAME = the match
            if r:
                found = re.search(r.group(1), _subst(r.group(3), var))
                var[r.group(2)] = found.group(0) if found else ""
            out.append(ln)
    return "\n".join(out)


def plan(sample: Path) -> dict:
    """How to run one sample: sources, -D flags, generator / verifier / program arguments."""
    cmake = (sample / "CMakeLists.txt").read_text(errors="replace")
    readme = (sample / "README.md").read_text(errors="replace") if (sample / "README.md").exists() else ""
    cache = {m.group(1): m.group(2) for m in _SET_CACHE.finditer(cmake)}
    shell: dict[str, str] = {}
    gen = ver = None
    prog_args: list[str] = []
    for ln in _bash_block(readme):
        for stmt in [s.strip() for s in re.split(r"[;&]+", ln) if s.strip()]:
            stmt = re.sub(r"^export\s+", "", stmt)  # export NAME=VAL sets the variable too
            assigns = [re.fullmatch(r"(\w+)=(\S*)", tok) for tok in stmt.split()]
            if all(assigns):  # NAME=VAL [NAME=VAL ...]
                for m in assigns:
                    shell[m.group(1)] = m.group(2)
            elif stmt.startswith("cmake"):
                for d in re.findall(r"-D(\w+)=(\S+)", stmt):
                    cache[d[0]] = _subst(d[1], shell)
            elif "gen_data" in stmt and gen is None:
                gen = _subst(stmt, {**cache, **shell}).split()
            elif "verify_result" in stmt and ver is None:
                ver = _subst(stmt, {**cache, **shell}).split()
            elif stmt.startswith("./"):
                prog_args = _subst(stmt, {**cache, **shell}).split()[1:]
    if gen is None and (sample / "scripts" / "gen_data.py").is_file():
        gen = ["python3", "../scripts/gen_data.py"]
    if ver is None and (sample / "scripts" / "verify_result.py").is_file():
        ver = ["python3", "../scripts/verify_result.py", "output/output.bin", "output/golden.bin"]
    for m in _OPTION.finditer(cmake):
        cache.setdefault(m.group(1), m.group(2))
    cache.setdefault("CMAKE_ASC_ARCHITECTURES", "dav-2201")
    readme_arch = cache["CMAKE_ASC_ARCHITECTURES"]
    # The benchmark emulates a 910B (dav-2201): every sample is built for it, whatever the README's
    # command line names (that only decides the Ascend-950 exclusion), except one whose CMake builds
    # for dav-2002 (Atlas inference AI Core) alone: it runs on 310P3 (run_sample).
    if not (readme_arch == "dav-2002" and "dav-2201" not in cmake):
        cache["CMAKE_ASC_ARCHITECTURES"] = "dav-2201"
    cmake = _active_lines(cmake, cache)
    defines = []
    for m in _DEFS.finditer(cmake):
        for tok in m.group(1).split():
            tok = _subst(tok, cache)
            if len(tok) > 1 and tok[0] == tok[-1] == '"':  # "NAME=VAL" (a NAME="VAL" keeps its string quotes)
                tok = tok[1:-1]
            if tok.startswith("-D"):
                defines.append(tok)
            elif re.fullmatch(r"\w+(=\S*)?", tok) and tok.upper() not in ("PRIVATE", "PUBLIC", "INTERFACE") \
                    and not tok.startswith("$"):
                defines.append(f"-D{tok}")
    listed = [tok for m in [_EXE.search(cmake), *_LIB.finditer(cmake)] if m for tok in m.group(1).split()]
    sources = [re.sub(r"^\$\{CMAKE_CURRENT_SOURCE_DIR\}/", "", s) for s in listed if s.endswith((".asc", ".cpp"))]
    return {"sources": sources, "defines": [d for d in defines if "$" not in d and "<" not in d],
            "gen": gen, "verify": ver, "program_args": prog_args, "arch": readme_arch,
            "readme": readme}


def excluded(rel: Path, p: dict) -> str | None:
    for part in rel.parts:
        if part in FRAMEWORK:
            return FRAMEWORK[part]
    sections = [sec for sec in p["readme"].split("\n## ") if "产品" in sec.split("\n")[0] or
                "roduct" in sec.split("\n")[0]]
    products = sections[0] if sections else p["readme"]
    a2 = "Atlas A2" in products or "Atlas A3" in products
    # Without a product section the CMakeLists' architecture is the sample's only statement of
    # its target: a README that merely mentions A2 in its prose does not make it an A2 sample.
    only_3510 = p["arch"] == "dav-3510" and (not sections or not a2)
    if (not a2 and "950" in products) or only_3510:
        return "Ascend 950 only"
    return None


def _script_env() -> dict[str, str]:
    """The environment of a sample's data generator / verifier: the TensorFlow dtype stand-in on
    PYTHONPATH unless the real tensorflow is importable (emu_samples_shim/tensorflow says why)."""
    path = [str(ROOT)]
    if importlib.util.find_spec("tensorflow") is None:
        path.insert(0, str(SHIM))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


def _python_cmd(cmd: list[str]) -> list[str]:
    return [sys.executable, *cmd[1:]] if cmd and cmd[0].startswith("python") else cmd


def first_missing(err: str) -> str:
    for rx in _MISSING:
        m = rx.search(err)
        if m:
            return "::".join(reversed(m.groups())) if len(m.groups()) == 2 else m.group(1)
    return err.strip().splitlines()[0][:200] if err.strip() else "?"


_CORE_TAG = re.compile(r"^\[AI[CV] Block \d+/\d+\]\s*")  # the device printf's per-core tag


def expected_output(readme: str) -> list[str]:
    """The lines of the README's expected-result block (the first fenced block after a line that
    names the execution result), without placeholder lines; [] when there is none."""
    lines = readme.splitlines()
    for i, ln in enumerate(lines):
        if not re.search(r"执行结果|运行结果", ln):
            continue
        j = next((k for k in range(i + 1, min(i + 6, len(lines))) if lines[k].strip().startswith("```")), None)
        if j is None:
            continue
        block = []
        for ln2 in lines[j + 1:]:
            if ln2.strip().startswith("```"):
                break
            block.append(ln2.strip())
        return [b for b in block if b and not re.search(r"<[^>]+>|\.\.\.|…", b)]
    return []


def _missing_lines(want: list[str], stdout: str) -> list[str]:
    """Expected lines the program did not print (each counted as often as expected; the device
    printf's "[AIV Block i/N]" tag, which the emulator's printf does not print, is ignored)."""
    have: dict[str, int] = {}
    for ln in stdout.splitlines():
        key = _CORE_TAG.sub("", ln.strip())
        have[key] = have.get(key, 0) + 1
    missing = []
    for w in want:
        key = _CORE_TAG.sub("", w)
        if have.get(key, 0) > 0:
            have[key] -= 1
        else:
            missing.append(w)
    return missing


_ASSERTION = re.compile(r"Assertion `(.+?)' failed")


def expected_assertion(readme: str, stop_line: str) -> bool:
    """The emulator stopped the kernel at an assertion that the README's expected output shows
    failing (a sample that demonstrates a kernel assert: that failure is its documented result)."""
    got = _ASSERTION.search(stop_line)
    return bool(got) and got.group(1) in {m.group(1) for m in _ASSERTION.finditer(readme)}


def run_sample(sample: Path, rel: Path, soc: str, timeout: float) -> dict:
    p = plan(sample)
    why = excluded(rel, p)
    if why:
        return {"sample": str(rel), "verdict": "excluded", "reason": why}
    if not p["sources"]:
        return {"sample": str(rel), "verdict": "excluded", "reason": "no add_executable with .asc / .cpp sources"}
    with tempfile.TemporaryDirectory(prefix="emu-sample-") as tmp:
        work = Path(tmp) / sample.name
        shutil.copytree(sample, work, ignore=shutil.ignore_patterns("figures", "*.png", "build"))
        build = work / "build"
        build.mkdir()
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        if p["gen"]:
            g = run_confined(_python_cmd(p["gen"]), cwd=build, timeout=timeout, env=_script_env())
            if g.returncode != 0:
                tail = (g.stderr.strip().splitlines() or ["?"])[-1][:200]
                return {"sample": str(rel), "verdict": "error", "reason": f"data generator failed: {tail}"}
        # a sample built for dav-2002 only (Atlas inference AI Core) runs on that chip, 310P3
        run_soc = "ascend310p3" if p["arch"] == "dav-2002" else soc
        cmd = [sys.executable, "-m", "fusion.cli.main", "emu", "run", *[str(work / s) for s in p["sources"]],
               "--soc", run_soc, "--workdir", str(build), "--timeout", str(timeout)]
        for d in p["defines"]:
            cmd += ["-D", d[2:]]
        for a in p["program_args"]:
            cmd.append(f"--program-arg={a}")
        t0 = time.monotonic()
        r = subprocess.run(cmd, cwd=build, env=env, capture_output=True, text=True, errors="replace",
                           timeout=timeout * 4 + 600)
        secs = round(time.monotonic() - t0, 1)
        last = (r.stderr.strip().splitlines() or [""])[-1]
        if r.returncode == 2 and "g++ failed to compile" in last:
            return {"sample": str(rel), "verdict": "compile error", "missing": first_missing(last), "line": last[:400],
                    "seconds": secs}
        if r.returncode != 0:
            if expected_assertion(p["readme"], last):
                return {"sample": str(rel), "verdict": "pass", "seconds": secs,
                        "how": "the kernel assertion failure the README shows as the sample's result: " + last[:300]}
            return {"sample": str(rel), "verdict": "refused", "reason": last[:400], "seconds": secs}
        if not p["verify"]:
            if re.search(r"test fail|\[ERROR\]|result error|\[Failed\]", r.stdout, re.I):
                return {"sample": str(rel), "verdict": "fail", "reason": " ".join(r.stdout.split())[-300:],
                        "seconds": secs}
            if re.search(r"test pass|\[Success\].*verification passed", r.stdout, re.I):
                return {"sample": str(rel), "verdict": "pass", "how": "the program's own check", "seconds": secs}
            want = expected_output(p["readme"])
            if want:
                missing = _missing_lines(want, r.stdout)
                if not missing:
                    return {"sample": str(rel), "verdict": "pass", "seconds": secs,
                            "how": f"the README's expected output ({len(want)} lines)"}
                return {"sample": str(rel), "verdict": "fail", "seconds": secs,
                        "reason": f"the README's expected output lacks {missing[0]!r} ({len(missing)} lines missing)"}
            return {"sample": str(rel), "verdict": "ran (unverified)", "how": "no verifier, no check", "seconds": secs}
        v = run_confined(_python_cmd(p["verify"]), cwd=build, timeout=timeout, env=_script_env())
        out = v.stdout + v.stderr
        ok = v.returncode == 0 and re.search(r"(test pass|pass!|\bPASS\b|passed|succe)", out, re.I) \
            and not re.search(r"(\[ERROR\]|result error|fail)", out, re.I)
        if ok:
            return {"sample": str(rel), "verdict": "pass", "how": "sample's verifier", "seconds": secs}
        return {"sample": str(rel), "verdict": "fail", "reason": " ".join(out.split())[-300:], "seconds": secs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", required=True, type=Path, help="a local checkout of the Ascend C devkit")
    ap.add_argument("--under", default="examples/01_simd_cpp_api")
    ap.add_argument("--soc", default="ascend910b2")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--commit", default="", help="the devkit commit, when --samples is an export, not a git checkout")
    ap.add_argument("--only", default="", help="run only samples whose path contains this")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "emu_samples.json")
    args = ap.parse_args(argv)
    base = args.samples / args.under
    if not base.is_dir():
        print(f"emu_samples: error: {base} is not a directory", file=sys.stderr)
        return 2
    commit = args.commit
    try:
        commit = commit or subprocess.run(["git", "-C", str(args.samples), "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown (not a git checkout)"
    samples = sorted(c.parent for c in base.rglob("CMakeLists.txt") if args.only in str(c.parent))
    samples = [s for s in samples if s != base]
    samples = [s for s in samples if not any(a in samples for a in s.parents)]  # nested CMake projects: one sample
    results = []
    for s in samples:
        rel = s.relative_to(args.samples)
        res = run_sample(s, rel, args.soc, args.timeout)
        results.append(res)
        print(f"{res['verdict']:<14} {rel}  {res.get('missing') or res.get('reason') or res.get('how', '')}"[:240],
              flush=True)
    counted = [r for r in results if r["verdict"] != "excluded"]
    passed = [r for r in counted if r["verdict"] == "pass"]
    summary = {v: sum(r["verdict"] == v for r in results)
               for v in ("pass", "ran (unverified)", "fail", "refused", "compile error", "error", "excluded")}
    missing: dict[str, int] = {}
    for r in counted:
        if r["verdict"] == "compile error":
            missing[r["missing"]] = missing.get(r["missing"], 0) + 1
    report = {"devkit_commit": commit, "under": args.under, "soc": args.soc, "only": args.only,
              "pass_rate": f"{len(passed)}/{len(counted)} = {100.0 * len(passed) / max(1, len(counted)):.1f} %",
              "summary": summary, "first_missing_api": dict(sorted(missing.items(), key=lambda kv: -kv[1])),
              "samples": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(f"pass {report['pass_rate']} (devkit {commit[:12]}); {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
