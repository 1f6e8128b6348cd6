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

import fcntl
import functools
import hashlib
import json
import math
import os
import stat
import time
import warnings
from dataclasses import asdict
from pathlib import Path

from fusion.core.errors import TuningDatabaseError
from fusion.tuning.plausible import implausible
from schedules.workload import DwSepWorkload, TileConfig
from fusion.core.version import __version__
from fusion.core.soc import SOCS
from fusion.core.sanitize import display
from schedules.targets import llvm_target
from schedules.plan import make_plan
from schedules.targets import pw_engines

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
_COST_MODEL_SOURCES = ("fusion/cost/__init__.py", "fusion/cost/primitives.py",
                       "fusion/cost/pipes.py", "schedules/l2.py", "fusion/cost/results.py",
                       "fusion/cost/fused.py", "fusion/cost/vendor_baseline.py", "schedules/traffic.py",
                       "schedules/plan.py", "schedules/program.py", "schedules/isa.py",
                       "fusion/cost/block_l2.py", "schedules/footprint.py", "schedules/steps.py")


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

        return {"llvm_target": llvm_target(),
                "schedule": _source_hash("schedules/dwsep_schedule.py", "schedules/dwsep_te.py",
                                         "schedules/build.py")}
    return {"cost_model": _source_hash(*_COST_MODEL_SOURCES)}


def key_context(wl: DwSepWorkload, target, evaluator: str | None = None, options: dict | None = None) -> dict:

    evaluator = evaluator or evaluator_for(target)
    # sim and ascend share the cost model, so they share records (a tune on sim picks the tiles of
    # the Ascend C kernels too)
    kind = "sim" if evaluator == "modeled" else target.kind
    return {"format": FORMAT, "workload": asdict(wl), "layout": LAYOUT, "target": kind,
            "soc": target.soc.name, "soc_spec": _digest(asdict(target.soc)),
            "megafuse": __version__, "tvm": tvm_version(), "evaluator": evaluator,
            "options": code_options(target, evaluator) if options is None else options}


def tuning_key(wl: DwSepWorkload, target, evaluator: str | None = None, options: dict | None = None) -> str:
    return _digest(key_context(wl, target, evaluator, options))


def tile_to_json(t: TileConfig) -> dict:
    """The record's tile; norm_phase (a ConvNeXt block's default two-phase tile) and b_stream (a
    two-phase tile streaming its PW weights) and gemm_bm (forced GEMM rows) only where set, so the
    records of every other tile stay what they were."""
    return ({f: getattr(t, f) for f in TILE_FIELDS} | ({"norm_phase": True} if t.norm_phase else {})
            | ({"b_stream": True} if t.b_stream else {}) | ({"gemm_bm": t.gemm_bm} if t.gemm_bm else {}))


def tile_from_json(d: dict) -> TileConfig:
    """The TileConfig of a record's tile, checked by schema (never coerced: 2.9 is not 2, "false"
    is not a boolean). Raises ValueError saying which field is wrong."""
    why = tile_problem(d)
    if why:
        raise ValueError(why)
    return TileConfig(d["th"], d["tw"], d["cob"], d["cib"], d["double_buffer"], d["pw_engine"], d["cores"],
                      d.get("norm_phase", False), d.get("b_stream", False), d.get("gemm_bm", 0))


# field -> (lowest, highest) of the integer tile fields; cores is also capped by the SoC
TILE_INT_RANGES = {"th": (1, 65536), "tw": (1, 65536), "cob": (1, 65536), "cib": (0, 65536), "cores": (0, 1024)}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def tile_problem(d, max_cores: int | None = None) -> str | None:
    if not isinstance(d, dict):
        return "tile is not an object"
    extra = set(d) - set(TILE_FIELDS) - {"norm_phase", "b_stream", "gemm_bm"}
    if extra:
        return f"unknown tile field(s) {sorted(extra)[:3]}"
    for f, (lo, hi) in TILE_INT_RANGES.items():
        v = d.get(f)
        if not _is_int(v):
            return f"tile field {f} is not an integer"
        if not lo <= v <= hi:
            return f"tile field {f}={v} is outside {lo}..{hi}"
    if max_cores is not None and d["cores"] > max_cores:
        return f"tile field cores={d['cores']} is more than the SoC's {max_cores} cores"
    if not isinstance(d.get("double_buffer"), bool):
        return "tile field double_buffer is not a boolean"
    if d.get("pw_engine") not in ("vector", "cube", "twophase"):   # twophase: the default tile tune records
        return "tile field pw_engine is not 'vector', 'cube' or 'twophase'"
    norm = d.get("norm_phase", False)
    if not isinstance(norm, bool) or (norm and d["pw_engine"] != "twophase"):
        return "tile field norm_phase is not a boolean of a twophase tile"
    stream = d.get("b_stream", False)
    if not isinstance(stream, bool) or (stream and d["pw_engine"] != "twophase"):
        return "tile field b_stream is not a boolean of a twophase tile"
    bm = d.get("gemm_bm", 0)
    if not _is_int(bm) or bm < 0 or bm % 16 or bm > 65536 or (bm and d["pw_engine"] != "twophase"):
        return "tile field gemm_bm is not a multiple of 16 rows of a twophase tile"
    return None


