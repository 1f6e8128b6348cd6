"""What a tile sweep produces (Point, BlockResult) and what the sweeps share: the worker pool, the
progress bar and the stored points of the tuning database."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from fusion.tuning.db import TuningDB, point_id, tile_from_json
from fusion.tuning.space import TileSpace
from fusion.tuning.workers import kill_workers, start_pool
from schedules.workload import DwSepWorkload, TileConfig


@dataclass
class Point:
    tile: TileConfig
    latency_us: float | None
    source: str                 # stored (from the database) | new
    record: dict
    bound_us: float | None = None


@dataclass
class BlockResult:
    name: str
    workload: DwSepWorkload
    target: str
    key: str
    evaluator: str
    space: TileSpace
    default: TileConfig
    points: dict[str, Point] = field(default_factory=dict)
    bound_skipped: int = 0          # legal points not modeled: their lower bound ≥ the K-th best
    bound_fallback: bool = False    # a bound violation switched the sweep to plain exhaustive
    cell_bound: dict = field(default_factory=dict)   # (th, tw) → lowest bound of an unmodeled cell
    bounds: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0
    failed: int = 0
    stopped_early: bool = False

    @property
    def new(self) -> int:
        return sum(p.source == "new" for p in self.points.values())

    @property
    def stored(self) -> int:
        return sum(p.source == "stored" for p in self.points.values())

    def ranked(self) -> list[Point]:
        ok = [p for p in self.points.values() if p.latency_us is not None and not p.record.get("error")]
        return sorted(ok, key=lambda p: (p.latency_us, p.tile.key()))

    @property
    def best(self) -> Point | None:
        r = self.ranked()
        return r[0] if r else None

    @property
    def default_point(self) -> Point | None:
        return self.points.get(point_id(self.default))

    @property
    def speedup(self) -> float | None:
        d, b = self.default_point, self.best
        if d is None or b is None or d.latency_us is None or not b.latency_us:
            return None
        return d.latency_us / b.latency_us

    @property
    def covered(self) -> int:
        """Legal points settled: evaluated (now or before) or excluded by the bound."""
        return len(self.points) + self.bound_skipped

    @property
    def points_per_s(self) -> float:
        return self.covered / self.elapsed_s if self.elapsed_s > 0 else float("inf")


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------
class _Progress:
    def __init__(self, total: int, desc: str, enabled: bool):
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=desc, unit="pt", leave=False, dynamic_ncols=True,
                                mininterval=0.2)
            except ImportError:  # pragma: no cover - tqdm is a dependency; degrade quietly
                self.bar = None

    def update(self, n: int = 1) -> None:
        if self.bar is not None and n:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Pool:
    """A lazily started spawn-context process pool shared by the sweeps of one run."""

    def __init__(self, workers: int):
        self.workers = max(0, int(workers))
        self.force = False      # a pool even for one worker (llvm: compile out of process)
        self._ex: ProcessPoolExecutor | None = None

    def get(self) -> ProcessPoolExecutor | None:
        if self.workers <= 1 and not self.force:
            return None
        if self._ex is None:
            self._ex = start_pool(max(1, self.workers))
        return self._ex

    def close(self, abort: bool = False) -> None:
        if self._ex is not None:
            if abort:   # an error or a signal: do not wait for the workers' tasks
                kill_workers(self._ex)
            else:
                self._ex.shutdown(wait=True, cancel_futures=True)
            self._ex = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(abort=exc_type is not None)


def _stored_points(db: TuningDB, key: str, allowed: set[str]) -> dict[str, Point]:
    out = {}
    for pid, rec in db.records(key).items():
        if pid in allowed:
            out[pid] = Point(tile_from_json(rec["tile"]), rec.get("latency_us"), "stored", rec)
    return out
