"""The tuning database: JSON lines, one record per evaluated point.

A record's `key` is a content hash of everything that makes two results comparable: the workload
(shapes, dtype, strides, kernel, pads, activations, residual — DwSepWorkload), the layout, the
target kind and SoC (with a hash of every SoC table field, calibrations included), the megafuse
and TVM versions, the evaluator (modeled | measured) and every option that changes the generated
code or the numbers: the cost model's source for modeled records; the LLVM target and the
schedule source for measured ones (the thread count a measurement ran with is stored in the
record, not keyed: it changes no code). Two workloads that differ in stride, dtype or SoC
therefore never share a record.

Writes: each batch of records is one os.write() of complete lines on an O_APPEND descriptor,
then fsync — a reader never sees half a record, and a killed sweep loses at most the batch in
flight. Reads: a line that is not a JSON record of this format (truncated, corrupt, foreign) is
skipped with one warning line; a file that cannot be opened or read at all raises
TuningDatabaseError (the CLI prints one line and exits 2).

Default file: $MEGAFUSE_TUNING_DB, else $XDG_CACHE_HOME/megafuse/tuning.jsonl, else
~/.cache/megafuse/tuning.jsonl.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
import warnings
from dataclasses import asdict
from pathlib import Path

from fusion.errors import TuningDatabaseError
from schedules.workload import DwSepWorkload, TileConfig

FORMAT = "megafuse-tuning/1"
LAYOUT = "NC1HWC0"
TILE_FIELDS = ("th", "tw", "cob", "cib", "double_buffer", "pw_engine", "cores")
_ROOT = Path(__file__).resolve().parents[2]


class TuningDatabaseWarning(UserWarning):
    """A line of the tuning database was skipped."""


_format_warning = warnings.formatwarning


def _one_line_warning(message, category, filename, lineno, line=None):
    if isinstance(category, type) and issubclass(category, TuningDatabaseWarning):
        return f"megafuse: warning: {message}\n"
    return _format_warning(message, category, filename, lineno, line)


warnings.formatwarning = _one_line_warning


def default_db_path() -> Path:
    env = os.environ.get("MEGAFUSE_TUNING_DB")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "megafuse" / "tuning.jsonl"


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


# the sources a modeled latency depends on (the cost model package, the plan, its program)
_COST_MODEL_SOURCES = ("fusion/costmodel/__init__.py", "fusion/costmodel/primitives.py",
                       "fusion/costmodel/pipes.py", "fusion/costmodel/l2.py", "fusion/costmodel/results.py",
                       "fusion/costmodel/fused.py", "fusion/costmodel/unfused.py", "fusion/traffic.py",
                       "schedules/plan.py", "schedules/program.py", "schedules/isa.py")


@functools.cache
def _source_hash(*relpaths: str) -> str:
    h = hashlib.sha256()
    for rel in relpaths:
        try:
            h.update((_ROOT / rel).read_bytes())
        except OSError:
            h.update(rel.encode())
    return h.hexdigest()[:16]


@functools.cache
def tvm_version() -> str:
    try:
        from importlib.metadata import version

        return version("apache-tvm")
    except Exception:  # noqa: BLE001 - a source build has no distribution metadata
        import tvm

        return tvm.__version__


def evaluator_for(target) -> str:
    return "measured" if target.kind == "llvm" else "modeled"


def code_options(target, evaluator: str) -> dict:
    """Options that change the generated code (or the modeled numbers) of one block."""
    if evaluator == "measured":
        from fusion.targets import llvm_target

        return {"llvm_target": llvm_target(),
                "schedule": _source_hash("schedules/dwsep_schedule.py", "schedules/dwsep_te.py",
                                         "schedules/build.py")}
    return {"cost_model": _source_hash(*_COST_MODEL_SOURCES)}


def key_context(wl: DwSepWorkload, target, evaluator: str | None = None, options: dict | None = None) -> dict:
    import fusion

    evaluator = evaluator or evaluator_for(target)
    # sim and ascend share the cost model, so they share records (a tune on sim picks the tiles of
    # the Ascend C kernels too)
    kind = "sim" if evaluator == "modeled" else target.kind
    return {"format": FORMAT, "workload": asdict(wl), "layout": LAYOUT, "target": kind,
            "soc": target.soc.name, "soc_spec": _digest(asdict(target.soc)),
            "megafuse": fusion.__version__, "tvm": tvm_version(), "evaluator": evaluator,
            "options": code_options(target, evaluator) if options is None else options}


def tuning_key(wl: DwSepWorkload, target, evaluator: str | None = None, options: dict | None = None) -> str:
    return _digest(key_context(wl, target, evaluator, options))


def tile_to_json(t: TileConfig) -> dict:
    return {f: getattr(t, f) for f in TILE_FIELDS}


def tile_from_json(d: dict) -> TileConfig:
    return TileConfig(int(d["th"]), int(d["tw"]), int(d["cob"]), int(d["cib"]), bool(d["double_buffer"]),
                      str(d["pw_engine"]), int(d["cores"]))


def point_id(t: TileConfig) -> str:
    return t.key()


def make_record(key: str, ctx: dict, tile: TileConfig, result: dict, block: str = "") -> dict:
    rec = {"format": FORMAT, "key": key, "point": point_id(tile), "tile": tile_to_json(tile),
           "latency_us": result.get("latency_us"), "evaluator": ctx["evaluator"],
           "target": ctx["target"], "soc": ctx["soc"], "workload": ctx["workload"],
           "megafuse": ctx["megafuse"], "tvm": ctx["tvm"], "block": block,
           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    for k in ("min_us", "check_rel_err", "error", "threads", "bottleneck", "ub_bytes", "cores"):
        if result.get(k) is not None:
            rec[k] = result[k]
    return rec


def _valid(rec) -> str | None:
    """None for a well-formed record, else why not."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    if rec.get("format") != FORMAT:
        return f"foreign record (format {rec.get('format')!r})"
    if not isinstance(rec.get("key"), str) or not isinstance(rec.get("tile"), dict):
        return "record without key or tile"
    lat = rec.get("latency_us")
    if lat is not None and (not isinstance(lat, (int, float)) or isinstance(lat, bool) or lat != lat or lat < 0):
        return "bad latency"
    try:
        t = tile_from_json(rec["tile"])
    except (KeyError, TypeError, ValueError):
        return "bad tile"
    if rec.get("point") != point_id(t):
        return "point hash does not match its tile"
    return None


