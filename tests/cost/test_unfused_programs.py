"""The one unfused model (issue 30): every kernel outside the fused kernels -- the vendor-like
pair a block replaces, the per-op framework kernels, the ops outside the fused blocks -- is a
vendor-like lowered program (schedules/baseline_program.py) timed by the step simulator
(fusion/cost/baseline.py). MODELED figures; these tests check structure and bytes, not values."""

import numpy as np
import pytest

from factories import B910, P310, graph
from fusion.core.ir import Node
from fusion.cost.vendor_baseline import (block_baseline, block_layers, framework_layers, layer_kernel, layer_program,
                                         node_kernel)
from fusion.cost.vendor_layers import BN_VECTOR_OPS, Layer, layers_from_graph, node_layer
from schedules.workload import DwSepWorkload

F16 = "float16"


def _g(nodes, types, consts=None):
    return graph(nodes, ["x"], [nodes[-1].outputs[0]], {k: (v, "float32") for k, v in types.items()}, consts)


def test_every_op_kind_gets_its_program():
    g = _g([Node("up", "Resize", ("x", "", "sc"), ("u",), (("mode", "linear"),)),
            Node("near", "Resize", ("x", "", "sc"), ("v",), (("mode", "nearest"),)),
            Node("cat", "Concat", ("u", "v"), ("c",), (("axis", 1),)),
            Node("bn", "BatchNormalization", ("c", "s", "b", "m", "var"), ("n",)),
            Node("sm", "Softmax", ("n",), ("y",))],
           {"x": (1, 32, 10, 14), "u": (1, 32, 20, 28), "v": (1, 32, 20, 28), "c": (1, 64, 20, 28),
            "n": (1, 64, 20, 28), "y": (1, 64, 20, 28), "sc": (4,), "s": (64,), "b": (64,), "m": (64,),
            "var": (64,)},
           {k: np.ones(s, np.float32) for k, s in (("sc", 4), ("s", 64), ("b", 64), ("m", 64), ("var", 64))})
    kinds = {n.name: node_layer(g, n) for n in g.nodes}
    assert [kinds[n].kind for n in ("up", "near", "cat", "bn", "sm")] == ["resize", "resize", "concat", "eltwise",
                                                                           "eltwise"]
    assert kinds["up"].ops > kinds["near"].ops == 1 and kinds["bn"].ops == BN_VECTOR_OPS
    assert (kinds["up"].h, kinds["up"].w, kinds["up"].out_h, kinds["up"].out_w) == (10, 14, 20, 28)
    up, near = layer_kernel(B910, kinds["up"], F16), layer_kernel(B910, kinds["near"], F16)
    # a resize reads its input once and writes its output once
    assert up.counts["gm_read_bytes"] == pytest.approx(2 * 16 * 10 * 14 * 2 * 1, rel=0.05)
    assert up.counts["gm_write_bytes"] == 2 * 16 * 20 * 28 * 2
    assert up.vector_us > near.vector_us
    # a concat copies every output row once: its bytes in equal its bytes out
    cat, _L = node_kernel(g, g.node("cat"), B910, F16)
    assert cat.kind == "concat" and cat.counts["gm_read_bytes"] == cat.counts["gm_write_bytes"] == 4 * 16 * 20 * 28 * 2
    # the whole graph: Resize and Concat are their own kernels, not generic element-wise passes
    assert [L.kind for L in layers_from_graph(g)] == ["transdata", "resize", "resize", "concat", "eltwise",
                                                      "eltwise", "transdata"]


def test_layout_conversions_are_transdata():
    g = graph([Node("to5", "ToNC1HWC0", ("x",), ("x5",)), Node("to4", "ToNCHW", ("x5",), ("y",))], ["x"], ["y"],
              {"x": ((1, 24, 7, 9), "float16"), "x5": ((1, 2, 7, 9, 16), "float16"), "y": ((1, 24, 7, 9), "float16")})
    for name in ("to5", "to4"):
        L = node_layer(g, g.node(name))
        assert (L.kind, L.batch, L.cin, L.h, L.w) == ("transdata", 1, 24, 7, 9)
        assert layer_program(B910, L, F16).kind == "transdata"


def test_conv_transpose_keeps_its_bn_and_act():
    w = np.ones((32, 3, 2, 2), np.float32)
    g = _g([Node("ct", "ConvTranspose", ("x", "w"), ("t",), (("group", 1), ("strides", (2, 2)))),
            Node("ct_bn", "BatchNormalization", ("t", "s", "b", "m", "var"), ("n",)),
            Node("ct_act", "Relu", ("n",), ("y",))],
           {"x": (1, 32, 10, 14), "w": (32, 3, 2, 2), "t": (1, 3, 20, 28), "n": (1, 3, 20, 28), "y": (1, 3, 20, 28),
            "s": (3,), "b": (3,), "m": (3,), "var": (3,)},
           {"w": w, **{k: np.ones(3, np.float32) for k in ("s", "b", "m", "var")}})
    (td, ct, _out) = layers_from_graph(g)
    assert td.kind == "transdata" and ct.kind == "conv" and ct.act == "relu"
    assert ct.members == ("ct", "ct_bn", "ct_act") and ct.macs == 10 * 14 * 32 * 12


@pytest.mark.parametrize("soc", [B910, P310], ids=["910b", "310p"])
def test_framework_kernels_split_each_conv(soc):
    wl = DwSepWorkload(1, 32, 48, 14, 14, act1="relu6", act2="hardswish", residual=False, dtype=F16)
    names = [L.name for L in framework_layers(wl)]
    assert names == ["dw", "dw_bn", "dw_relu6", "pw", "pw_bn", "pw_hardswish"]
    fw, vendor = block_baseline(wl, soc, "framework"), block_baseline(wl, soc, "vendor")
    # the same DW and PW programs without their epilogues, then the element-wise kernels
    assert fw.kernels[0].kind == vendor.kernels[0].kind == "dwconv" and fw.kernels[3].kind == "conv"
    assert all(k.kind == "eltwise" and k.engine == "vector" for i, k in enumerate(fw.kernels) if i not in (0, 3))
    assert fw.time_us > vendor.time_us and fw.launch_us > vendor.launch_us and fw.gm_bytes > vendor.gm_bytes
    # each element-wise kernel reads its tensor once and writes it once
    bn = fw.kernels[4]
    assert bn.counts["gm_read_bytes"] == bn.counts["gm_write_bytes"] == 3 * 16 * 14 * 14 * 2


def test_head_block_framework_is_the_vendor_pair():
    wl = DwSepWorkload(1, 64, 10, 7, 7, kernel=(7, 7), act1="none", act2="none", head=True, dtype=F16)
    assert framework_layers(wl) == block_layers(wl)
    assert isinstance(framework_layers(wl)[0], Layer)
