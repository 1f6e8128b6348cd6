"""CPU schedule for the elementwise kernels on NC1HWC0 tensors (activations, Add/Mul/...,
BatchNormalization between fused blocks): one flat loop over the output, a vector-wide inner
loop, chunks of CHUNK vectors over the threads. (The light generic schedule parallelises the two
outer loops only: 6 iterations for a 1×6×112×112×16 tensor; Relu6 there measured 980 µs with it,
161 µs with this one, 1 thread. On NCHW tensors the light schedule measured as fast or faster.)"""

from __future__ import annotations

from tvm import s_tir

from schedules.cpu_conv import largest_divisor

LANES = 16
CHUNK = 256   # vectors per parallel task: 16 KiB of fp32, big enough to amortise the task
# stages of the TE computes in schedules/ops.py that only cast or combine (inlined into "y")
INLINE = ("a32", "b32", "T_add", "T_multiply", "T_subtract", "T_divide")


def schedule_elementwise(sch: s_tir.Schedule) -> bool:
    """Schedules `sch` in place; False when the kernel is not one data-parallel output block
    after inlining (the caller then uses another schedule on a fresh copy)."""
    for name in INLINE:
        try:
            sch.compute_inline(sch.get_sblock(name))
        except Exception:  # noqa: BLE001 - stage absent in this kernel
            continue
    y = sch.get_sblock("y")
    if any(int(iv.iter_type) != 0 for iv in sch.get(y).iter_vars):
        return False
    loops = sch.get_loops(y)
    flat = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    total = int(sch.get(flat).extent)
    lanes = largest_divisor(total, LANES)
    outer, inner = sch.split(flat, [None, lanes])
    chunk = largest_divisor(total // lanes, CHUNK)
    task, _ = sch.split(outer, [None, chunk])
    sch.parallel(task)
    sch.vectorize(inner)
    return True
