"""Token ids as symbols of the stream core (both implementations share this).

A channel can be fed token ids instead of text (``ChannelStream.feed_tokens``): each id is
one symbol, positions count tokens.  The detectors run unchanged over symbols; id ``t``
becomes the code point ``(t + TOKEN_SHIFT) % 0x110000``, so ids below 851,968 (every
vocabulary in use) land in planes 4–16, where no code point is a letter, a digit, a blank,
a line break, a fence or a sentence mark: the text-shaped rules (fenced code, sentences,
records, word salads, blank shares) see nothing there, and the symbol rules (verbatim and
near-verbatim cycles, exact tails, distinct counts) see exactly the ids.  Higher ids wrap onto
ordinary code points: the symbol rules are the same for them, and a channel fed token ids is
never masked for fenced code, so at most N's hold-back on record lines can see structure in
them (it holds back, never cuts more).

:func:`token_view` turns what the caller passes -- anything with the buffer protocol
(``array.array``, a numpy integer array, ``bytes`` as unsigned bytes), or a list/tuple of
ints -- into a flat, C-contiguous memoryview of native integers, without copying when the
buffer already is one.
"""

from __future__ import annotations

import array
import sys
from typing import Any

__all__ = ["TOKEN_SHIFT", "MAX_TOKEN_ID", "token_view", "token_symbols", "integer_code", "cast_items", "bad_token"]

TOKEN_SHIFT = 0x40000
MAX_TOKEN_ID = 0x10FFFF
_INTEGER_FORMATS = frozenset("bBhHiIlLqQnN")
_NATIVE_PREFIXES = ("@", "=", "<" if sys.byteorder == "little" else ">")


def token_view(ids: Any) -> memoryview:
    """A 1-D, C-contiguous memoryview of native integers over ``ids``.

    Raises
    ------
    TypeError
        when ``ids`` is a ``str``, has no buffer of integers (floats, objects), is
        not native byte order, or a list/tuple holds something that is not an int.
    ValueError
        when the buffer is not one-dimensional.
    """
    if isinstance(ids, str):
        raise TypeError("token ids must be integers (an array, a buffer or a list of int), not str: use feed()")
    if isinstance(ids, (list, tuple)):
        try:
            ids = array.array("q", ids)
        except OverflowError:  # an int beyond 64 bits: out of range, named
            index = next(i for i, v in enumerate(ids) if not -(2**63) <= v < 2**63)
            raise bad_token(index, ids[index]) from None
        except TypeError as exc:
            raise TypeError(f"token ids must be integers from 0 to {MAX_TOKEN_ID}: {exc}") from None
    try:
        view = memoryview(ids)
    except TypeError:
        raise TypeError(f"token ids must be an array, a buffer or a list of int, not {type(ids).__name__}") from None
    code, prefix = integer_code(view)
    if view.ndim != 1:
        raise ValueError(
            f"token ids must be one-dimensional (one sequence), not {view.ndim}-D: "
            "scan_tokens() takes a 2-D array, one row per sequence"
        )
    if not view.c_contiguous:  # a strided view: its items, copied in order
        return cast_items(memoryview(view.tobytes()), code)
    return cast_items(view.cast("B"), code) if prefix else view


def cast_items(view: memoryview, code: str, shape: tuple[int, ...] | None = None) -> memoryview:
    """``view.cast(code[, shape])`` for a format code known only at run time."""
    cast: Any = view.cast
    return cast(code) if shape is None else cast(code, shape)  # type: ignore[no-any-return]


def integer_code(view: memoryview) -> tuple[str, str]:
    """The buffer's integer format code and its byte-order prefix (``"i"``, ``"<"``).

    Raises
    ------
    TypeError
        when the buffer does not hold native integers.
    """
    fmt = view.format
    code = fmt.lstrip("@=<>!")
    prefix = fmt[: len(fmt) - len(code)]
    if code not in _INTEGER_FORMATS or (prefix and prefix not in _NATIVE_PREFIXES):
        raise TypeError(f"token ids must be native integers, not buffer format {fmt!r}")
    return code, prefix


def bad_token(index: int, value: int) -> ValueError:
    """The error for an id out of range (the same text from both implementations)."""
    return ValueError(f"token id {value} at index {index} is out of range: must be from 0 to {MAX_TOKEN_ID}")


def token_symbols(view: memoryview) -> str:
    """The symbols of validated-shape ids as a ``str`` (the reference's path).

    Raises
    ------
    ValueError
        for an id below 0 or above :data:`MAX_TOKEN_ID` (the first one).
    """
    values = view.tolist()
    for index, value in enumerate(values):
        if not 0 <= value <= MAX_TOKEN_ID:
            raise bad_token(index, value)
    return "".join([chr((t + TOKEN_SHIFT) % 0x110000) for t in values])
