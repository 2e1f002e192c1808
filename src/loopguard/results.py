"""Tool results: normalisation, result hashes, line sets and summaries (spec §5.2; seed 001).

A tool result may be a ``str``, ``bytes`` or a JSON-like value (``dict``,
``list``, numbers, ``None``).  Before a result is hashed, *volatile* parts
that change on every call without carrying information are removed, so that
"the same failing request" is seen as the same result even when each response
carries a fresh request id and timestamp (seed 001 D1; OpenClaw #89090 in
``research/peers-tools.md``):

* in JSON-like values, object members whose key is a volatile field name
  (compared case-insensitively with ``-`` and ``_`` ignored: ``request_id`` =
  ``requestId`` = ``X-Request-Id``) are dropped at every level;
* in text, ``"key": value``, ``key=value`` and ``key: value`` pairs of those
  names have their value replaced by ``<volatile>``; ISO-8601 date-times, run
  times (``in 12.18s``, ``took 35 ms``, ``10001 milliseconds``) and "read N×
  this session" style counters are replaced by placeholders.

Numbers that are not durations (``2 of 6 replicas ready``) and identifiers
that are not under a volatile key stay: they are information.

The result hash (spec §5.2) is ``sha256("1\\n" or "0\\n" + canonical
content)``, the first line being the error flag.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from loopcore import TokenFinder, word_lines

from .redact import redact_secrets, redact_value, whole_words_head

__all__ = [
    "DEFAULT_VOLATILE_FIELDS",
    "content_line",
    "is_failure",
    "mask_counters",
    "says_nothing",
    "normalize_result",
    "normalized_text",
    "result_digest",
    "result_text",
    "stable_text",
    "text_digest",
    "result_lines",
    "summarize_result",
]

#: Field names stripped from results before hashing (compared without case,
#: ``-`` or ``_``).  Ids and clocks of one response, never its content.
DEFAULT_VOLATILE_FIELDS: tuple[str, ...] = (
    "request_id",
    "x_request_id",
    "trace_id",
    "span_id",
    "correlation_id",
    "timestamp",
    "ts",
    "time",
    "date",
    "datetime",
    "created_at",
    "updated_at",
    "generated_at",
    "server_time",
    "duration",
    "duration_ms",
    "elapsed",
    "elapsed_ms",
    "took",
    "took_ms",
    "latency",
    "latency_ms",
)

_MAX_LINES = 512  # line sets (D2) look at the first 512 lines of a result
_STRIP_DEPTH = 100  # volatile members are dropped down to this depth
#: JSON-like values nested deeper than this take the stable text (``stable:``) on every Python:
#: the C encoder's own limit differs (3.10-3.12 stop near the recursion limit, 3.13 goes far deeper).
_JSON_DEPTH = 500
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")

# The text rules.  ASCII semantics throughout (\d = [0-9], \b between [A-Za-z0-9_] and the rest).
_ISO_DATETIME = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b", re.ASCII
)
_UNITS = r"(ms|milliseconds?|s|secs?|seconds?|µs|us|ns|min|mins|minutes?)"
_KEYWORDS = ("in", "took", "after", "elapsed", "duration")
_DURATION = re.compile(rf"(?i)\b({'|'.join(_KEYWORDS)})([ \t]*[:=]?[ \t]*)\d+(?:\.\d+)?[ \t]?{_UNITS}\b", re.ASCII)
_BARE_DURATION = re.compile(r"\b\d+\.\d+[ \t]?(ms|s|sec|secs|seconds)\b", re.ASCII)
_SESSION_COUNTER = re.compile(
    r"(?i)\b(\d+)[ \t]*(×|x|times)([ \t]+(?:in[ \t]+)?this[ \t]+(?:session|conversation|turn))", re.ASCII
)
_KEY_TAIL = re.compile(r"""["']?[ \t]*[:=][ \t]*("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,;}\]]+)""", re.ASCII)
# literal-led anchors for the fast path (CPython's re scans for a literal prefix at C speed)
_ISO_ANCHOR = re.compile(r"-\d\d-\d\d[T ]\d\d:\d\d", re.ASCII)
_BARE_ANCHOR = re.compile(r"\.\d+[ \t]?(?:ms|s|sec|secs|seconds)\b", re.ASCII)
# a duration starts a token whose leading letters are its keyword (``in 5s``, ``in5s``); a
# session counter's "this" is a token too (one compiled pass finds both)
_KEYWORD_TOKENS = TokenFinder((*_KEYWORDS, "this"))
_VOLATILE = "<volatile>"
_HAS_WORD = re.compile(r"[^\W_]").search


@functools.lru_cache(maxsize=4096)  # a result's keys repeat ("id", "title" in every item)
def _field_key(name: str) -> str:
    return name.replace("-", "").replace("_", "").casefold()


def _fields(fields: Iterable[str]) -> frozenset[str]:
    return frozenset(_field_key(f) for f in fields)


@functools.lru_cache(maxsize=64)
def _key_forms(fields: tuple[str, ...]) -> tuple[str, ...]:
    """How a field name may appear in lower-cased text with ``-`` read as ``_``:
    ``request_id`` → ``request_id`` and ``requestid`` (``requestId``, ``X-Request-Id`` …)."""
    forms: set[str] = set()
    for name in fields:
        low = name.lower().replace("-", "_")
        forms.add(low)
        forms.add(low.replace("_", ""))
    return tuple(sorted(f for f in forms if f))


@functools.lru_cache(maxsize=64)
def _form_tokens(forms: tuple[str, ...]) -> TokenFinder:
    return TokenFinder(forms)


#: leaves returned as they are without a look at their type's ancestry (most of a JSON value)
_LEAVES = frozenset({str, int, float, bool, type(None)})


def _strip_value(value: Any, fields: frozenset[str], depth: int = 0) -> Any:
    if depth > _STRIP_DEPTH:  # deeper parts are kept as they are (two frames per level)
        return value
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
        return {
            k: v if type(v) in _LEAVES else _strip_value(v, fields, depth + 1)
            for k, v in value.items()
            if not (isinstance(k, str) and _field_key(k) in fields)
        }
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        return [v if type(v) in _LEAVES else _strip_value(v, fields, depth + 1) for v in value]
    return value


def _is_word(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


def _key_spans(text: str, low: str, starts: Iterable[tuple[int, str]]) -> list[tuple[int, int]]:
    """Value spans of ``key: value`` pairs whose key occurrences (position, form) are given."""
    spans: list[tuple[int, int]] = []
    end = 0
    for i, form in sorted(starts):
        if i < end:
            continue
        j = i + len(form)
        if i > 0 and _is_word(low[i - 1]):
            continue
        if j < len(low) and _is_word(low[j]):
            continue
        m = _KEY_TAIL.match(text, j)
        if m is None:
            continue
        spans.append((m.start(1), m.end(1)))
        end = m.end(1)
    return spans


def _replace(text: str, spans: list[tuple[int, int]], placeholder: str) -> str:
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for a, b in spans:
        out += (text[last:a], placeholder)
        last = b
    out.append(text[last:])
    return "".join(out)


def _normalize_text_reference(text: str, forms: tuple[str, ...]) -> str:
    """The text rules written plainly: every position tried (tests compare the fast path with it)."""
    low = text.lower().replace("-", "_")
    if len(low) == len(text):
        starts = [(i, f) for i in range(len(low)) for f in forms if low.startswith(f, i)]
        text = _replace(text, _key_spans(text, low, starts), _VOLATILE)
    text = _ISO_DATETIME.sub("<datetime>", text)
    text = _DURATION.sub(lambda m: f"{m.group(1)}{m.group(2)}<duration>", text)
    text = _BARE_DURATION.sub("<duration>", text)
    return _SESSION_COUNTER.sub(lambda m: f"<n>{m.group(2)}{m.group(3)}", text)


def _anchored(text: str, full: re.Pattern[str], anchors: Iterable[int]) -> list[re.Match[str]]:
    """The matches ``full.sub`` would make, given every position where one can start."""
    found: list[re.Match[str]] = []
    end = -1
    for pos in sorted(set(anchors)):
        if pos < end:
            continue
        m = full.match(text, pos)
        if m is not None:
            found.append(m)
            end = m.end()
    return found


def _digits_before(text: str, i: int) -> int:
    while i > 0 and "0" <= text[i - 1] <= "9":
        i -= 1
    return i


def _normalize_text(text: str, forms: tuple[str, ...]) -> str:
    """Fast path of :func:`_normalize_text_reference`: compiled token scans
    (:class:`loopcore.TokenFinder`) and literal-led regex scans, the full rule only
    where one of them hits (about 30 µs per 10 KB of text without volatile parts)."""
    low = text.lower().replace("-", "_") if ":" in text or "=" in text else ""  # a key's value follows [:=]
    if len(low) == len(text):
        finder = _form_tokens(forms)
        starts = [(i, low[i:j]) for i, j in finder.find(low)]
        for form in forms:  # a field name that is not one token ("x.request"): every occurrence
            if form not in finder.words:
                i = low.find(form)
                while i >= 0:
                    starts.append((i, form))
                    i = low.find(form, i + 1)
        text = _replace(text, _key_spans(text, low, starts), _VOLATILE)
    if "-" in text:
        iso = _anchored(text, _ISO_DATETIME, (m.start() - 4 for m in _ISO_ANCHOR.finditer(text) if m.start() >= 4))
        text = _replace(text, [m.span() for m in iso], "<datetime>")
    keywords = _KEYWORD_TOKENS.find(text, True)
    starts_kw = [i for i, j in keywords if j - i != 4 or text[i:j].lower() != "this"]
    this = len(starts_kw) < len(keywords)
    if starts_kw:
        parts: list[str] = []
        last = 0
        for m in _anchored(text, _DURATION, starts_kw):
            parts += (text[last : m.start()], f"{m.group(1)}{m.group(2)}<duration>")
            last = m.end()
        text = "".join(parts) + text[last:] if parts else text
    if "." in text:
        bare = _anchored(text, _BARE_DURATION, (_digits_before(text, m.start()) for m in _BARE_ANCHOR.finditer(text)))
        text = _replace(text, [m.span() for m in bare], "<duration>")
    if this:  # (the replacements above neither make nor break a token "this")
        text = _SESSION_COUNTER.sub(lambda m: f"<n>{m.group(2)}{m.group(3)}", text)
    return text


def _decode(result: bytes | bytearray | memoryview) -> str | bytes:
    raw = bytes(result)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def normalize_result(result: Any, volatile_fields: Iterable[str] = DEFAULT_VOLATILE_FIELDS) -> Any:
    """``result`` with its volatile parts removed (see the module docstring).

    Parameters
    ----------
    result : str | bytes | JSON-like
        A tool result.  ``bytes`` that are valid UTF-8 are treated as text;
        other bytes are returned unchanged.
    volatile_fields : iterable of str
        Field names to strip (default :data:`DEFAULT_VOLATILE_FIELDS`); an
        empty iterable keeps fields but still replaces date-times, run times
        and session counters in text.

    Examples
    --------
    >>> normalize_result({"ok": False, "request_id": "req_1", "error": {"trace-id": "t"}})
    {'ok': False, 'error': {}}
    >>> normalize_result('HTTP 422 {"request_id": "req_9", "code": 7} at 2025-06-03T14:12:05Z')
    'HTTP 422 {"request_id": <volatile>, "code": 7} at <datetime>'
    >>> normalize_result("2 of 6 replicas ready (took 1.5s)")
    '2 of 6 replicas ready (took <duration>)'
    """
    names = tuple(volatile_fields)
    if isinstance(result, (bytes, bytearray, memoryview)):
        result = _decode(result)
        if isinstance(result, bytes):
            return result
    if isinstance(result, str):
        return _normalize_text(result, _key_forms(names))
    return _strip_value(result, _fields(names))


def result_text(result: Any) -> str:
    """The canonical text of a (normalised) result: strings as they are, bytes
    that are not UTF-8 as ``<binary result: N bytes, sha256 BASE64>``,
    JSON-like values as compact sorted-key JSON (``repr`` for objects JSON
    does not know; keys of mixed types and circular values through a
    ``repr``-based fallback).  Deterministic within loopguard; unlike call
    hashes (spec §4) result hashes need not match the JavaScript harness."""
    if isinstance(result, str):
        return result
    if isinstance(result, (bytes, bytearray, memoryview)):
        decoded = _decode(result)
        if isinstance(decoded, str):
            return decoded
        digest = base64.b64encode(hashlib.sha256(decoded).digest()).decode("ascii")
        return f"<binary result: {len(decoded)} bytes, sha256 {digest}>"
    try:  # C-accelerated; result hashes need not match JavaScript, only be deterministic
        text = json.dumps(result, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    except Exception:
        return _fallback_text(result)
    return _fallback_text(result) if _too_deep(text) else text


def normalized_text(result: Any, volatile_fields: Iterable[str] | None = DEFAULT_VOLATILE_FIELDS) -> str:
    """The text a result is hashed over: :func:`normalize_result`, then
    :func:`result_text`; for JSON-like values the text rules (date-times, run
    times, counters) are also applied to that JSON text, so ``{"msg": "done
    in 21s"}`` and ``{"msg": "done in 3s"}`` are the same result.
    ``volatile_fields=None``: the result as it is, not normalised."""
    return normalized(result, volatile_fields)[0]


def normalized(result: Any, volatile_fields: Iterable[str] | None = DEFAULT_VOLATILE_FIELDS) -> tuple[str, Any]:
    """``(normalized_text(result), normalize_result(result))`` computed once."""
    if volatile_fields is None:
        return result_text(result), result
    names = tuple(volatile_fields)
    value = normalize_result(result, names)
    text = result_text(value)
    if not isinstance(value, (str, bytes)):
        text = _normalize_text(text, _key_forms(names))
    return text, value


class _Close:
    __slots__ = ("text", "ident")

    def __init__(self, text: str, ident: int) -> None:
        self.text, self.ident = text, ident


def stable_text(value: Any) -> str:
    """A deterministic text for any value, without recursion (any depth, cycles as
    ``<cycle>``): mappings with their keys sorted by ``(type name, repr)``,
    sequences in order, strings JSON-quoted, integers too long for ``repr`` in hexadecimal,
    other objects by ``repr`` (or
    ``<unprintable T>`` when that raises).  The fallback identity of arguments
    and results that JSON cannot hold.

    >>> stable_text({"b": [1, (2, None)], "a": "x"})
    '{"a":"x","b":[1,[2,None]]}'
    >>> loop = []; loop.append(loop); stable_text(loop)
    '[<cycle>]'
    """
    out: list[str] = []
    stack: list[Any] = [value]
    open_ids: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, _Close):
            out.append(item.text)
            open_ids.discard(item.ident)
            continue
        if isinstance(item, _Literal):
            out.append(item)
            continue
        if isinstance(item, str):
            out.append(json.dumps(item, ensure_ascii=False))
        elif item is None or isinstance(item, (bool, float)):
            out.append(repr(item))
        elif isinstance(item, int):
            try:
                out.append(repr(item))
            except ValueError:  # more digits than sys.get_int_max_str_digits(): hexadecimal has no limit
                out.append(hex(item))
        elif isinstance(item, (Mapping, list, tuple)):
            ident = id(item)
            if ident in open_ids:
                out.append("<cycle>")
                continue
            open_ids.add(ident)
            if isinstance(item, Mapping):
                try:
                    keys = sorted(item, key=lambda k: (type(k).__name__, _safe_repr(k)))
                    entries = [(k, item[k]) for k in keys]
                except Exception:
                    out.append(f"<unprintable {type(item).__name__}>")
                    open_ids.discard(ident)
                    continue
                out.append("{")
                stack.append(_Close("}", ident))
                for n, (k, v) in enumerate(reversed(entries)):
                    stack.append(v)
                    label = k if isinstance(k, str) else _safe_repr(k)
                    stack.append(_Literal(json.dumps(label, ensure_ascii=False) + ":"))
                    if n < len(entries) - 1:
                        stack.append(_Literal(","))
            else:
                out.append("[")
                stack.append(_Close("]", ident))
                for n, element in enumerate(reversed(item)):
                    stack.append(element)
                    if n < len(item) - 1:
                        stack.append(_Literal(","))
        else:
            out.append(_safe_repr(item))
    return "".join(out)


class _Literal(str):
    """Text :func:`stable_text` emits as it is."""


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:
        return f"<unprintable {type(value).__name__}: {type(exc).__name__}>"


def _fallback_text(result: Any) -> str:
    return "stable:" + stable_text(result)


def _too_deep(text: str) -> bool:
    """Whether the JSON ``text`` nests more than ``_JSON_DEPTH`` levels (so that every Python gives
    the stable text for it, whatever its encoder's own limit).  Two C-speed counts for nearly every
    result; only texts with that many brackets are measured (strings removed, then the innermost
    pairs peeled off once per level, at most ``_JSON_DEPTH`` times)."""
    if text.count("[") + text.count("{") <= _JSON_DEPTH:
        return False
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    for _ in range(_JSON_DEPTH):
        if not brackets:
            return False
        brackets = _INNERMOST.sub("", brackets)
    return bool(brackets)


def result_digest(
    result: Any, *, error: bool = False, volatile_fields: Iterable[str] | None = DEFAULT_VOLATILE_FIELDS
) -> str:
    """The result hash of spec §5.2: sha256 hex over (error flag, canonical content).

    ``volatile_fields=None`` hashes the result as it is (no normalisation).

    Examples
    --------
    >>> a = result_digest('{"code": 1, "request_id": "a"}')
    >>> a == result_digest('{"code": 1, "request_id": "b"}')
    True
    >>> a == result_digest('{"code": 1, "request_id": "a"}', error=True)
    False
    """
    return text_digest(normalized_text(result, volatile_fields), error=error)


def text_digest(text: str, *, error: bool = False) -> str:
    """sha256 hex of ``"1\n"``/``"0\n"`` (the error flag) + ``text``: the result hash of an
    already canonical result text (:func:`result_text`)."""
    payload = ("1\n" if error else "0\n") + text
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def result_lines(result: Any) -> frozenset[str]:
    """The set of distinct stripped lines among the first 512 lines of a
    result that hold at least one letter or digit (D2's line set: brackets,
    rules and blank lines carry no information).  JSON-like values are laid
    out one member per line."""
    if isinstance(result, (str, bytes, bytearray, memoryview)):
        text = result_text(result)
    else:
        try:  # one member per line, through the C encoder
            text = json.dumps(result, sort_keys=True, separators=(",\n", ": "), ensure_ascii=False, default=repr)
        except Exception:
            text = _fallback_text(result)
        else:
            if _too_deep(text):
                text = _fallback_text(result)
    return word_lines(text, _MAX_LINES)  # one compiled pass (loopcore)


_SECRET_WORD = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cookie|credential")


def summary_text(result: Any, text: str | None = None) -> str:
    """The text a summary of ``result`` is made from (``text``: its :func:`result_text`, when
    already known): that text, except for a structured result whose text mentions a
    secret-like name, which goes through :func:`~loopguard.redact.redact_value` before it is
    serialised -- whatever a secret-named key (``credentials``, ``b"password"``...) or
    name/value pair holds is hidden, also where the text rules cannot tell it from data."""
    if text is None:
        text = result_text(result)
    if isinstance(result, (str, bytes, bytearray, memoryview)) or _SECRET_WORD.search(text) is None:
        return text
    return result_text(redact_value(result))


def summarize_result(result: Any, *, max_lines: int = 3, max_chars: int = 240) -> str:
    """A short, redacted summary of a result for intervention texts (seed 001 I2):
    its first non-empty lines (at most ``max_lines``) joined with `` | ``,
    redacted, then cut to at most ``max_chars`` characters ending in ``…``
    when anything was left out; ``(empty result)`` when there is nothing.  A structured result
    goes through :func:`~loopguard.redact.redact_value` first (:func:`summary_text`)."""
    text = summary_text(result)
    # redacted whole and line by line structure intact, before lines are picked and cut: a cut
    # secret would no longer look like one, and a header value ends at its line's end
    head = redact_secrets(whole_words_head(text, max_chars * 4 + 1024))
    parts: list[str] = []
    size = 0
    more = len(text) > max_chars * 4 + 1024
    for line in head.splitlines():
        line = line.strip()
        if not line:
            continue
        if len(parts) >= max_lines or size >= max_chars:
            more = True
            break
        parts.append(line)
        size += len(line)
    if not parts:
        return "(empty result)"
    summary = " | ".join(parts)
    if len(summary) > max_chars - (1 if more else 0):
        summary, more = summary[: max_chars - 1], True
    return summary + ("…" if more else "")


# ------------------------------------------------------------------ information (issue 15)

#: Markup tags (``<output>``, ``</returncode>``): a wrapper, not content.
_TAG = re.compile(
    r"""</?[A-Za-z][\w:.-]{0,40}(?:\s+[A-Za-z_:][\w:.-]*(?:=(?:"[^"<>]*"|'[^'<>]*'|[^\s<>"']+))?)*\s*/?>"""
)
#: A result line that only says there is nothing to say.
_NO_OUTPUT = re.compile(
    r"(?i)^[\W_]*(?:(?:the )?(?:your )?command (?:ran|completed|executed|finished|succeeded)(?: successfully)?"
    r"(?:,? (?:and|but|with) (?:did not|didn't) produce any output| with no output)?"
    r"|(?:there (?:is|was) )?no output(?: (?:was )?(?:produced|returned))?|\(?empty(?: output| result)?\)?"
    r"|(?:the )?output (?:is|was) empty|nothing to (?:show|display|report)|(?:done|ok|okay|success(?:ful)?)"
    r"|none|null|true|false)[\W_]*$"
)
#: How a "nothing to say" line can start once leading punctuation is dropped (a C prefilter).
_NO_OUTPUT_STARTS = (
    "the ",
    "your ",
    "command ",
    "there ",
    "no output",
    "empty",
    "output ",
    "nothing ",
    "done",
    "ok",
    "success",
    "none",
    "null",
    "true",
    "false",
)
_LEADING = "".join(chr(c) for c in range(128) if not chr(c).isalnum()) + "_"


def _says_nothing_line(bare: str) -> bool:
    head = bare.lstrip(_LEADING)
    return (
        len(head) <= 96
        and head[:9].lower().startswith(_NO_OUTPUT_STARTS)
        and _NO_OUTPUT.match(bare.strip()) is not None
    )


#: A line that states the command printed nothing: a short result holding one says nothing,
#: whatever frame (prompt, working directory) surrounds it.
_NOTHING = re.compile(
    r"(?im)(?:did not|didn't) produce any output|\bno output\b|produced no output|output (?:is|was) empty"
    r"|^\W*\(?empty(?: output| result)?\)?\W*$"
)


def says_nothing(lines: frozenset[str]) -> bool:
    """Whether a short result (at most 8 lines) states that there was no output
    (``Your command ran successfully and did not produce any output.``).

    >>> says_nothing(frozenset({"(no output)", "bash-$"})), says_nothing(frozenset({"x = 1"}))
    (True, False)
    """
    if len(lines) > 8:
        return False
    joined = "\n".join(lines)
    low = joined.lower()
    return ("output" in low or "empty" in low) and _NOTHING.search(joined) is not None


#: Words that say a result reports a failure (checked near its start and end).
_FAILURE = re.compile(
    r"(?i)\b(?:error|errno|exception|traceback|fatal|failed|failure|denied|forbidden|unauthori[sz]ed"
    r"|not found|no such file|no such|cannot|can't|could not|couldn't|unable to|invalid|illegal|missing"
    r"|unrecognized|unknown (?:command|option|argument)|timed out|refused|malformed)\b|\busage:"
)
#: Numbers that only count or point (a line number, a file position, an address, a process,
#: an attempt, an id), not quantities of the outcome ("2 of 6 ready" stays).
_COUNTER = re.compile(
    r"(?i)\b(line|lineno|pid|port|job|attempt|try|retry|request|process|thread|session|run|step|call|id)"
    r"([ \t]*[:=#]?[ \t]*)\d+"
    r"|0x[0-9a-f]+|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b"
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|(\.[A-Za-z]{1,5}):\d+(?::\d+)?"
)


def _counter(match: re.Match[str]) -> str:
    if match.group(1):
        return f"{match.group(1)}{match.group(2)}#"
    return f"{match.group(3)}:#" if match.group(3) else "#"


def content_line(line: str, short: bool = True) -> bool:
    """Whether a (stripped) result line says something: not only markup tags and
    digits/punctuation (``<returncode>0</returncode>``, ``</output>``), not a
    "nothing to say" line (``(no output)``, "Your command ran successfully and did
    not produce any output.", ``OK``, ``[]``).  ``short=False`` (a line of a result
    of more than 8 lines) skips the "nothing to say" test: a long result says something.

    >>> [content_line(x) for x in ("<returncode>0</returncode>", "(no output)", "x = 1")]
    [False, False, True]
    """
    if "<" in line:
        bare = _TAG.sub("", line)
        if bare != line and not any(ch.isalpha() for ch in bare):
            return False  # tags around a number: a wrapper's exit code
    elif not short:
        return _HAS_WORD(line) is not None
    else:
        bare = line
    if _HAS_WORD(bare) is None:
        return False
    return not short or not _says_nothing_line(bare)


#: Literal pieces one of which every failure word holds (a C substring scan first).
_FAILURE_HINTS = (
    "err",
    "exception",
    "traceback",
    "fatal",
    "fail",
    "denied",
    "forbidden",
    "unauthori",
    "not found",
    "no such",
    "cannot",
    "can't",
    "could",
    "unable",
    "invalid",
    "illegal",
    "missing",
    "unrecognized",
    "unknown",
    "timed out",
    "refused",
    "malformed",
    "usage:",
)


def _failure_in(window: str) -> bool:
    low = window.lower()
    return any(hint in low for hint in _FAILURE_HINTS) and _FAILURE.search(window) is not None


def is_failure(text: str, error: bool = False) -> bool:
    """Whether a result reports a failure: the error flag, or a failure word
    (:data:`_FAILURE`: error, not found, denied, usage:, …) in its first or
    last 400 code points."""
    if error:
        return True
    if len(text) <= 800:
        return _failure_in(text)
    return _failure_in(text[:400]) or _failure_in(text[-400:])


def mask_counters(text: str) -> str:
    """``text`` with the numbers that only count or point replaced by ``#``: line
    numbers (``line 318``, ``a.py:12:``), addresses and hexadecimal ids, UUIDs, and
    the numbers of a pid, port, job, attempt, request, step or id.  Failures that
    differ only there are the same failure; quantities (``2 of 6 ready``, ``3
    failed``) stay.

    >>> mask_counters("bash: line 318: ls.dvc: command not found")
    'bash: line #: ls.dvc: command not found'
    >>> mask_counters("a.py:12: error at 0x7f3a (2 of 6 ready)")
    'a.py:#: error at # (2 of 6 ready)'
    """
    return _COUNTER.sub(_counter, text)
