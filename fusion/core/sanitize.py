"""Model-supplied strings at the boundary: display escaping and derived identifiers.

A model file is untrusted input. Its node, tensor and graph names reach three places, each with
its own rule:
- the terminal (and error messages): `display()` escapes control characters, ANSI escapes and
  newlines, and shortens very long names, so one message stays one line and cannot repaint the
  screen;
- generated code and file names: never the name itself, only `block_ident()`, a derived
  identifier of `[A-Za-z0-9_]` (the name when it already is a short identifier, else
  `block_<index>_<hash>`);
- comments in generated code: `comment_text()`, printable ASCII without comment terminators.
"""

from __future__ import annotations

import hashlib
import re
from fusion.core.errors import MegafuseError

MAX_DISPLAY = 120      # characters of a model string shown before it is shortened
MAX_IDENT = 48         # longest model name kept verbatim as an identifier / file name stem
_IDENT_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def display(text: object, limit: int = MAX_DISPLAY) -> str:
    """One printable line: control characters (ESC, CR, LF, DEL, C1, bidi overrides...) as
    escapes, long text shortened with its length stated."""
    s = str(text)
    out = "".join(c if c.isprintable() else _escape_char(c) for c in s)
    if limit and len(out) > limit:
        out = f"{out[:limit]}...({len(s)} chars)"
    return out


def display_message(text: object) -> str:
    """An error or warning message: every character printable, no length limit (a message is
    ours; the model strings inside it were escaped by the same rule)."""
    return display(text, limit=0)


def _escape_char(c: str) -> str:
    o = ord(c)
    if o < 0x100:
        return f"\\x{o:02x}"
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def is_safe_ident(name: str) -> bool:
    return len(name) <= MAX_IDENT and _IDENT_RE.fullmatch(name) is not None


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def block_ident(name: str, index: int, taken: set[str]) -> str:
    """The identifier generated code and file names use for fused block `index` whose model name
    is `name`: the name itself when it is a short C identifier not used yet, else
    `block_<index>_<hash of the name>`. Adds the result to `taken`."""
    ident = name if is_safe_ident(name) and _fold(name) not in taken else f"block_{index}_{short_hash(name)}"
    taken.add(_fold(ident))
    return ident


def _fold(ident: str) -> str:
    """Two identifiers that fold to the same text would share a file on a case-insensitive file
    system or a CANN op type (which drops '_' and capitalises): keep them apart."""
    return re.sub(r"[^0-9a-z]", "", ident.lower())


_COMMENT_OK = re.compile(r"[A-Za-z0-9 _.,:;=+\-()\[\]<>#@!'%&{}~^$|]")


def comment_text(text: object, limit: int = MAX_DISPLAY) -> str:
    """Text safe inside a // or /* */ comment of generated C++ (and # comments in Python/CMake):
    a whitelist of printable ASCII; anything else (newline, backslash line splice, '*' and '/'
    of comment delimiters, '?' of trigraphs, non-ASCII) becomes '_'."""
    s = display(text, limit)
    return "".join(c if _COMMENT_OK.fullmatch(c) else "_" for c in s)


def inside(root, rel: str):
    """root / rel, resolved, refusing anything that leaves root (absolute parts, '..', a symlink
    pointing out). Generated names never do; this is the last line of defence."""
    from pathlib import Path


    base = Path(root).resolve()
    path = (base / rel).resolve()
    if path != base and base not in path.parents:
        raise MegafuseError(f"refusing to write '{display(rel)}': outside the output directory")
    return path
