"""The calibration suite: published on-device Ascend measurements vs the model. MODELED vs MEASURED.

benchmarks/fidelity/points.json holds the points (source, shape, dtype, cores, what the figure
includes). Each kind is predicted from the SoC table and the cost model's primitives through the
vendor-like kernel models of fusion/cost/vendor_baseline.py:

  copy      a GM->UB (AIV) or GM->L1 (AIC) read of `bytes` split over `cores`, `instr_per_core`
            DMA instructions of `burst_bytes` bursts, `l2_hit` of it served by L2
  eltwise   z = x + y streamed in `copy_elems` chunks; double-buffered: max of the pipes,
            single-buffered: the chunk's load, add and store in a row, each copy exposing the
            DMA latency; `bank_conflict`: the vector time is scaled by the UB bank-conflict factor
  matmul    fusion.cost.vendor_baseline.gemm_kernel (the vendor's tiling of M and N, K streamed)
  network   the vendor baseline of the whole network (fusion.cost.vendor_baseline.model_network)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from fusion.cost import cycles_to_us, vec_op
from fusion.core.errors import MegafuseError
from fusion.core.soc import SocSpec, get_soc
from fusion.core.sanitize import display
from fusion.core.soc import cube_side
from fusion.cost.vendor_baseline import copy_us, write_hit, gemm_kernel, launch_us, model_network
from schedules.workload import ceil_div
from fusion.cost.vendor_layers import layers_from_graph, layers_from_spec
from models.convnets import resnet_spec, vgg_spec
from fusion.frontend.onnx_import import load_graph
from models import build

POINTS = Path(__file__).resolve().parents[2] / "benchmarks" / "fidelity" / "points.json"
SETS = ("calibration", "validation")


@dataclass(frozen=True)
class Row:
    id: str
    set: str
    soc: str
    kind: str
    source: str
    measured_us: float
    modeled_us: float

    @property
    def ratio(self) -> float:
        return self.modeled_us / self.measured_us


def _printable(value) -> str:
    """A points-file string as it may appear in a message: quoted, escapes for anything odd."""
    return repr(str(value)[:80])


def load_points(path: str | Path = POINTS) -> dict:
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise MegafuseError(f"fidelity points file {_printable(path)} not found") from None
    except (OSError, ValueError) as e:
        raise MegafuseError(f"fidelity points file {_printable(path)} is not readable JSON "
                            f"({type(e).__name__})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("points"), list):
        raise MegafuseError(f"fidelity points file {_printable(path)} has no 'points' list")
    return doc


# --- point schema --------------------------------------------------------------------------
# The numbers each kind reads, with bounds: a divisor is >= 1, and the caps keep one prediction
# to seconds (a matmul is modeled tile by tile; a network is built layer by layer).
_INT, _FRACTION, _FLAG = "an integer", "a number", "true or false"
_CORES = (_INT, 1, 4096)
_FIELDS = {
    "copy": {"bytes": (_INT, 1, 1 << 44), "cores": _CORES, "instr_per_core": (_INT, 1, 1 << 44),
             "burst_bytes": (_INT, 1, 1 << 30), "l2_hit": (_FRACTION, 0, 1)},
    "eltwise": {"elems": (_INT, 1, 1 << 42), "cores": _CORES, "copy_elems": (_INT, 1, 1 << 30),
                "double_buffer": (_FLAG,), "bank_conflict": (_FLAG,)},
    "matmul": {"m": (_INT, 1, 1 << 20), "k": (_INT, 1, 1 << 20), "n": (_INT, 1, 1 << 20), "cores": _CORES},
    "network": {"batch": (_INT, 1, 128), "resolution": (_INT, 32, 1024)},
}
_REQUIRED = {"copy": ("bytes", "cores", "instr_per_core"), "eltwise": ("elems", "cores", "copy_elems"),
             "matmul": ("m", "k", "n"), "network": ("net",)}
MAX_MATMUL_MACS = 1 << 40   # m*n*k: twice the largest published point, about 2 s to model


def check_point(i: int, pt) -> None:
    """Point `i` of a points file holds what table() and predict() read, each number finite and in
    range; else one error naming the point and the field."""
    if not isinstance(pt, dict):
        raise MegafuseError(f"fidelity point {i}: must be an object")
    where = f"fidelity point {i} {_printable(pt.get('id'))}"

    def bad(field, want, value):
        return MegafuseError(f"{where}: {field} must be {want}, got {display(json.dumps(value), 40)}")

    for key in ("id", "set", "soc", "kind"):
        if type(pt.get(key)) is not str:
            raise bad(key, "a string", pt.get(key))
    src = pt.get("source")
    if not isinstance(src, dict) or type(src.get("repo")) is not str or type(src.get("path")) is not str:
        raise bad("source", "an object with string 'repo' and 'path'", src)
    if pt.get("dtype", "float16") not in ("float16", "float32"):   # the predictions size elements by it
        raise bad("dtype", '"float16" or "float32"', pt.get("dtype"))
    m = pt.get("measured_us")
    if type(m) not in (int, float) or not math.isfinite(m) or m <= 0:
        raise bad("measured_us", "a finite number > 0 (microseconds)", m)
    params = pt.get("params")
    if not isinstance(params, dict):
        raise bad("params", "an object", params)
    fields = _FIELDS.get(pt["kind"], {})
    for key in _REQUIRED.get(pt["kind"], ()):
        if key not in params:
            raise MegafuseError(f"{where}: params.{key} is missing (a {pt['kind']} point needs "
                                f"{', '.join(_REQUIRED[pt['kind']])})")
    for key, (want, *bounds) in fields.items():
        if key not in params:
            continue
        v = params[key]
        ok = (type(v) is bool if want is _FLAG else
              type(v) is int if want is _INT else type(v) in (int, float) and math.isfinite(v))
        if not ok or (bounds and not bounds[0] <= v <= bounds[1]):
            raise bad(f"params.{key}", f"{want}" + (f" in {bounds[0]:,}..{bounds[1]:,}" if bounds else ""), v)
    if pt["kind"] == "copy" and params.get("side", "aiv") not in ("aic", "aiv"):
        raise bad("params.side", '"aic" or "aiv"', params["side"])
    if pt["kind"] == "network" and type(params["net"]) is not str:
        raise bad("params.net", "a string", params["net"])
    if pt["kind"] == "matmul" and params["m"] * params["n"] * params["k"] > MAX_MATMUL_MACS:
        raise MegafuseError(f"{where}: params m*n*k is {params['m'] * params['n'] * params['k']:,}, "
                            f"over {MAX_MATMUL_MACS:,}")


# --- per-kind predictions ------------------------------------------------------------------
def predict_copy(soc: SocSpec, p: dict) -> float:
    cores = p["cores"]
    side = cube_side(soc) if p.get("side") == "aic" else soc
    body = copy_us(side, p["bytes"] / cores, p["instr_per_core"], "in", cores, p.get("l2_hit", 0.0),
                    p.get("burst_bytes"))
    return launch_us(soc, cores) + body


def predict_eltwise(soc: SocSpec, p: dict, dtype: str = "float16") -> float:
    e = 2 if dtype == "float16" else 4
    cores, chunk = p["cores"], p["copy_elems"]
    per = ceil_div(p["elems"], cores)
    chunks = ceil_div(per, chunk)
    bank = soc.ub_bank_conflict_factor if p.get("bank_conflict") else 1.0
    vec = cycles_to_us(soc, (vec_op(soc, chunk, e) * chunks).cycles(soc)) * bank
    out_total = p["elems"] * e
    mte2 = copy_us(soc, 2 * per * e, 2 * chunks, "in", cores, 0.0)
    mte3 = copy_us(soc, per * e, chunks, "out", cores, write_hit(soc, out_total))
    if p.get("double_buffer", True):
        body = max(mte2, vec, mte3) + (mte2 + mte3) / chunks
    else:   # load, add, store of each chunk in a row; every copy waits out the DMA latency
        body = mte2 + vec + mte3 + 3 * chunks * cycles_to_us(soc, soc.dma_latency_cycles)
    return launch_us(soc, cores) + body


def predict_matmul(soc: SocSpec, p: dict, dtype: str = "float16"):
    return gemm_kernel(soc, "mm", p["m"], p["k"], p["n"], dtype, cores=p.get("cores"),
                       init_us=soc.matmul_init_us)


@lru_cache(maxsize=32)
def network_layers(net: str, batch: int, resolution: int) -> tuple:
    specs = {"resnet18": lambda: resnet_spec(18), "resnet34": lambda: resnet_spec(34),
             "resnet50": lambda: resnet_spec(50), "resnet101": lambda: resnet_spec(101),
             "resnet152": lambda: resnet_spec(152), "wide_resnet50_2": lambda: resnet_spec(50, 128),
             "vgg16": lambda: vgg_spec(16), "vgg19": lambda: vgg_spec(19)}
    if net in specs:
        return tuple(layers_from_spec(specs[net](), batch, resolution))
    if net in ("mobilenet_v1", "mobilenet_v2"):
        return tuple(layers_from_graph(load_graph(build(net, batch=batch, resolution=resolution))))
    raise MegafuseError(f"fidelity: unknown network {_printable(net)}")


def predict_network(soc: SocSpec, p: dict, dtype: str = "float16") -> float:
    layers = network_layers(p["net"], p.get("batch", 1), p.get("resolution", 224))
    return model_network(layers, soc, dtype).time_us


PREDICT = {"copy": predict_copy, "eltwise": predict_eltwise, "matmul": predict_matmul,
           "network": predict_network}


def _soc_of(point: dict) -> SocSpec:
    try:
        return get_soc(str(point["soc"]))
    except MegafuseError:
        raise MegafuseError(f"fidelity point {_printable(point.get('id'))}: unknown SoC "
                            f"{_printable(point['soc'])}") from None


def predict(point: dict, soc: SocSpec | None = None) -> float:
    soc = soc or _soc_of(point)
    fn = PREDICT.get(point["kind"])
    if fn is None:
        raise MegafuseError(f"fidelity point {_printable(point.get('id'))}: unknown kind {_printable(point['kind'])}")
    t = fn(soc, point["params"]) if point["kind"] == "copy" else fn(soc, point["params"], point.get("dtype", "float16"))
    if point["kind"] == "matmul":   # figures read per core (aic_time) leave out the task's launch
        return t.body_us if point.get("per_core_figure") else t.time_us
    return t - launch_us(soc, point["params"]["cores"]) if point.get("per_core_figure") else t


def table(doc: dict | None = None, socs: dict[str, SocSpec] | None = None) -> list[Row]:
    doc = doc or load_points()
    rows = []
    for i, pt in enumerate(doc["points"]):
        check_point(i, pt)
        soc = (socs or {}).get(pt["soc"]) or _soc_of(pt)
        src = pt["source"]
        rows.append(Row(pt["id"], pt["set"], pt["soc"], pt["kind"], f"{src['repo'].split()[0]}:{src['path']}",
                        float(pt["measured_us"]), predict(pt, soc)))
    return rows


def summary(rows: list[Row]) -> dict:
    out = {}
    for s in SETS:
        errs = sorted(abs(r.ratio - 1) for r in rows if r.set == s)
        worst = max((max(r.ratio, 1 / r.ratio) for r in rows if r.set == s), default=math.nan)
        nets = [abs(r.ratio - 1) for r in rows if r.set == s and r.kind == "network"]
        out[s] = {"points": len(errs), "median_abs_err": _median(errs), "max_factor": worst,
                  "network_max_abs_err": max(nets) if nets else None}
    return out


def _median(xs: list[float]) -> float:
    if not xs:
        return math.nan
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

