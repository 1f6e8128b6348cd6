"""A tiny YAML writer (and a parser for what it writes) for op_contract.yaml.

Covers block-style mappings and lists of mappings/scalars, flow lists of scalars, and scalars
(null, booleans, ints, floats, plain or double-quoted strings). PyYAML parses the output too.
"""

from __future__ import annotations

import json
import re

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-/ ]*$")
_RESERVED = {"null", "true", "false", "yes", "no", "on", "off", "~", ""}


def _scalar(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if isinstance(v, float) else str(v)
    s = str(v)
    try:
        float(s)
        looks_numeric = True
    except ValueError:
        looks_numeric = False
    if not looks_numeric and _PLAIN.match(s) and s.lower() not in _RESERVED and not s.endswith(" ") and ": " not in s:
        return s
    return json.dumps(s)  # a double-quoted YAML string


def _is_scalar(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def dump(data: dict) -> str:
    lines: list[str] = []
    _emit_map(data, 0, lines)
    return "\n".join(lines) + "\n"


def _emit_map(d: dict, ind: int, lines: list[str]) -> None:
    pad = " " * ind
    for k, v in d.items():
        key = _scalar(str(k))
        if _is_scalar(v):
            lines.append(f"{pad}{key}: {_scalar(v)}")
        elif isinstance(v, (list, tuple)) and all(_is_scalar(x) for x in v):
            lines.append(f"{pad}{key}: [{', '.join(_scalar(x) for x in v)}]")
        elif isinstance(v, dict):
            if not v:
                lines.append(f"{pad}{key}: {{}}")
                continue
            lines.append(f"{pad}{key}:")
            _emit_map(v, ind + 2, lines)
        else:
            lines.append(f"{pad}{key}:")
            _emit_list(list(v), ind + 2, lines)


def _emit_list(items: list, ind: int, lines: list[str]) -> None:
    pad = " " * ind
    for x in items:
        if _is_scalar(x):
            lines.append(f"{pad}- {_scalar(x)}")
        elif isinstance(x, dict):
            sub: list[str] = []
            _emit_map(x, ind + 2, sub)
            sub[0] = f"{pad}- " + sub[0][ind + 2:]
            lines += sub
        else:
            raise TypeError("nested lists of lists are not supported")


# ---- parser for the subset above ------------------------------------------------------------
def _parse_scalar(s: str):
    s = s.strip()
    if s.startswith('"'):
        return json.loads(s)
    if s.startswith("[") and s.endswith("]"):
        inner = s[1:-1].strip()
        return [] if not inner else [_parse_scalar(p) for p in _split_flow(inner)]
    if s == "{}":
        return {}
    low = s.lower()
    if low in ("null", "~", ""):
        return None
    if low == "true":
        return True
    if low == "false":
        return False
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def _split_flow(s: str) -> list[str]:
    out, cur, q = [], "", False
    for ch in s:
        if ch == '"' and not cur.endswith("\\"):
            q = not q
        if ch == "," and not q:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _split_key(text: str) -> tuple[str, str]:
    if text.startswith('"'):
        end = text.index('":') + 1
        return json.loads(text[:end]), text[end + 1:].strip()
    k, _, v = text.partition(":")
    return k.strip(), v.strip()


def load(text: str):
    lines = [(len(ln) - len(ln.lstrip(" ")), ln.strip()) for ln in text.splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    value, pos = _parse_block(lines, 0, lines[0][0] if lines else 0)
    return value


def _parse_block(lines, i, ind):
    if i < len(lines) and lines[i][1].startswith("- "):
        return _parse_list(lines, i, ind)
    return _parse_map(lines, i, ind)


def _parse_map(lines, i, ind):
    out = {}
    while i < len(lines) and lines[i][0] == ind and not lines[i][1].startswith("- "):
        k, v = _split_key(lines[i][1])
        i += 1
        if v == "":
            if i < len(lines) and lines[i][0] > ind:
                out[k], i = _parse_block(lines, i, lines[i][0])
            elif i < len(lines) and lines[i][0] == ind and lines[i][1].startswith("- "):
                out[k], i = _parse_list(lines, i, ind)
            else:
                out[k] = None
        else:
            out[k] = _parse_scalar(v)
    return out, i


def _parse_list(lines, i, ind):
    out = []
    while i < len(lines) and lines[i][0] == ind and lines[i][1].startswith("- "):
        rest = lines[i][1][2:]
        if ":" in rest and not rest.startswith('"') or rest.startswith('"') and '":' in rest:
            # a mapping item: re-indent its first line as a key of the mapping
            lines = lines[:i] + [(ind + 2, rest)] + lines[i + 1:]
            item, i = _parse_map(lines, i, ind + 2)
            out.append(item)
        else:
            out.append(_parse_scalar(rest))
            i += 1
    return out, i