def point_id(t: TileConfig) -> str:
    return t.key()


def make_record(key: str, ctx: dict, tile: TileConfig, result: dict, block: str = "") -> dict:
    rec = {"format": FORMAT, "key": key, "point": point_id(tile), "tile": tile_to_json(tile),
           "latency_us": result.get("latency_us"), "evaluator": ctx["evaluator"],
           "target": ctx["target"], "soc": ctx["soc"], "workload": ctx["workload"],
           "megafuse": ctx["megafuse"], "tvm": ctx["tvm"], "block": block,
           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    for k in ("min_us", "check_rel_err", "error", "threads", "bottleneck", "ub_bytes", "cores", "measured_on"):
        if result.get(k) is not None:
            rec[k] = result[k]
    return rec


MAX_LINE_BYTES = 1 << 16     # a record is ~1 KB; longer lines are not ours (and not parsed)


def _valid(rec) -> str | None:
    """None for a well-formed record, else why not (schema: types and ranges, no coercion)."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    if rec.get("format") != FORMAT:
        return f"foreign record (format {str(rec.get('format'))[:40]!r})"
    key = rec.get("key")
    if not isinstance(key, str) or not 1 <= len(key) <= 128 or not isinstance(rec.get("tile"), dict):
        return "record without key or tile"
    lat = rec.get("latency_us")
    if lat is not None and (not isinstance(lat, (int, float)) or isinstance(lat, bool) or not math.isfinite(lat)
                            or lat < 0):
        return "bad latency"
    why = tile_problem(rec["tile"], _soc_cores(rec.get("soc")))
    if why:
        return why
    if rec.get("point") != point_id(tile_from_json(rec["tile"])):
        return "point hash does not match its tile"
    if "error" in rec and not isinstance(rec["error"], (str, type(None))):
        return "error field is not a string"
    return None


def _soc_cores(name) -> int | None:

    soc = SOCS.get(name) if isinstance(name, str) else None
    return max(soc.vector_cores, soc.cube_cores) if soc is not None else None


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def _parse_line(raw: bytes):
    """(record, None) or (None, why)."""
    if len(raw) > MAX_LINE_BYTES:
        return None, f"line longer than {MAX_LINE_BYTES:,} bytes"
    try:
        rec = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        return None, "nested too deeply"
    except (UnicodeDecodeError, ValueError) as e:
        return None, f"not JSON ({type(e).__name__})"
    try:
        return (rec, None) if (why := _valid(rec)) is None else (None, why)
    except (RecursionError, OverflowError, TypeError, ValueError) as e:
        return None, f"bad record ({type(e).__name__})"


class TuningDB:
    """Records grouped by key; `path=None` keeps them in memory only.

    Concurrent writers (two `tune` runs on one file): `append` holds an exclusive flock on the
    file, first reads what others appended since this process last read, and writes only the
    records whose (key, point) the file does not hold yet — each record is written once.
    `refresh()` reads what others appended, so a sweep can skip points another run evaluated."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path is not None else None
        self._by_key: dict[str, dict[str, dict]] = {}
        self.skipped = 0
        self.lines = 0
        self._loaded = False
        self._offset = 0        # bytes of the file consumed (complete lines only)
        self._lineno = 0

    # --- reading ----------------------------------------------------------------------------
    def load(self) -> "TuningDB":
        self._loaded = True
        if self.path is None or not self.path.exists():
            return self
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise TuningDatabaseError(f"cannot read tuning database {_show(self.path)}: {e.strerror or e}") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise TuningDatabaseError(f"tuning database {_show(self.path)} is not a regular file")
            self._read_new(fd)
        except OSError as e:
            raise TuningDatabaseError(f"cannot read tuning database {_show(self.path)}: {e.strerror or e}") from None
        finally:
            os.close(fd)
        return self

    def refresh(self) -> "TuningDB":
        """Read the records other processes appended since the last read."""
        return self.load()

    def _read_new(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        if size < self._offset:          # truncated or replaced underneath: read it all again
            self._offset, self._lineno = 0, 0
        data = os.pread(fd, size - self._offset, self._offset) if size > self._offset else b""
        # appends are single O_APPEND writes of whole lines, so a last line without its newline is
        # torn (a writer died mid-write): it is skipped like any bad line, and the next append
        # starts on a new line
        end = len(data)
        for raw in data.split(b"\n")[:-1] + ([data[data.rfind(b"\n") + 1:]] if not data.endswith(b"\n") else []):
            self._lineno += 1
            if not raw.strip():
                continue
            self.lines += 1
            rec, why = _parse_line(raw)
            if why is not None:
                self.skipped += 1
                warnings.warn(f"{_show(self.path)}:{self._lineno}: skipped a line of the tuning database: {why}",
                              TuningDatabaseWarning, stacklevel=3)
                continue
            self._by_key.setdefault(rec["key"], {})[rec["point"]] = rec
        self._offset += end

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
    def append(self, records: list[dict]) -> int:
        """Store records not stored yet: under an exclusive flock, read what others appended,
        then one os.write of the new complete lines with O_APPEND, then fsync. Returns how many
        lines were written."""
        self._ensure()
        if not records:
            return 0
        if self.path is None:
            for rec in records:
                self._by_key.setdefault(rec["key"], {})[rec["point"]] = rec
            return 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
                         | getattr(os, "O_CLOEXEC", 0), 0o644)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):   # re-checked here: a FIFO swapped in since load
                    raise TuningDatabaseError(f"tuning database {_show(self.path)} is not a regular file")
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._read_new(fd)
                new = [r for r in records if r["point"] not in self._by_key.get(r["key"], {})]
                for rec in records:
                    self._by_key.setdefault(rec["key"], {})[rec["point"]] = rec
                if not new:
                    return 0
                data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in new).encode()
                if _ends_without_newline(fd):   # a torn last line of a crashed writer stays its own line
                    data = b"\n" + data
                n = os.write(fd, data)
                if n != len(data):
                    raise OSError(f"short write ({n} of {len(data)} bytes)")
                os.fsync(fd)
                self._offset = os.fstat(fd).st_size
                self._lineno += data.count(b"\n")
                return len(new)
            finally:
                os.close(fd)   # releases the lock
        except OSError as e:
            raise TuningDatabaseError(f"cannot write tuning database {_show(self.path)}: "
                                      f"{getattr(e, 'strerror', None) or e}") from None


