r"""The one sanitiser for text that ``loopguard`` prints to a terminal.

Every human-readable line the ``loopguard`` command writes (``scan``, ``eval``; stdout and
stderr) goes through :func:`printable`, field by field and once more as a whole line, so a
tool name, record id, file name, excerpt or error message taken from a log can neither move
the cursor, recolour, retitle or ring the terminal, nor start a line of its own (a forged
``LOOP`` line), nor reorder what is shown (bidi overrides).

``--json`` output is written with :func:`json.dumps`' default ``ensure_ascii=True``: every
non-ASCII code point, U+202E and U+009B included, and every control character is a
``\uXXXX`` escape, so a JSON line carries no raw control or bidi code point either (and a
JSON reader gets the original text back).

>>> printable("evil\x1b[31mRED\nLOOP\u202e")
'evil\\x1b[31mRED\\nLOOP\\u202e'
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .redact import redact_head

__all__ = ["NAME_CHARS", "UNSAFE", "printable", "redacted_name", "shown_name"]

NAME_CHARS = 100
"""Code points of a name taken from input (a tool name, a record id) that loopguard shows."""

_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _unsafe_code_points() -> list[int]:
    codes = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]  # C0 controls, DEL, C1 controls
    codes += [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]  # bidi marks
    codes += [0x2028, 0x2029]  # line and paragraph separators: a line break to some renderers
    codes += range(0xD800, 0xE000)  # lone surrogates: cannot be encoded for the terminal
    # invisible format characters (Unicode category Cf, as of Unicode 15.1): zero-width space,
    # word joiner, BOM, soft hyphen, tag characters...: ``rm\u200b`` would look like ``rm``.
    # ZWNJ and ZWJ (U+200C, U+200D) stay: scripts and emoji sequences need them
    codes += [0xAD, *range(0x600, 0x606), 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0x180E, 0x200B]
    codes += [*range(0x2060, 0x2065), *range(0x206A, 0x2070), 0xFEFF, *range(0xFFF9, 0xFFFC)]
    codes += [0x110BD, 0x110CD, *range(0x13430, 0x13440), *range(0x1BCA0, 0x1BCA4), *range(0x1D173, 0x1D17B)]
    codes += [0xE0001, *range(0xE0020, 0xE0080)]
    codes += [0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0]  # combining grapheme joiner, Hangul fillers: blank
    return codes


UNSAFE: frozenset[int] = frozenset(_unsafe_code_points())
"""The code points :func:`printable` escapes: C0 controls (U+0000–U+001F), DEL (U+007F), C1
controls (U+0080–U+009F), the bidi marks, embeddings, overrides and isolates (U+061C,
U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), the line and paragraph separators (U+2028,
U+2029), the surrogates (U+D800–U+DFFF, which only occur unpaired in a ``str``), and the
invisible characters: every format character (Unicode category Cf: zero-width space, word
joiner, BOM, soft hyphen, tag characters…) but ZWNJ and ZWJ, the combining grapheme joiner
and the Hangul fillers."""


def _escape(code: int) -> str:
    if code in _NAMED:
        return _NAMED[code]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_TABLE: dict[int, str] = {code: _escape(code) for code in UNSAFE}


def _char_class(codes: frozenset[int]) -> str:
    """A regex character class matching exactly ``codes`` (as ranges)."""
    ordered = sorted(codes)
    ranges: list[tuple[int, int]] = []
    for code in ordered:
        if ranges and code == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return "[" + "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in ranges) + "]"


# runs of unsafe code points, escaped a run at a time and joined once: linear whatever the
# allocator (str.translate grows its output by exact reallocations, quadratic under ASan)
_UNSAFE_RUN = re.compile(_char_class(UNSAFE) + "+")


def _escape_run(match: re.Match[str]) -> str:
    return "".join([_TABLE[ord(ch)] for ch in match.group()])


def printable(text: str) -> str:
    r"""``text`` as one line that is safe to print to a terminal.

    Every code point in :data:`UNSAFE` becomes a visible escape: ``\n``, ``\r``, ``\t`` for
    newline, carriage return and tab; ``\xHH`` for the other C0 controls, DEL and C1
    controls (ESC is ``\x1b``, CSI ``\x9b``); ``\uHHHH`` for the bidi controls, U+2028,
    U+2029, the invisible format characters and lone surrogates (``\u202e``), ``\UHHHHHHHH``
    above U+FFFF (``\U000e0041``).  Everything else, a backslash included, is
    kept as it is, so the result is idempotent (``printable(printable(s)) ==
    printable(s)``).  Linear time: one regex scan, one table lookup per escaped code point.

    Parameters
    ----------
    text : str
        Any text (a tool name, record id, file name, excerpt, reason, error message).

    Returns
    -------
    str
        The text with no control, bidi or line-breaking code point; as long as ``text``
        when there was nothing to escape.

    Raises
    ------
    TypeError
        ``text`` is not a ``str``.

    >>> printable("a\tb\x07c\x9b2J\u2066d")
    'a\\tb\\x07c\\x9b2J\\u2066d'
    """
    if not isinstance(text, str):
        raise TypeError(f"printable() needs a str, not {type(text).__name__}")
    return _UNSAFE_RUN.sub(_escape_run, text)


def redacted_name(name: Any, limit: int = NAME_CHARS) -> str:
    """A name taken from input (a tool name, a session or record id) with secrets redacted
    before the cut to ``limit`` code points (``…`` marks a cut; only the head is read): a tool
    name is not a payload, but models and logs put commands there (``PGPASSWORD=… psql``).
    Not a ``str``: its ``str()``.  For JSON output; :func:`shown_name` for text.

    >>> redacted_name("PGPASSWORD=hunter2xyz psql")
    'PGPASSWORD=[REDACTED] psql'
    """
    text = name if isinstance(name, str) else str(name)
    # the same few tool names come again and again: a short one is redacted once (cached)
    return _redacted_short(text, limit) if len(text) <= _CACHED_CHARS else _redacted(text, limit)


def _redacted(text: str, limit: int) -> str:
    shown, cut = redact_head(text, limit)
    return shown + ("…" if cut else "")


_CACHED_CHARS = 256
"""Names up to this many code points are redacted once, in :func:`_redacted_short`'s cache."""
_redacted_short = functools.lru_cache(maxsize=1024)(_redacted)


def shown_name(name: Any, limit: int = NAME_CHARS) -> str:
    r""":func:`redacted_name`, then :func:`printable`: a name as loopguard shows it in a reason,
    a log record or a report line.

    >>> shown_name("PGPASSWORD=hunter2xyz psql\n")
    'PGPASSWORD=[REDACTED] psql\\n'
    """
    return printable(redacted_name(name, limit))