class TuningDB:
    """Records grouped by key; `path=None` keeps them in memory only."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path is not None else None
        self._by_key: dict[str, dict[str, dict]] = {}
        self.skipped = 0
        self.lines = 0
        self._loaded = False

    # --- reading ----------------------------------------------------------------------------
    def load(self) -> "TuningDB":
        self._loaded = True
        if self.path is None or not self.path.exists():
            return self
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise TuningDatabaseError(f"cannot read tuning database {self.path}: {e.strerror or e}") from None
        for lineno, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            self.lines += 1
            try:
                rec = json.loads(raw.decode("utf-8"))
                why = _valid(rec)
            except (UnicodeDecodeError, ValueError) as e:
                why = f"not JSON ({type(e).__name__})"
            if why is not None:
                self.skipped += 1
                warnings.warn(f"{self.path}:{lineno}: skipped a line of the tuning database: {why}",
                              TuningDatabaseWarning, stacklevel=2)
                continue
            self._by_key.setdefault(rec["key"], {})[rec["point"]] = rec
        return self

    def _ensure(self) -> None:
        if not self._loaded:
            self.load()

    def records(self, key: str) -> dict[str, dict]:
        """point id → record (the last one written wins)."""
        self._ensure()
        return self._by_key.get(key, {})

    def __len__(self) -> int:
        self._ensure()
        return sum(len(v) for v in self._by_key.values())

    def best(self, key: str, accept=None) -> dict | None:
        """The fastest error-free record of `key` (optionally only those `accept(tile)` allows)."""
        best = None
        for rec in self.records(key).values():
            lat = rec.get("latency_us")
            if lat is None or rec.get("error"):
                continue
            if accept is not None and not accept(tile_from_json(rec["tile"])):
                continue
            if best is None or lat < best["latency_us"]:
                best = rec
        return best

    # --- writing ----------------------------------------------------------------------------
    def append(self, records: list[dict]) -> None:
        """Store records: one os.write of complete lines with O_APPEND, then fsync."""
        self._ensure()
        if not records:
            return
        for rec in records:
            self._by_key.setdefault(rec["key"], {})[rec["point"]] = rec
        if self.path is None:
            return
        data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                if _ends_without_newline(fd):   # a torn last line of a crashed writer stays its own line
                    data = b"\n" + data
                n = os.write(fd, data)
                if n != len(data):
                    raise OSError(f"short write ({n} of {len(data)} bytes)")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            raise TuningDatabaseError(f"cannot write tuning database {self.path}: {getattr(e, 'strerror', None) or e}") from None


def _ends_without_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    if size == 0:
        return False
    return os.pread(fd, 1, size - 1) != b"\n"


class TunedTiles:
    """The `tuned_tiles` hook of fusion.driver.compile_model: the best record of each block's key
    whose tile still fits the SoC's budget."""

    def __init__(self, db: TuningDB):
        self.db = db
        self.hits: list[tuple[DwSepWorkload, TileConfig, float]] = []
        self.misses = 0

    def __call__(self, wl: DwSepWorkload, target) -> TileConfig | None:
        from schedules.plan import make_plan

        from fusion.targets import pw_engines

        engines = pw_engines(target, wl.dtype)
        rec = self.db.best(tuning_key(wl, target), accept=lambda t: t.pw_engine in engines
                           and make_plan(wl, t, target.soc).fits())
        if rec is None:
            self.misses += 1
            return None
        tile = tile_from_json(rec["tile"])
        self.hits.append((wl, tile, rec["latency_us"]))
        return tile

    def note(self) -> str:
        n = len(self.hits) + self.misses
        return (f"tuning database {self.db.path or '(in memory)'}: tuned tiles for {len(self.hits)} "
                f"of {n} fused blocks")
