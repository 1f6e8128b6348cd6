"""MIX (AIC + AIV) kernels in the host emulation (fusion/emu) on arch 2201: one launch
runs every AIC and AIV of the blocks as cooperating threads with cross-core flags; results match
NumPy, counters come per core, and broken rules (a wait nobody satisfies, code on the wrong core
type, a launch that contradicts the declared kernel type, ...) are EmulationErrors naming the
kernel and line, never hangs. Every MIX run goes through `run_bounded`, which fails the test
instead of hanging if the emulator ever did.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel

KERNELS = Path(__file__).parents[1] / "ascendc_kernels"
MIX_SRC = KERNELS / "mix_vec_cube.cpp"
FAULT_SRC = KERNELS / "mix_faults.cpp"
FAULT_LINES = FAULT_SRC.read_text().splitlines()


pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py


def run_bounded(kernel, *args, timeout: float = 60.0, **kwargs):
    """kernel.run(...) on a helper thread; a run still going after `timeout` s fails the test."""
    box: dict[str, object] = {}

    def target():
        try:
            box["result"] = kernel.run(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - re-raised on the test thread
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"kernel '{kernel.kernel_name}' still running after {timeout} s: the emulator hangs"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]


def fault_line(name: str) -> int:
    return next(i for i, ln in enumerate(FAULT_LINES, 1) if f"FAULT:{name}" in ln)


# ---- a MIX kernel: AIV producer -> GM workspace -> AIC Mmad -> GM workspace -> AIV epilogue ---

def mix_inputs(blocks: int, m: int = 32, n: int = 32, k: int = 32, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((blocks, m, k)).astype(np.float16)
    w = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    y = np.zeros((blocks, m, n), np.float32)
    # user workspace per block: A (m x k half) then C (m x n float)
    ws = np.zeros(blocks * (m * k * 2 + m * n * 4), np.uint8)
    tiling = np.array([m, n, k], np.uint32)
    ref = (2 * x.astype(np.float64)) @ w.astype(np.float64) + bias
    return [x, w, bias, y, ws, tiling], y, ref


@pytest.mark.parametrize("blocks", [2, 3])
def test_mix_aic_1_2_matches_numpy_and_counts_per_core(blocks):
    kernel = build_kernel(MIX_SRC, "mix_vec_cube")
    m = n = k = 32
    args, y, ref = mix_inputs(blocks)

    res = run_bounded(kernel, args, block_dim=blocks, soc="ascend910b2", kernel_type="mix_aic_1_2")

    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    assert res.kernel_type == "mix_aic_1_2" and res.block_dim == blocks
    names = [c.name for c in res.cores]
    assert names == [n_ for b in range(blocks) for n_ in (f"AIC{b}", f"AIV{2 * b}", f"AIV{2 * b + 1}")]
    assert [(c.core_type, c.block, c.sub_block_idx) for c in res.cores[:3]] == [("AIC", 0, 0), ("AIV", 0, 0),
                                                                              ("AIV", 0, 1)]
    rows = m // 2
    for core, pc in zip(res.cores, res.per_core):
        if core.core_type == "AIC":
            assert pc["mmad_instructions"] == 1 and pc["vector_instructions"] == 0
            assert pc["dma_gm_to_l1"] == 2 and pc["dma_l0c_to_gm"] == 1 and pc["dma_gm_to_ub"] == 0
            assert pc["gm_read_bytes"] == (m * k + k * n) * 2 and pc["gm_write_bytes"] == m * n * 4
        else:
            assert pc["mmad_instructions"] == 0 and pc["dma_gm_to_l1"] == 0
            assert pc["vector_instructions"] == 1 + rows  # Muls, then one Add per row
            assert pc["gm_read_bytes"] == rows * k * 2 + n * 4 + rows * n * 4
            assert pc["gm_write_bytes"] == rows * k * 2 + rows * n * 4
    by = res.counters_by_core_type
    assert set(by) == {"AIC", "AIV"}
    assert by["AIC"]["mmad_instructions"] == blocks and by["AIV"]["mmad_instructions"] == 0
    assert by["AIV"]["vector_instructions"] == 2 * blocks * (1 + rows)
    assert all(res.counters[c] == by["AIC"][c] + by["AIV"][c] for c in res.counters)


def test_mix_aic_1_1_one_aiv_per_block():
    kernel = build_kernel(MIX_SRC, "mix_vec_cube_1_1")
    args, y, ref = mix_inputs(2, seed=3)
    res = run_bounded(kernel, args, block_dim=2, kernel_type="mix_aic_1_1")
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    assert [c.name for c in res.cores] == ["AIC0", "AIV0", "AIC1", "AIV1"]
    assert res.counters_by_core_type["AIV"]["vector_instructions"] == 2 * (1 + 32)


def test_core_indices_on_aic_and_aiv():
    kernel = build_kernel(MIX_SRC, "mix_ids")
    blocks = 3
    out = np.full((blocks * 3, 8), -1, np.int32)
    run_bounded(kernel, [out], block_dim=blocks, kernel_type="KERNEL_TYPE_MIX_AIC_1_2")
    for b in range(blocks):
        # GetBlockIdx, GetBlockNum, GetSubBlockIdx, GetTaskRation, GetSubBlockNum, g_coreType, IS_AIV, IS_AIC
        assert out[3 * b].tolist() == [b, blocks, 0, 1, 1, 1, 0, 1]  # the AIC of block b
        for s in range(2):
            assert out[3 * b + 1 + s].tolist() == [2 * b + s, blocks, s, 2, 2, 2, 1, 0]


def test_sync_modes_0_and_1_order_the_cores():
    # Without the barriers the cooperative schedule would let each core read before its neighbour wrote.
    kernel = build_kernel(MIX_SRC, "mix_sync_modes")
    blocks = 3
    aivs = 2 * blocks
    scratch = np.zeros(64, np.int32)
    out = np.zeros(64, np.int32)
    run_bounded(kernel, [scratch, out], block_dim=blocks, kernel_type="mix_aic_1_2")
    assert out[:aivs].tolist() == [100 + (i + 1) % aivs for i in range(aivs)]           # mode 0, AIVs
    assert out[aivs:2 * aivs].tolist() == [1000 + (i ^ 1) for i in range(aivs)]         # mode 1
    assert out[2 * aivs:2 * aivs + blocks].tolist() == [sum(7 + b for b in range(blocks))] * blocks  # mode 0, AICs


def test_mix_aiv_1_0_barrier():
    kernel = build_kernel(MIX_SRC, "mix_aiv_barrier")
    scratch = np.zeros(8, np.int32)
    out = np.zeros(8, np.int32)
    res = run_bounded(kernel, [scratch, out], block_dim=5, kernel_type="mix_aiv_1_0")
    assert out[:5].tolist() == [10 * ((i + 4) % 5) for i in range(5)]
    assert [c.name for c in res.cores] == [f"AIV{i}" for i in range(5)]


def test_mode0_over_more_cores_than_the_chip_has():
    kernel = build_kernel(MIX_SRC, "mix_sync_modes")
    scratch = np.zeros(256, np.int32)
    out = np.zeros(256, np.int32)
    with pytest.raises(EmulationError, match=r"mode-0 sync over all 21 AIC cores of the launch, but ascend910b3 "
                                             r"has 20: the blocks then run in waves"):
        run_bounded(kernel, [scratch, out], block_dim=21, soc="ascend910b3", kernel_type="mix_aic_1_2")
    run_bounded(kernel, [scratch, out], block_dim=20, soc="ascend910b3", kernel_type="mix_aic_1_2")


def test_non_mix_runs_report_their_cores():
    kernel = build_kernel(KERNELS / "add_custom.cpp", "add_custom")
    n = 4 * 2 * 128
    x = np.ones(n, np.float16)
    z = np.zeros(n, np.float16)
    res = kernel.run([x, x, z, None, np.array([n, 1], np.uint32)], block_dim=4)
    assert res.kernel_type is None and [c.name for c in res.cores] == ["AIV0", "AIV1", "AIV2", "AIV3"]
    assert set(res.counters_by_core_type) == {"AIV"} and (z == 2).all()
    res = kernel.run([x, x, z, None, np.array([n, 1], np.uint32)], block_dim=4, kernel_type="aiv_only")
    assert res.kernel_type == "aiv_only"


# ---- rules -------------------------------------------------------------------------------

MIX_FAULTS = [
    # mode, marker, core of the reported error, expected text
    (1, "wait_forever", "AIV0", ("CrossCoreWaitFlag(5) on AIV0 of block 0 waits forever: its flag-5 counter is 0 "
                                 "and no core can raise it any more (the AIC of block 0: finished; AIV1 of block 0: "
                                 "waits in CrossCoreWaitFlag(5)")),
    (2, "vector_on_aic", "AIC", ("Adds: dst is a VECCALC tensor in UB, which the AIC of a MIX kernel does not have "
                                 "(its InitBuffer at line")),
    (3, "cube_on_aiv", "AIV0", "is a A1 tensor in L1, which an AIV of a MIX kernel does not have"),
    (4, "unpaired_set", "AIC", ("CrossCoreSetFlag<2, PIPE_FIX>(2) raised flag 2 of AIV0 of block 0, which "
                                "finished without a matching CrossCoreWaitFlag(2)")),
    (5, "counter_overflow", "AIC", "the flag-2 counter of AIV0 of block 0 would exceed 15"),
    (6, "error_while_waiting", "AIV0", ("DataCopy accesses GlobalTensor elements [1008, 1040) past its "
                                        "SetGlobalBuffer size 1024")),
    (7, "deadlock", "AIC", "CrossCoreWaitFlag(1) on the AIC of block 0 waits forever"),
    (8, "mode1_on_aic", "AIC", "mode 1 synchronises the AIVs of a block; it is called on the AIC"),
    (9, "flag_range", "AIV0", "flag id 16 is outside [0, 15]"),
    (10, "half_reported", "AIC", "waits forever: its flag-0 counter is 0 and no core can raise it any more"),
    (11, "pipe_s", "AIV0", "(not PIPE_S / PIPE_ALL)"),
    (12, "unpaired_aiv_set", "AIV1", ("raised flag 6 of the AIC of block 0, which finished without a matching "
                                      "CrossCoreWaitFlag(6)")),
]


@pytest.mark.parametrize("mode,marker,core,text", MIX_FAULTS, ids=[f[1] for f in MIX_FAULTS])
def test_mix_rule_violation_names_kernel_line_block_and_core(mode, marker, core, text):
    kernel = build_kernel(FAULT_SRC, "mix_fault")
    x = np.zeros(1024, np.float16)
    with pytest.raises(EmulationError) as info:
        run_bounded(kernel, [x, np.array([mode, x.size], np.uint32)], block_dim=2, kernel_type="mix_aic_1_2")
    err = info.value
    line = fault_line(marker)
    assert str(err).startswith(f"kernel 'mix_fault' line {line}: "), str(err)
    assert text in str(err), str(err)
    assert (err.kernel, err.line, err.block, err.core) == ("mix_fault", line, 0, core)


def test_deadlock_message_names_the_missing_reporter():
    kernel = build_kernel(FAULT_SRC, "mix_fault")
    x = np.zeros(1024, np.float16)
    with pytest.raises(EmulationError, match=r"Mode-2 sets of flag 0 so far came from AIV0 of block 0 but not "
                                             r"from AIV1 of block 0"):
        run_bounded(kernel, [x, np.array([10, x.size], np.uint32)], block_dim=2, kernel_type="mix_aic_1_2")


def test_a_failed_mix_launch_leaves_the_kernel_usable():
    kernel = build_kernel(FAULT_SRC, "mix_fault")
    x = np.zeros(1024, np.float16)
    for _ in range(3):
        with pytest.raises(EmulationError, match="waits forever"):
            run_bounded(kernel, [x, np.array([7, x.size], np.uint32)], block_dim=3, kernel_type="mix_aic_1_2")
        res = run_bounded(kernel, [x, np.array([0, x.size], np.uint32)], block_dim=3, kernel_type="mix_aic_1_2")
        assert len(res.cores) == 9


def test_mix_kernel_launched_as_non_mix_is_refused():
    kernel = build_kernel(FAULT_SRC, "mix_fault")
    x = np.zeros(1024, np.float16)
    line = fault_line("declared_mix")
    with pytest.raises(EmulationError) as info:
        kernel.run([x, np.array([0, x.size], np.uint32)], block_dim=2)
    assert str(info.value).startswith(f"kernel 'mix_fault' line {line}: KERNEL_TASK_TYPE_DEFAULT("
                                      "KERNEL_TYPE_MIX_AIC_1_2) declares a MIX kernel, but it was launched as a "
                                      "non-MIX kernel: launch it with run(..., kernel_type='mix_aic_1_2')")
    with pytest.raises(EmulationError, match=r"but the kernel was launched as KERNEL_TYPE_MIX_AIC_1_1") as info:
        run_bounded(kernel, [x, np.array([0, x.size], np.uint32)], block_dim=2, kernel_type="mix_aic_1_1")
    assert info.value.line == line
    with pytest.raises(EmulationError, match=r"launched as KERNEL_TYPE_AIV_ONLY"):
        kernel.run([x, np.array([0, x.size], np.uint32)], block_dim=2, kernel_type="aiv_only")


def test_mix_launch_needs_the_declared_kernel_type():
    kernel = build_kernel(FAULT_SRC, "mix_undeclared")
    with pytest.raises(EmulationError, match=r"^kernel 'mix_undeclared': a MIX launch \(kernel_type='mix_aic_1_2'\) "
                                             r"requires KERNEL_TASK_TYPE_DEFAULT\(KERNEL_TYPE_MIX_AIC_1_2\)"):
        run_bounded(kernel, [np.zeros(16, np.float16)], block_dim=1, kernel_type="mix_aic_1_2")


@pytest.mark.parametrize("kernel_type,launched", [(None, "a non-MIX kernel"), ("aiv_only", "KERNEL_TYPE_AIV_ONLY")])
def test_cross_core_flags_need_a_mix_kernel(kernel_type, launched):
    kernel = build_kernel(FAULT_SRC, "aiv_crosscore")
    with pytest.raises(EmulationError) as info:
        kernel.run([np.zeros(16, np.float16)], block_dim=2, kernel_type=kernel_type)
    assert str(info.value).startswith(f"kernel 'aiv_crosscore' line {fault_line('not_mix')}: CrossCoreSetFlag<0, "
                                      f"PIPE_MTE3>(0) in a kernel launched as {launched}: cross-core flags need a "
                                      "MIX kernel type")


def test_mode2_needs_an_aic():
    kernel = build_kernel(FAULT_SRC, "aiv10_mode2")
    with pytest.raises(EmulationError, match=r"mode 2 synchronises the AIC and AIVs inside a block; it needs "
                                             r"KERNEL_TYPE_MIX_AIC_1_1 or KERNEL_TYPE_MIX_AIC_1_2") as info:
        run_bounded(kernel, [np.zeros(16, np.float16)], block_dim=2, kernel_type="mix_aiv_1_0")
    assert info.value.line == fault_line("mode2_without_aic")


def test_core_type_macros_in_non_mix_launches():
    x = np.zeros(64, np.float16)
    with pytest.raises(EmulationError, match=r"ASCEND_IS_AIV is evaluated before this block's core type is known") as info:
        build_kernel(FAULT_SRC, "undecided_core").run([x], block_dim=1)
    assert info.value.line == fault_line("undecided")
    guarded = build_kernel(FAULT_SRC, "aiv_guarded")
    for kernel_type in (None, "aiv_only"):
        x[:] = 0
        guarded.run([x], block_dim=2, kernel_type=kernel_type)
        assert x[:2].tolist() == [1, 1] and not x[2:].any()
    with pytest.raises(EmulationError, match=r"KERNEL_TASK_TYPE_DEFAULT\(KERNEL_TYPE_AIV_ONLY\) but the kernel was "
                                             r"launched as KERNEL_TYPE_AIC_ONLY"):
        guarded.run([x], block_dim=2, kernel_type="aic_only")


def test_kernel_type_arguments_are_checked():
    kernel = build_kernel(MIX_SRC, "mix_vec_cube")
    args, _, _ = mix_inputs(1)
    with pytest.raises(EmulationError, match=r"unknown kernel_type 'mix_aic_2_1'"):
        kernel.run(args, block_dim=1, kernel_type="mix_aic_2_1")
    with pytest.raises(EmulationError, match=r"KERNEL_TYPE_MIX_AIC_1_2 is an arch 2201 \(split AIC/AIV\) launch; "
                                             r"ascend310p3 \(arch 2002\) has coupled cores"):
        kernel.run(args, block_dim=1, soc="ascend310p3", kernel_type="mix_aic_1_2")
    args[4] = None  # the workspace
    with pytest.raises(EmulationError, match=r"GetUserWorkspace: the workspace argument is a null pointer"):
        run_bounded(kernel, args, block_dim=1, kernel_type="mix_aic_1_2")
