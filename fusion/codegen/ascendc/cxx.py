"""The C++ text of the Ascend C kernels: the template files under templates/ (package data: real
.h / .cpp files with @KEY@ slots), the slot filler, and the pieces generated from the plan (one
member and InitBuffer per plan buffer, the activation functions)."""

from __future__ import annotations

import functools
import re
from importlib.resources import files

from schedules.activations import ascendc_body, needs_slope
from schedules.plan import KernelPlan
from schedules.program import act_scratch


@functools.cache
def template(name: str) -> str:
    """The text of templates/NAME (kept byte for byte: the generated code is compared as text)."""
    return (files("fusion.codegen.ascendc") / "templates" / name).read_text()


@functools.cache
def _snippets() -> dict[str, str]:
    out, name = {}, None
    for line in template("snippets.h").splitlines(keepends=True):
        if line.startswith("//@ "):
            name = line[4:].strip()
            out[name] = ""
        elif name is not None:
            out[name] += line
    return out


def snippet(name: str) -> str:
    """A small C++ fragment of templates/snippets.h (its lines, each ending in a newline)."""
    return _snippets()[name]


def sub(template: str, **values) -> str:
    """Fills the @KEY@ slots given (until none is left: a value may hold slots of its own)."""
    out = template
    for _ in range(8):
        before = out
        for k, v in values.items():
            out = out.replace("@" + k + "@", str(v))
        if out == before:
            break
    return out


def fill(template: str, **values) -> str:
    out = sub(template, **values)
    left = re.findall(r"@[A-Z_0-9]+@", out)
    if left:
        raise AssertionError(f"unfilled template keys {sorted(set(left))}")
    return out


