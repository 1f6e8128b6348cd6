"""`megafuse -v`: the compiler's decision logs (dropped tile candidates, engine choice, fusion
refusals) on stderr, one line each, with non-printable characters of model-supplied names escaped."""

from __future__ import annotations

import logging
import sys


class _Escaped(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record is emitted (tests and callers replace it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def enable(verbose: bool) -> None:
    """Route the "megafuse" loggers to stderr at INFO (verbose) or WARNING."""
    root = logging.getLogger("megafuse")
    if not any(isinstance(h, _Stderr) for h in root.handlers):
        h = _Stderr()
        h.setFormatter(_Escaped("megafuse: %(name)s: %(message)s"))
        root.addHandler(h)
        root.propagate = False
    root.setLevel(logging.INFO if verbose else logging.WARNING)
