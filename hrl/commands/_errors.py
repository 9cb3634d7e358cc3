"""How a command shows an error: one line, never an array."""

from __future__ import annotations

import re

# Where an array's repr starts in an exception's text (jax.Array, numpy, a traced value).
_ARRAY = re.compile(r"(Array\(|array\(|Traced<|\[\[|\[ *-?\d+\.\d*(e[+-]?\d+)? +-?\d)")
LIMIT = 300  # characters


def error_line(err: BaseException) -> str:
    """`err` as one line for stderr: its first line, cut where an array's repr would start
    (a library's message may hold a whole parameter array), at most LIMIT characters."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    found = _ARRAY.search(text)
    if found:
        text = text[: found.start()].rstrip(" ,:(") + " (array not shown)"
    return text if len(text) <= LIMIT else text[: LIMIT - 3] + "..."