# member of the kernel class for each plan buffer (name, scope): (member, C++ declaration, queue?)
MEMBERS = {
    ("x_tile", "UB"): ("xQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    ("w_dw", "UB"): ("wDwQue", "TQue<TPosition::VECIN, 1>", True),
    ("b_dw", "UB"): ("bDwQue", "TQue<TPosition::VECIN, 1>", True),
    ("b_dw16", "UB"): ("bDw16Buf", "TBuf<TPosition::VECCALC>", False),
    ("dw_acc", "UB"): ("dwAccBuf", "TBuf<TPosition::VECCALC>", False),
    ("dw_out", "UB"): ("dwOutBuf", "TBuf<TPosition::VECCALC>", False),
    ("w_pw", "UB"): ("wPwQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    ("pw_acc", "UB"): ("pwAccBuf", "TBuf<TPosition::VECCALC>", False),
    ("b_pw", "UB"): ("bPwQue", "TQue<TPosition::VECIN, 1>", True),
    ("b_pw16", "UB"): ("bPw16Buf", "TBuf<TPosition::VECCALC>", False),
    ("s_dw", "UB"): ("sDwQue", "TQue<TPosition::VECIN, 1>", True),
    ("s_pw", "UB"): ("sPwQue", "TQue<TPosition::VECIN, 1>", True),
    ("res_tile", "UB"): ("resQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    ("y_tile", "UB"): ("yQue", "TQue<TPosition::VECOUT, @COPIES@>", True),
    ("act_tmp", "UB"): ("actTmpBuf", "TBuf<TPosition::VECCALC>", False),
    ("ln_blk", "UB"): ("lnBlkBuf", "TBuf<TPosition::VECCALC>", False),
    ("ln_stat", "UB"): ("lnStatBuf", "TBuf<TPosition::VECCALC>", False),
    ("pre_tile", "UB"): ("preQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    # UB -> L1 is an MTE3 move on 310P: explicit flags, not an A1 queue (whose events assume MTE2)
    ("dw_out_l1", "L1"): ("aL1Buf", "TBuf<TPosition::A1>", False),
    ("dw_in_l1", "L1"): ("aL1Que", "TQue<TPosition::A1, @COPIES@>", True),
    ("a_l0a", "L0A"): ("aL0Que", "TQue<TPosition::A2, 1>", True),
    # the bias GEMM (plan.bias_in_cube): constant operands set up once, the co-step's bias fractals
    ("ones_l0a", "L0A"): ("onesL0Buf", "TBuf<TPosition::A2>", False),
    ("bias_l1", "L1"): ("biasL1Buf", "TBuf<TPosition::B1>", False),
    ("bias_l0b", "L0B"): ("biasL0Que", "TQue<TPosition::B2, 1>", True),
    ("w_pw_l1", "L1"): ("wL1Que", "TQue<TPosition::B1, @COPIES@>", True),
    ("b_l0b", "L0B"): ("bL0Que", "TQue<TPosition::B2, 1>", True),
    ("pw_acc", "L0C"): ("cQue", "TQue<TPosition::CO1, 1>", True),
    ("b_pw_l1", "L1"): ("bPwL1Que", "TQue<TPosition::C1, 1>", True),
    ("bias_bt", "BT"): ("btQue", "TQue<TPosition::C2, 1>", True),
}


def const_name(buffer_name: str) -> str:
    return "k" + "".join(p.capitalize() for p in buffer_name.split("_"))


def buffer_field(buffer_name: str) -> str:
    """The tiling field holding a buffer's bytes per copy: x_tile -> xTileBytes."""
    return const_name(buffer_name)[1].lower() + const_name(buffer_name)[2:] + "Bytes"


def buffer_code(plan: KernelPlan, ns: str, scopes: set[str], members_of: dict | None = None,
                scratch_copies: bool = False) -> tuple[list[str], list[str]]:
    """(member declarations, InitBuffer lines) of the plan's kernel buffers in `scopes`, each from
    templates/buffer_*.h. `members_of`: the variant's member table (MEMBERS); `scratch_copies`:
    a scratch buffer of several copies is one TBuf of all of them (the two-phase kernel's dw_out:
    its DW units take the copies in turn, templates/twophase_dw.h), else a scratch buffer has one
    copy."""
    table = MEMBERS if members_of is None else members_of
    members, inits = [], []
    for b in plan.kernel_buffers:
        if b.scope not in scopes:
            continue
        if (b.name, b.scope) not in table:
            raise ValueError(f"plan buffer {b.name} ({b.scope}) has no kernel member")
        member, decl, is_que = table[b.name, b.scope]
        copies = f"{ns}::{const_name(b.name)}Copies"
        members.append(sub(template("buffer_member.h"), DECL=decl, COPIES=copies, MEMBER=member))
        if not is_que and b.copies != 1 and not scratch_copies:
            raise ValueError(f"scratch buffer {b.name} with {b.copies} copies")
        kind = "buffer_init_que.h" if is_que else "buffer_init_buf.h"
        inits.append(sub(template(kind), MEMBER=member, COPIES=copies, BYTES=f"t.{buffer_field(b.name)}"))
    return members, inits


def act_function(fn: str, act: str) -> str:
    """An fp32 activation over n elements of `a`: the instructions the cost model counts (one
    table, schedules/activations.py); the ones that need scratch work in chunks of `tmp` (tmpLen).
    A per-channel activation runs per channel block where its bias is added (PreluBlock, the
    slots ACT1_CH / ACT2_CH, templates/prelu_block.h): here a no-op."""
    if needs_slope(act):
        return sub(snippet("ACT_FN_PER_CHANNEL"), FN=fn, ACT=act)
    return sub(snippet("ACT_FN"), FN=fn, BODY=ascendc_body(act))


def act_tmp_args(plan, stage: str) -> str:
    """The (scratch, length) arguments of the Act1 / Act2 call of a kernel: the fp32 buffer the
    lowered program names for the stage (schedules/program.act_scratch), its length a tiling
    field; `acc, 0` when the plan holds no such buffer (the activation needs no scratch)."""

    buf = act_scratch(plan.variant, stage)
    tensor = act_scratch_tensor(plan, stage)
    if tensor is None:
        return "acc, 0"
    return f"{tensor}, static_cast<int32_t>(tl.{buffer_field(buf)} / sizeof(float))"


def act_scratch_tensor(plan, stage: str) -> str | None:
    """The fp32 scratch tensor of an activation stage (schedules/program.act_scratch), or None
    when the plan holds no such buffer."""

    buf = act_scratch(plan.variant, stage)
    if buf not in {b.name for b in plan.kernel_buffers}:
        return None
    return buffer_field(buf)[:-len("Bytes")] + "Buf.Get<float>()"   # a TBuf member: act_tmp -> actTmpBuf

