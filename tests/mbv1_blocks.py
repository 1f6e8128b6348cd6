"""MobileNetV1's six distinct DW-separable blocks at batch 1 and the one-phase plans pinned for
them: the fixtures of the cost model's traffic, fused-vs-unfused and L2 tests (tests/cost/)."""

from schedules.workload import DwSepWorkload, TileConfig


def mbv1(cin, cout, h, s):
    return DwSepWorkload(1, cin, cout, h, h, stride=(s, s), dtype="float16")


BLOCKS = {"b1": (32, 64, 112, 1), "b2": (64, 128, 112, 2), "b3": (128, 128, 56, 1),
          "b4": (256, 256, 28, 1), "b5": (512, 512, 14, 1), "b6": (1024, 1024, 7, 1)}

# Pinned one-phase plans of the six MobileNetV1 blocks, the fixtures of the traffic and fused vs
# unfused tests (tests/cost/test_costmodel.py) and the L2 overflow test. They were the picks of
# tune_fused(wl, soc, max_tiles_per_axis=32) when recorded (fast = fastest; meets = fastest within 1.15x of the minimal DMA bytes; least = least
# DMA traffic, for blocks that miss 1.15x); the search has moved since (DW tap forms, L2): what it
# picks now is checked against them by test_costmodel.test_search_no_worse_than_the_fixture_plans.
# (soc, block, kind, tile (th, tw, cob, cib, engine), DMA bytes / minimal bytes as hand_traffic counts them)
TRAFFIC = [
    ("ascend910b2", "b1", "fast", (4, 112, 4, 1, "cube"), 1.8570),
    ("ascend910b2", "b1", "meets", (13, 28, 1, 1, "vector"), 1.1412),
    ("ascend910b2", "b2", "fast", (2, 56, 8, 1, "cube"), 1.5965),
    ("ascend910b2", "b2", "meets", (8, 28, 2, 1, "vector"), 1.1397),
    ("ascend910b2", "b3", "fast", (2, 56, 8, 1, "cube"), 2.7594),
    ("ascend910b2", "b3", "least", (14, 19, 1, 1, "vector"), 1.3329),
    ("ascend910b2", "b4", "fast", (1, 28, 8, 1, "cube"), 6.6151),
    ("ascend910b2", "b4", "least", (14, 14, 1, 1, "vector"), 1.5024),
    ("ascend910b2", "b5", "fast", (1, 14, 4, 0, "cube"), 9.2519),
    ("ascend910b2", "b5", "least", (7, 14, 1, 1, "vector"), 1.6031),
    ("ascend910b2", "b6", "fast", (1, 4, 2, 0, "cube"), 13.0714),   # tw 4: DW rows of whole repeats
    ("ascend910b2", "b6", "least", (7, 4, 1, 1, "vector"), 1.9260),
    ("ascend310p3", "b1", "fast", (7, 112, 1, 1, "cube"), 1.1173),
    ("ascend310p3", "b2", "fast", (7, 56, 1, 1, "cube"), 1.0942),
    ("ascend310p3", "b3", "fast", (4, 56, 1, 1, "cube"), 1.5007),
    ("ascend310p3", "b3", "least", (14, 28, 1, 1, "vector"), 1.2256),
    ("ascend310p3", "b4", "fast", (4, 28, 1, 1, "cube"), 2.0615),
    ("ascend310p3", "b4", "least", (10, 28, 1, 1, "vector"), 1.3538),
    ("ascend310p3", "b5", "fast", (2, 14, 4, 0, "cube"), 4.6183),
    ("ascend310p3", "b5", "least", (7, 14, 2, 1, "vector"), 1.6031),
    ("ascend310p3", "b6", "fast", (1, 7, 2, 0, "cube"), 6.5559),
    ("ascend310p3", "b6", "meets", (7, 7, 1, 1, "vector"), 1.0000),   # 1 core, ~40x slower than fast
]
# DMA traffic (every byte MTE2/MTE3 move): blocks that miss 1.15x with every plan of the current
# structure (spatial tiles only, every tile streams all PW weights; the cube's A operand must
# hold all of C1 in L0A; on 910B the cube path adds a GM round trip of the DW result): 910B
# b3-b6, 310P b3-b5. 910B b1/b2 meet it only with PW on the vector unit (1.4x / 3.1x slower than
# their fastest plan); 310P b6 only with a one-core vector plan.
# HBM traffic (what reaches HBM once L2 serves the re-reads): every block's fastest plan is at
# exactly the minimal bytes (ratio 1.0) -- all the excess DMA traffic is weights and halos
# re-read by other cores / tiles and the 910B hand-off, which stay in L2 because the working
# sets (1-3.3 MB at batch 1) fit in L2 (192 MiB on 910B, 16 MiB on 310P). Past L2's capacity the
# hits are kept tensor by tensor: see tests/cost/test_l2_rule.py.


def tile(t):
    th, tw, cob, cib, eng = t
    return TileConfig(th, tw, cob, cib, True, eng)


# b3's shape with default activations (relu, relu): the L2 and cache tests' mid-sized block
MID = DwSepWorkload(1, 128, 128, 56, 56, dtype="float16")
