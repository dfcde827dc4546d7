"""What every text output must be, checked independently of the code that escapes it."""

from __future__ import annotations

import unicodedata

# C0/C1 controls, lone surrogates, line and paragraph separators; and the bidi controls
# (format characters that reorder what a reader sees).
_NEVER_RAW_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
_BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def raw_controls(text: str) -> list[str]:
    """The characters of one line of text output that should have been escaped."""
    return [
        char
        for char in text
        if unicodedata.category(char) in _NEVER_RAW_CATEGORIES or char in _BIDI_CONTROLS
    ]


def clean_lines(output: str) -> list[str]:
    """``output``'s lines, after asserting it is UTF-8 text with no raw control characters.

    Lines end with ``\\n`` only; nothing else in the text may break or rewrite a line.
    """
    output.encode("utf-8")  # strict: a lone surrogate raises
    lines = output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        assert raw_controls(line) == [], (line, raw_controls(line))
    return lines


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text``, as UTF-16 code units, has a surrogate without its partner."""
    data = text.encode("utf-16-le", "surrogatepass")
    units = [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]
    index = 0
    while index < len(units):
        unit = units[index]
        if (
            0xD800 <= unit <= 0xDBFF
            and index + 1 < len(units)
            and 0xDC00 <= units[index + 1] <= 0xDFFF
        ):
            index += 2
            continue
        if 0xD800 <= unit <= 0xDFFF:
            return True
        index += 1
    return False
