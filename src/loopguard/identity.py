"""Tool-call identity: canonical JSON and call hashes (spec §4, seed 000).

Two calls are the same call when ``sha256(tool + "\\n" + canonical_json(args))``
is the same.  ``canonical_json`` is byte-identical to the seed harness's
JavaScript ``JSON.stringify`` of a copy whose object keys are sorted at every
level, so hashes computed here equal those of a JavaScript deployment of the
same brake (``../shared/data/call-hash-vectors.json`` holds the shared vectors):

* numbers are formatted as ECMAScript ``Number::toString`` of the double
  (``1.0 -> 1``, ``1e21 -> 1e+21``, ``1e-7 -> 1e-7``, ``-0 -> 0``; integers
  beyond 2**53 become the nearest double, as in JavaScript);
* strings are escaped as ``JSON.stringify`` does (``\\" \\\\ \\b \\f \\n \\r \\t``,
  other controls as ``\\u00xx``, lone surrogates as ``\\udxxx``; U+2028 and
  everything else raw);
* keys are sorted by UTF-16 code units, and -- because JavaScript objects list
  array-index keys first -- keys that are canonical array indices (``"0"`` to
  ``"4294967294"``, no leading zero) come first, in numeric order.

Values JSON cannot carry (NaN, infinities, bytes, sets, other objects) raise
``TypeError``/``ValueError`` naming the path of the bad value, e.g.
``args["opts"][2]``; the value itself is never shown (arguments carry secrets),
and a key name is shown only when it is a short plain name that does not look
like a credential (else ``[<key>]``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from json.encoder import encode_basestring as _quote  # the C escaper of json.dumps(ensure_ascii=False)
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "action_fingerprint",
    "call_hash",
    "canonical_json",
    "hash_prefix",
    "parse_args",
    "session_key",
]

#: Nesting deeper than this is refused with a ``ValueError`` (not a ``RecursionError``).
MAX_DEPTH = 500

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_HEX = re.compile("[0-9a-f]{12,128}")


def _join_surrogate_pairs(text: str) -> str:
    """Combine high+low surrogate code points into one astral character, as UTF-16 sees them."""
    if not _LONE_SURROGATE.search(text):
        return text
    return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")


def _escape_char(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _string(text: str) -> str:
    # json.dumps (C) escapes exactly like JSON.stringify -- \" \\ \b \f \n \r \t and
    # \u00xx for other controls, everything else raw -- except lone surrogates,
    # which only a failed UTF-8 encode reveals (cheap: C speed, no regex scan)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _join_surrogate_pairs(text)
        return _LONE_SURROGATE.sub(_escape_char, _quote(text))
    return _quote(text)


Path = tuple[Any, ...]  # (parent path, key or index); the root is ("args",)


_PLAIN_KEY = re.compile("[A-Za-z_][A-Za-z0-9_]{0,31}")
_SECRET_LOOKING = re.compile(
    r"(?i)(sk|pk|rk|gh[pousr]|xox[abprs]|akia|aiza|hf|glpat)[_-]|.*\d{6}|.*(key|token|secret|passw)"
)


def _show_key(key: str) -> str:
    """A key as shown in an error path: plain short names only (key names can be secrets)."""
    if _PLAIN_KEY.fullmatch(key) and not _SECRET_LOOKING.match(key):
        return json.dumps(key)
    return "<key>"


def _show_path(path: Path) -> str:
    parts: list[str] = []
    while len(path) == 2:
        path, key = path
        parts.append(f"[{_show_key(key)}]" if isinstance(key, str) else f"[{key}]")
    if len(parts) > 12:
        parts = parts[:6] + ["..."] + parts[-5:]
    return str(path[0]) + "".join(reversed(parts))


def _number(value: float, path: Path) -> str:
    """ECMAScript ``Number::toString(value)`` (ECMA-262 §6.1.6.1.20)."""
    if not math.isfinite(value):
        raise ValueError(f"{_show_path(path)}: NaN and infinities cannot be represented in JSON")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")  # shortest round-trip digits
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    # value = 0.digits x 10**n
    n = len(whole.lstrip("0")) if whole.strip("0") else -(len(frac) - len(frac.lstrip("0")))
    n += int(exponent or 0)
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    tail = f"e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + (digits if k == 1 else digits[0] + "." + digits[1:]) + tail


def _is_array_index(key: str) -> bool:
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) <= 4294967294


def _utf16(key: str) -> bytes:
    return _join_surrogate_pairs(key).encode("utf-16-be", "surrogatepass")


def _ordered_keys(keys: Iterable[str]) -> list[str]:
    keys = list(keys)
    indices = [k for k in keys if k[:1].isdigit() and _is_array_index(k)]
    if indices:
        chosen = set(indices)
        keys = [k for k in keys if k not in chosen]
        indices.sort(key=int)
    # UTF-16 order equals code point order unless a key holds an astral character
    if all(k.isascii() for k in keys):
        keys.sort()
    else:
        keys.sort(key=_utf16)
    return indices + keys


def _encode(value: Any, path: Path, depth: int, out: list[str]) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"{_show_path(path)}: nested deeper than {MAX_DEPTH} levels")
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        if -(2**53) <= value <= 2**53:
            out.append(str(value))  # exact in a double, formatted alike
            return
        try:
            number = float(value)
        except OverflowError:
            raise ValueError(f"{_show_path(path)}: integer too large for a JSON number") from None
        out.append(_number(number, path))
    elif isinstance(value, float):
        if value.is_integer() and -(2.0**53) <= value <= 2.0**53:
            out.append(str(int(value)))  # -0.0 -> "0", 1.0 -> "1", as Number::toString
        else:
            out.append(_number(value, path))
    elif isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"{_show_path(path)}: object keys must be str, not {type(key).__name__}")
        out.append("{")
        for i, key in enumerate(_ordered_keys(value)):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _encode(value[key], (path, key), depth + 1, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, (path, i), depth + 1, out)
        out.append("]")
    else:
        raise TypeError(f"{_show_path(path)}: {type(value).__name__} cannot be represented in JSON")


def canonical_json(value: Any, *, name: str = "args") -> str:
    """The canonical JSON text of ``value`` (spec §4): sorted keys, JavaScript formatting.

    Parameters
    ----------
    value : Any
        ``None``, ``bool``, ``int``, ``float``, ``str``, mappings with ``str``
        keys, lists and tuples, nested up to :data:`MAX_DEPTH` levels.
    name : str
        How the value is called in error messages (``args["opts"][2]``).

    Returns
    -------
    str
        Compact JSON, equal to JavaScript's ``JSON.stringify`` of a key-sorted copy.

    Raises
    ------
    TypeError
        for a value JSON cannot carry (bytes, sets, other objects, non-str
        keys), naming its path.
    ValueError
        for NaN, infinities, integers beyond the double range, or nesting
        deeper than :data:`MAX_DEPTH`, naming the path.

    Examples
    --------
    >>> canonical_json({"b": 2, "a": [1.0, 1e21, -0.0, "x\\n"]})
    '{"a":[1,1e+21,0,"x\\\\n"],"b":2}'
    """
    out: list[str] = []
    _encode(value, (name,), 0, out)
    return "".join(out)


def parse_args(args: Any) -> Any:
    """Tool-call arguments as :func:`call_hash` reads them: a JSON string (or UTF-8 bytes) is
    parsed first; other strings and values stay as given.

    Raises ValueError for bytes that are not UTF-8 and RecursionError for JSON nested too deep
    to parse (callers that must not fail hash such arguments by their stable text).
    """
    if isinstance(args, (str, bytes, bytearray)):
        if isinstance(args, (bytes, bytearray)):
            try:
                text = args.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError as exc:  # its repr would quote the bytes: name the place only
                raise ValueError(f"args: bytes that are not UTF-8 (byte {exc.start})") from None
        else:
            text = args
        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError(f"args: JSON nested deeper than Python can parse (> {MAX_DEPTH} levels)") from None
        except ValueError:
            return text
    return args


def _hash_text(text: str) -> bytes:
    # Node's createHash().update(str) encodes UTF-16 as UTF-8: pairs become one
    # character, lone surrogates become U+FFFD.
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", _join_surrogate_pairs(text)).encode("utf-8")


def call_hash(tool: str, args: Any) -> str:
    """``sha256(tool + "\\n" + canonical_json(args))`` as 64 lowercase hex digits (spec §4).

    ``args`` given as a JSON string (or UTF-8 bytes) is parsed first; a string
    that is not JSON is hashed as that string value.

    Raises
    ------
    TypeError
        when ``tool`` is not a ``str``, or for arguments JSON cannot carry.
    ValueError
        for NaN/infinite numbers or pathological nesting.

    Examples
    --------
    >>> call_hash("search", {"q": "weather"})[:12]
    '35dca543bb3b'
    >>> call_hash("search", '{"q": "weather"}') == call_hash("search", {"q": "weather"})
    True
    """
    if not isinstance(tool, str):
        raise TypeError(f"tool must be str, not {type(tool).__name__}")
    canonical = canonical_json(parse_args(args))
    return hashlib.sha256(_hash_text(tool + "\n" + canonical)).hexdigest()


_NO_ARGS: Any = object()


def hash_prefix(tool_or_digest: str, args: Any = _NO_ARGS) -> str:
    """The 12 hex digits shown in errors and logs (spec §4).

    ``hash_prefix(digest)`` shortens a hex digest (at least 12 hex digits);
    ``hash_prefix(tool, args)`` hashes the call first.

    Raises
    ------
    ValueError
        for one argument that is not a lowercase hex digest.

    Examples
    --------
    >>> hash_prefix("search", {"q": "weather"})
    '35dca543bb3b'
    >>> hash_prefix(call_hash("search", {"q": "weather"}))
    '35dca543bb3b'
    """
    if args is _NO_ARGS:
        if not isinstance(tool_or_digest, str) or not _HEX.fullmatch(tool_or_digest):
            raise ValueError("hash_prefix(digest) takes a lowercase hex digest; use hash_prefix(tool, args)")
        return tool_or_digest[:12]
    return call_hash(tool_or_digest, args)[:12]


def action_fingerprint(tool: str, args: Any, volatile_keys: Sequence[str] = ("description",)) -> str:
    """``call_hash`` after dropping ``volatile_keys`` at the top level (the drift rule, spec §4; docs/rules.md).

    Examples
    --------
    >>> action_fingerprint("shell", {"command": "ls", "description": "look"}) == call_hash("shell", {"command": "ls"})
    True
    """
    parsed = parse_args(args)
    if isinstance(parsed, Mapping):
        parsed = {k: v for k, v in parsed.items() if k not in volatile_keys}
    return call_hash(tool, parsed)


def session_key(session_id: Any = None) -> str:
    """The key a session's state is stored under: ``str(session_id)``, ``"default"`` for ``None``/``""``."""
    if session_id is None or session_id == "":
        return "default"
    return str(session_id)
