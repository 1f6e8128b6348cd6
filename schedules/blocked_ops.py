"""Vision operators whose unfused kernels (schedules/ops_vision.py) also run on NC1HWC0 tensors,
so the layout pass can keep them inside a blocked region instead of converting around them.

Per-channel spatial ops qualify (the channel block is one more parallel axis). Element-wise ops
qualify when f(0) is finite: the zero-padded channel tail of a blocked tensor then holds finite
values, which the blocked consumers multiply by zero weights or drop (Log, Reciprocal and Pow
would put inf/NaN there, and 0 * inf is NaN)."""

SPATIAL = frozenset({"MaxPool", "AveragePool", "GlobalMaxPool", "Resize"})
ELEMENTWISE = frozenset({"Exp", "Tanh", "Erf", "Abs", "Neg", "Floor", "Ceil", "Softplus",
                         "LeakyRelu", "Elu", "Gelu", "Sqrt"})
BLOCKED_VISION_OPS = SPATIAL | ELEMENTWISE
