"""The roofline of a kernel: a true lower bound of the step simulator's time, from the same hardware
facts (fusion/core/soc.py) the simulator charges (MODELED).

- memory: the kernel's minimal GM bytes can move no faster than the faster of the two levels that
  serve DMA bytes (L2 hits and writes L2 absorbs at soc.l2_gbps, `_assemble`'s L2 floor), and the
  minimal bytes that are not in L2 when the kernel starts (a producer's output, `resident_bytes`)
  must reach HBM: reads on MTE2 and writes on MTE3, each direction at up to soc.hbm_gbps in the
  DMA model (primitives.dma_us; no floor charges them together: results.l2_floor_us), so at
  least half of them at soc.hbm_gbps;
- compute: the flops at the peak rate of the unit that runs them -- the vector unit processes
  soc.vector_repeat_bytes per repeat at soc.vector_repeats_per_cycle on every vector core, one
  multiply-add (2 flops) per lane, lanes as narrow as the kernel's dtype allows; the cube one fractal
  per cube_cycles on every cube core.
The earlier roofline charged the minimal bytes at HBM bandwidth and the vector at fp32 lanes, which
the simulator beats when the input is in L2 or the DW runs in fp16 (efficiencies of 114-249 %)."""

from __future__ import annotations

from fusion.core.soc import SocSpec
from schedules.isa import cube_cycles, itemsize


def vector_peak_flops_per_us(soc: SocSpec, elem_bytes: int) -> float:
    lanes = soc.vector_repeat_bytes / elem_bytes
    return 2 * lanes * soc.vector_repeats_per_cycle * soc.clock_ghz * 1e3 * soc.vector_cores


def cube_peak_flops_per_us(soc: SocSpec, dtype: str) -> float:
    m, k, n = soc.cube_fractal
    return 2 * m * k * n / cube_cycles(soc, 1, dtype) * soc.clock_ghz * 1e3 * soc.cube_cores


def memory_floor_us(soc: SocSpec, min_bytes: int, resident_bytes: int = 0) -> float:
    fastest = max(soc.hbm_gbps, soc.l2_gbps) * 1e3
    return max(min_bytes / fastest, max(0, min_bytes - resident_bytes) / (2 * soc.hbm_gbps * 1e3))


def compute_floor_us(soc: SocSpec, vec_flops: int, cube_flops: int, vec_elem_bytes: int, dtype: str) -> float:
    narrowest = min(vec_elem_bytes, itemsize(dtype))
    vec = vec_flops / vector_peak_flops_per_us(soc, narrowest) if vec_flops else 0.0
    cube = cube_flops / cube_peak_flops_per_us(soc, dtype) if cube_flops else 0.0
    return max(vec, cube)


def roofline_us(soc: SocSpec, min_bytes: int, vec_flops: int, cube_flops: int, vec_elem_bytes: int,
                dtype: str, resident_bytes: int = 0) -> float:
    return max(memory_floor_us(soc, min_bytes, resident_bytes),
               compute_floor_us(soc, vec_flops, cube_flops, vec_elem_bytes, dtype))
