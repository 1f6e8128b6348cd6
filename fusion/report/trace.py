"""Chrome trace-event JSON of modeled kernels (loads in Perfetto and chrome://tracing).

One process per (kernel, core) with one thread per pipe (MTE2, vector, cube, MTE3), plus one
process per kernel holding its launch and body; kernels are placed one after another in time.
Timestamps are microseconds (the format's unit); every event is marked as modeled.
"""

from __future__ import annotations

import re

from fusion.cost import PIPES, KernelCost

_TID = {"kernel": 0, **{p: i + 1 for i, p in enumerate(PIPES)}}


def _core_key(core: str) -> tuple:
    m = re.match(r"([a-z]+)(\d+)$", core)
    return (m.group(1), int(m.group(2))) if m else (core, 0)


def chrome_trace(costs: list[tuple[str, KernelCost]]) -> dict:
    events: list[dict] = []
    t0 = 0.0
    pid = 0
    for kname, cost in costs:
        # the kernel itself: launch, then body
        pid += 1
        events += _meta(pid, f"{kname} [{cost.soc}, modeled {cost.time_us:.2f} us]", pid * 1000, {0: "kernel"})
        events.append(_x(pid, 0, t0, cost.launch_us, f"{kname} launch", {"modeled": True}))
        events.append(_x(pid, 0, t0 + cost.launch_us, cost.body_us, f"{kname} body",
                         {"modeled": True, "bottleneck": cost.bottleneck, "tile": cost.tile,
                          "gm_bytes": cost.gm_bytes, "traffic_ratio": round(cost.traffic_ratio, 4),
                          "timeline_note": cost.timeline_note}))
        start = t0 + cost.launch_us
        by_core: dict[str, list] = {}
        for e in cost.timeline:
            by_core.setdefault(e.core, []).append(e)
        for core in sorted(by_core, key=_core_key):
            pid += 1
            events += _meta(pid, f"{kname} / {core}", pid * 1000, {_TID[p]: p for p in PIPES})
            for e in by_core[core]:
                events.append(_x(pid, _TID[e.pipe], start + e.start_us, e.dur_us, e.label,
                                 {"modeled": True, "core": core, "pipe": e.pipe}))
        t0 += cost.time_us
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"label": "modeled (megafuse analytic cost model)"}}


def _x(pid: int, tid: int, ts: float, dur: float, name: str, args: dict) -> dict:
    return {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "cat": "modeled",
            "args": args}


def _meta(pid: int, name: str, sort: int, threads: dict[int, str]) -> list[dict]:
    out = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}},
           {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": sort}}]
    for tid, tname in threads.items():
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": tname}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                    "args": {"sort_index": tid}})
    return out
