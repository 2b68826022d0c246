"""Lines the verifiers print for a person to read. They quote the file or server under check (a game id, a
tenant, a currency, an error naming a value), so a control character there would reach the terminal as a
command: ESC [8m hides every line after it, a newline starts a line the file wrote ("VALID"), U+202E
reverses what follows. Each is printed as its Python escape (`\\x1b`, `\\n`, `\\u202e`) instead.
JSON output needs none of this: json.dumps escapes every such character itself."""

from __future__ import annotations

import sys
import unicodedata
from typing import TextIO

# Controls, invisible formatting (bidirectional overrides, zero-width marks), line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def printable(text: str) -> str:
    if text.isprintable():  # the usual line: nothing to look at character by character
        return text
    return "".join(ascii(c)[1:-1] if unicodedata.category(c) in _HIDDEN_CATEGORIES else c for c in text)


def say(line: str = "", file: TextIO | None = None) -> None:
    """print() of one line for a person, `line` made printable first."""
    print(printable(line), file=file or sys.stdout)
