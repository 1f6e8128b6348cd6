"""The fused int8 DW->PW block's Ascend C kernels on the emulator (fusion/codegen/ascendc/
emit_int8.py, fusion/verify/ascend_int8.py): 310P (coupled) and 910B (the MIX kernel: DW on the
AIVs, int8 GEMM on the AIC, requant on the AIVs), exact against the compiled graph's CPU int8
block (itself exact against ORT, tests/verify/test_quant.py), their emulator counters equal to the
modeled program's, odd channel counts, per-tensor and per-channel, uint8 and int8 activations,
stride 1 and 2, resident and streamed PW weights; a wrong kernel constant is caught; `check -t
ascend:310p3` and `-t ascend:910b2` end to end."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest
import tvm
from conftest import run_cli

from fusion.core.soc import SOCS
from fusion.driver.compiler import compile_model
from fusion.verify.ascend_int8 import COUNTERS, build_int8, check_int8_block, int8_kernels
from models.quantized import dwsep_int8
from schedules.quant_plan import int8_candidates, int8_workload

pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py

SOC = "sim:ascend310p3"
SOC_910B = "sim:ascend910b2"


def _block(cm, seed=0, edit=None):
    """The one QDwSep of cm: its kernel (its source edited by `edit`), built, on random int8 input
    vs the CPU int8 step."""
    kernels = int8_kernels(cm)
    (name, k), = kernels.items()
    if edit is not None:
        kernels = {name: dataclasses.replace(k, source=edit(k.source))}
        k = kernels[name]
    built = build_int8(kernels)
    st = next(s for s in cm.program.steps if s.name == name)
    n = next(x for x in cm.graph.nodes if x.name == name)
    xt = cm.graph.types[n.inputs[0]]
    lo, hi = (0, 255) if xt.dtype == "uint8" else (-128, 127)
    x = np.random.default_rng(seed).integers(lo, hi + 1, size=xt.shape).astype(xt.dtype)
    dev = tvm.cpu(0)
    args = [tvm.runtime.tensor(x, dev) if isinstance(p, str) else p for p in st.params]
    out = tvm.runtime.empty(st.out_shape, st.out_dtype, dev)
    st.func(*args, out)
    chk, y = check_int8_block(name, k, built[name], x, out.numpy())
    return k, chk, y, out.numpy()


@pytest.mark.parametrize("kw,soc", [
    (dict(per_channel=True, activation_type="uint8", cin=21, cout=35, h=11, stride=1), SOC),
    (dict(per_channel=True, activation_type="uint8", cin=21, cout=35, h=11, stride=1), SOC_910B),
    pytest.param(dict(per_channel=False, activation_type="int8", cin=21, cout=35, h=11, stride=2), SOC,
                 marks=pytest.mark.slow),
    pytest.param(dict(per_channel=False, activation_type="int8", cin=45, cout=50, h=7, w=9, stride=2,
                      act2="relu6"), SOC_910B, marks=pytest.mark.slow),
    pytest.param(dict(per_channel=True, activation_type="int8", cin=45, cout=50, h=7, w=9, stride=1, act2="relu6"),
                 SOC, marks=pytest.mark.slow),
], ids=["310p-u8-pc", "910b-u8-pc", "310p-i8-pt-s2", "910b-i8-pt-s2-relu6", "310p-i8-pc-relu6"])
def test_block_exact_and_counters_equal_the_model(kw, soc):
    cm = compile_model(dwsep_int8(**kw), target=soc)
    k, chk, y, ref = _block(cm)
    assert y.dtype == ref.dtype and y.shape == ref.shape
    assert chk.max_steps == 0 and chk.mismatches == 0, chk.describe()
    for c in COUNTERS:
        assert chk.counters[c] == chk.model[c], (c, chk.counters[c], chk.model[c])
    assert chk.counters["cube_fractals"] > 0
    if soc == SOC:
        assert chk.counters["gm_write_bytes"] == k.plan.wl.out_bytes
    else:   # + the int8 hand-off and the int32 accumulators (NZ, a tile's rows), each written once
        wl = k.plan.wl
        px = wl.out_h * wl.out_w
        assert k.kernel_type == "mix_aic_1_2" and k.block_dim == k.plan.cube_cores
        assert chk.counters["gm_write_bytes"] == wl.out_bytes + wl.c1 * 32 * px + wl.n16 * 16 * 4 * px


def test_a_wrong_kernel_constant_is_caught():
    """910B: the DW result's zero point off by one in the generated source -> the comparison with
    the CPU block names the mismatching outputs (the check is not vacuous)."""
    cm = compile_model(dwsep_int8(per_channel=True, activation_type="uint8", cin=21, cout=35, h=11), target=SOC_910B)
    (_, k), = int8_kernels(cm).items()
    zp = k.source.split("DW_ZP = ")[1].split("f;")[0]
    edit = lambda src: src.replace(f"DW_ZP = {zp}f;", f"DW_ZP = {float(zp) + 1.0!r}f;")   # noqa: E731
    assert edit(k.source) != k.source
    _, chk, _, _ = _block(cm, edit=edit)
    assert chk.mismatches > 0 and chk.max_steps >= 1 and "differ" in chk.describe()


@pytest.mark.slow
@pytest.mark.parametrize("soc", [SOC, SOC_910B])
def test_streamed_pw_weights_with_an_odd_last_co_step(soc):
    # Cin 1000 limits L0B to 4 fractals a co-step: 7 fractals of Cout 99 run as 4 + 3
    cm = compile_model(dwsep_int8(per_channel=True, cin=1000, cout=99, h=3, w=5), target=soc)
    k, chk, _, _ = _block(cm, seed=1)
    assert not k.plan.w_resident and k.plan.co_steps == 2 and k.plan.wl.n16 % k.plan.cob
    assert chk.max_steps == 0 and chk.counters_match, chk.describe()


@pytest.mark.parametrize("soc", ["310p3", "910b2"])
def test_check_cli_on_both_socs(capsys, tmp_path, soc):
    path = tmp_path / "q.onnx"
    onnx.save(dwsep_int8(per_channel=True, cin=21, cout=35, h=11), path)
    code, out, err = run_cli(capsys, "check", str(path), "-t", f"ascend:{soc}")
    assert code == 0 and out.startswith("  ") and "int8-dwsep" in out and "exact" in out, err
    assert "equal to the model" in out and "PASS" in out and "int8: 0 output step(s)" in out
    code, out, err = run_cli(capsys, "compile", str(path), "-t", f"ascend:{soc}", "-o", str(tmp_path / "o"))
    assert code == 2 and err.count("\n") == 1 and "no int8 (QDQ) kernels" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("soc", ["ascend310p3", "ascend910b2"])
def test_plans_are_the_kernels(soc):
    cm = compile_model(dwsep_int8(per_channel=True, cin=1000, cout=99, h=3, w=5), target=SOC)
    n = next(x for x in cm.graph.nodes if x.op_type == "QDwSep")
    for p in int8_candidates(int8_workload(cm.graph, n), SOCS[soc]):
        assert not p.double_buffer and (p.cob % 2 == 0 or p.cob == p.wl.n16)
