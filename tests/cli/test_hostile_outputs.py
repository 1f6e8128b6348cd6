"""`compile -o DIR` under races, crashes and careless arguments (fusion/outdir): a foreign
directory is never deleted, two writers never interleave, a killed run's leftovers are cleaned by
the next one, and every refusal is one line with exit 2. Races are made deterministic through
fusion.core.outdir.before_swap (called between the final decision and the swap), never by timing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

import models
from fusion.core import outdir
from fusion.cli.main import main
from test_hostile import assert_one_line_error

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def work(tmp_path, monkeypatch):
    d = tmp_path / "work"
    d.mkdir()
    onnx.save(models.dwsep_block(cin=16, cout=16, h=8), d / "m.onnx")
    monkeypatch.chdir(d)
    return d


@pytest.fixture(params=["renameat2", "fallback"])
def swap_mode(request, monkeypatch):
    monkeypatch.setattr(outdir, "_force_fallback", request.param == "fallback")
    return request.param


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def _hidden(work: Path) -> list[str]:
    return sorted(n for n in os.listdir(work) if n.startswith("."))


def _compile(*extra) -> tuple[int, str, str]:
    return main(["compile", "m.onnx", "--no-db", *extra])


def _run(capsys, *extra):
    code = _compile(*extra)
    out, err = capsys.readouterr()
    return code, out, err


def test_replace_with_force_keeps_a_manifest_and_leaves_nothing_beside(work, capsys, swap_mode):
    assert _run(capsys, "-o", "out")[0] == 0
    marker = json.loads((work / "out" / outdir.MARKER).read_text())
    assert marker["state"] == "complete" and "compile.json" in marker["files"]
    (work / "out" / "compile.json").write_text("stale")
    code, out, err = _run(capsys, "-o", "out")
    assert_one_line_error(code, out, err)
    assert "--force" in err
    assert _run(capsys, "-o", "out", "--force")[0] == 0
    assert (work / "out" / "compile.json").read_text() != "stale"
    assert _hidden(work) == [], "no partial, aside or lock file left beside -o"


def test_foreign_directory_created_at_the_moment_of_replacement_survives(work, capsys, monkeypatch, swap_mode):
    """DIR absent when checked; a user creates it (non-empty) just before the swap."""
    def create_foreign(out: Path):
        out.mkdir()
        (out / "thesis.tex").write_text("precious")

    monkeypatch.setattr(outdir, "before_swap", create_foreign)
    code, out, err = _run(capsys, "-o", "out")
    assert_one_line_error(code, out, err)
    assert "created by someone else" in err
    assert _tree(work / "out") == {"thesis.tex": b"precious"}
    assert _hidden(work) == []


def test_earlier_output_swapped_for_a_foreign_directory_before_the_exchange_survives(work, capsys, monkeypatch,
                                                                                      swap_mode):
    """DIR is an earlier output when checked (--force), replaced by a foreign one before the swap."""
    assert _run(capsys, "-o", "out")[0] == 0

    def swap_in_foreign(out: Path):
        os.rename(out, work / "moved-away")
        out.mkdir()
        (out / "data.csv").write_text("1,2,3")

    monkeypatch.setattr(outdir, "before_swap", swap_in_foreign)
    code, out, err = _run(capsys, "-o", "out", "--force")
    assert_one_line_error(code, out, err)
    assert "changed while this run was writing" in err
    assert _tree(work / "out") == {"data.csv": b"1,2,3"}
    assert (work / "moved-away" / "compile.json").is_file()
    assert _hidden(work) == []


def test_file_added_inside_the_earlier_output_at_the_moment_of_replacement_survives(work, capsys, monkeypatch,
                                                                                    swap_mode):
    assert _run(capsys, "-o", "out")[0] == 0
    before = _tree(work / "out")
    monkeypatch.setattr(outdir, "before_swap", lambda out: (out / "notes.txt").write_text("mine"))
    code, out, err = _run(capsys, "-o", "out", "--force")
    assert_one_line_error(code, out, err)
    assert _tree(work / "out") == {**before, "notes.txt": b"mine"}    # the earlier set, untouched, plus it
    assert _hidden(work) == []


def test_foreign_file_in_an_earlier_output_blocks_force(work, capsys):
    assert _run(capsys, "-o", "out")[0] == 0
    (work / "out" / "model.onnx").write_bytes(b"user data")
    code, out, err = _run(capsys, "-o", "out", "--force")
    assert_one_line_error(code, out, err)
    assert "model.onnx" in err and "did not write" in err
    assert (work / "out" / "model.onnx").read_bytes() == b"user data"


def test_second_writer_fails_in_one_line_while_the_first_holds_the_output(work, capsys):
    with outdir.reserve(work / "out", force=False):
        code, out, err = _run(capsys, "-o", "out")
    assert_one_line_error(code, out, err)
    assert "another megafuse run (pid" in err
    assert not (work / "out").exists()
    assert _run(capsys, "-o", "out")[0] == 0    # and after it, the lock is free again


def test_foreign_lock_named_file_is_not_taken_over(work, capsys):
    (work / ".out.megafuse-lock").write_text("someone's file")
    code, out, err = _run(capsys, "-o", "out")
    assert_one_line_error(code, out, err)
    assert (work / ".out.megafuse-lock").read_text() == "someone's file"


def test_killed_run_leaves_leftovers_that_the_next_run_cleans(work, capsys):
    """A real SIGKILL at the moment of the swap (the hook kills the process), then a new run."""
    assert _run(capsys, "-o", "out")[0] == 0
    script = ("import os, signal, sys; from fusion.core import outdir; from fusion.cli.main import main; "
              "outdir.before_swap = lambda out: os.kill(os.getpid(), signal.SIGKILL); "
              "sys.exit(main(['compile', 'm.onnx', '--no-db', '-o', 'out', '--force']))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], cwd=work, env=env, capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    left = _hidden(work)
    assert any(".partial-" in n for n in left) and ".out.megafuse-lock" in left, left
    (work / "unrelated.partial-1-x").mkdir()             # not ours: never touched
    assert _run(capsys, "-o", "out", "--force")[0] == 0
    assert _hidden(work) == []
    assert (work / "unrelated.partial-1-x").is_dir()
    assert json.loads((work / "out" / outdir.MARKER).read_text())["state"] == "complete"


def test_leftover_of_a_live_pid_is_kept(work, capsys):
    live = work / f".out.partial-{os.getppid()}-abc"
    live.mkdir()
    (live / outdir.MARKER).write_text(json.dumps({"writer": outdir.WRITER, "state": "partial", "pid": 1}))
    assert _run(capsys, "-o", "out")[0] == 0
    assert live.is_dir()


@pytest.mark.parametrize("arg,words", [("", "needs a directory name"), ("   ", "needs a directory name"),
                                       ("x" * 300, "too long"), ("a/" + "b" * 230, "too long"),
                                       ("/".join(["d"] * 2100), "too long")])
def test_bad_output_names_are_refused_before_work(work, capsys, arg, words):
    before = _tree(work)
    code, out, err = _run(capsys, "-o", arg)
    assert_one_line_error(code, out, err)
    assert words in err
    assert _tree(work) == before


def test_output_holding_the_current_directory_is_refused(work, capsys, monkeypatch):
    assert _run(capsys, "-o", "out")[0] == 0
    before = _tree(work)
    monkeypatch.chdir(work / "out")
    for arg in (".", "../out", str(work)):
        code = main(["compile", "../m.onnx", "--no-db", "-o", arg, "--force"])
        out, err = capsys.readouterr()
        assert_one_line_error(code, out, err)
        assert "holds the current directory" in err
    assert _tree(work) == before


def test_legacy_marker_without_manifest_is_not_replaced(work, capsys):
    (work / "out").mkdir()
    (work / "out" / outdir.MARKER).write_text("written by megafuse compile -o; replaced by the next run\n")
    (work / "out" / "compile.json").write_text("{}")
    code, out, err = _run(capsys, "-o", "out", "--force")
    assert_one_line_error(code, out, err)
    assert "older version" in err
    assert (work / "out" / "compile.json").read_text() == "{}"


def test_failed_compile_leaves_no_lock_partial_or_parent_it_created(work, capsys):
    (work / "bad.onnx").write_bytes(b"not a model")
    before = _tree(work)
    code = main(["compile", "bad.onnx", "--no-db", "-o", "new/deeper/out"])
    out, err = capsys.readouterr()
    assert_one_line_error(code, out, err)
    assert _tree(work) == before        # no lock file, no .partial-, no new/deeper/
    assert _run(capsys, "-o", "new/deeper/out")[0] == 0
    assert (work / "new" / "deeper" / "out" / "compile.json").is_file() and _hidden(work / "new" / "deeper") == []


def _fake_output(out: Path, files: list[str]) -> None:
    out.mkdir()
    (out / outdir.MARKER).write_text(json.dumps({"writer": outdir.WRITER, "state": "complete", "files": files}))


def test_directory_swapped_for_a_symlink_is_never_followed(work, capsys):
    elsewhere = work.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "f.txt").write_text("not megafuse's")
    _fake_output(work / "out", ["compile.json", "sub/f.txt"])
    (work / "out" / "compile.json").write_text("{}")
    os.symlink(elsewhere, work / "out" / "sub")            # was a directory of the earlier output
    code, out, err = _run(capsys, "-o", "out", "--force")
    assert_one_line_error(code, out, err)
    assert "'sub'" in err and "did not write" in err
    assert outdir.delete_owned(work / "out") == ["sub"]    # even asked directly: only its own file goes
    assert (elsewhere / "f.txt").read_text() == "not megafuse's"
    assert not (work / "out" / "compile.json").exists()


def test_manifest_entries_escaping_the_output_are_ignored(work):
    (work / "victim.txt").write_text("keep")
    _fake_output(work / "out", ["../victim.txt", str(work / "victim.txt"), "", "a/../../victim.txt"])
    assert outdir.delete_owned(work / "out") == []
    assert (work / "victim.txt").read_text() == "keep"