def _show(path) -> str:

    return display(str(path), 0)


def _ends_without_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    if size == 0:
        return False
    return os.pread(fd, 1, size - 1) != b"\n"


class TunedTiles:
    """The `tuned_tiles` hook of fusion.driver.compiler.compile_model: the best record of each block's key
    whose tile still fits the SoC's budget."""

    def __init__(self, db: TuningDB, pw_engine: str | None = None, double_buffer: bool | None = None):
        self.db = db
        self.hits: list[tuple[DwSepWorkload, TileConfig, float]] = []
        self.misses = 0
        # knobs forced on the command line: records with another value never win over them
        self.pw_engine, self.double_buffer = pw_engine, double_buffer

    def __call__(self, wl: DwSepWorkload, target) -> TileConfig | None:


        engines = pw_engines(target, wl.dtype)
        if self.pw_engine:
            engines = tuple(e for e in engines if e == self.pw_engine)
        key, refused = tuning_key(wl, target), set()
        while True:   # the fastest record that fits, agrees with the forced flags and is believable
            rec = self.db.best(key, accept=lambda t: t.key() not in refused and t.pw_engine in engines
                               and (self.double_buffer is None or t.double_buffer == self.double_buffer)
                               and make_plan(wl, t, target.soc).fits())
            if rec is None:
                break
            why = implausible(rec, wl, tile_from_json(rec["tile"]), target)
            if why is None:
                break
            refused.add(rec["point"])
            warnings.warn(f"tuning database {_show(self.db.path) if self.db.path else '(in memory)'}: record "
                          f"for {wl.describe()} skipped: {why}", TuningDatabaseWarning, stacklevel=2)
        if rec is None:
            self.misses += 1
            return None
        tile = tile_from_json(rec["tile"])
        self.hits.append((wl, tile, rec["latency_us"]))
        return tile

    def note(self) -> str:
        n = len(self.hits) + self.misses
        forced = [f for f, v in (("--pw-engine " + str(self.pw_engine), self.pw_engine),
                                 ("--no-double-buffer", self.double_buffer is False)) if v]
        also = f" (only records that agree with {' and '.join(forced)}: forced flags win)" if forced else ""
        return (f"tuning database {_show(self.db.path) if self.db.path else '(in memory)'}: tuned tiles for "
                f"{len(self.hits)} of {n} fused blocks{also}")
