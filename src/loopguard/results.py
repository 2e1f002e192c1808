"""Tool results: normalisation, result hashes, line sets and summaries (SPEC §5.2; seed 001).

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

The result hash (SPEC §5.2) is ``sha256("1\\n" or "0\\n" + canonical
content)``, the first line being the error flag.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from . import identity
from .redact import redact_secrets

__all__ = [
    "DEFAULT_VOLATILE_FIELDS",
    "normalize_result",
    "result_digest",
    "result_text",
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

_MAX_LINES = 4096  # line sets (D2) keep at most this many distinct lines
_ISO_DATETIME = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b"
)
_DURATION = re.compile(
    r"(?i)\b(in|took|after|elapsed|duration)(\s*[:=]?\s*)\d+(?:\.\d+)?\s?"
    r"(ms|milliseconds?|s|secs?|seconds?|µs|us|ns|min|mins|minutes?)\b"
)
_BARE_DURATION = re.compile(r"\b\d+\.\d+\s?(ms|s|sec|secs|seconds)\b")
_SESSION_COUNTER = re.compile(
    r"(?i)\b(\d+)\s*(×|x|times)(\s+(?:in\s+)?this\s+(?:session|conversation|turn))"
)


def _field_key(name: str) -> str:
    return name.replace("-", "").replace("_", "").casefold()


def _fields(fields: Iterable[str]) -> frozenset[str]:
    return frozenset(_field_key(f) for f in fields)


def _strip_value(value: Any, fields: frozenset[str], depth: int = 0) -> Any:
    if depth > identity.MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        return {
            k: _strip_value(v, fields, depth + 1)
            for k, v in value.items()
            if not (isinstance(k, str) and _field_key(k) in fields)
        }
    if isinstance(value, (list, tuple)):
        return [_strip_value(v, fields, depth + 1) for v in value]
    return value


def _text_pattern(fields: frozenset[str]) -> re.Pattern[str] | None:
    if not fields:
        return None
    # A field name in text: letters with optional - or _ between them.
    names = sorted(fields, key=len, reverse=True)
    alternatives = "|".join("[-_]?".join(re.escape(ch) for ch in name) for name in names)
    return re.compile(
        rf"""(?ix)
        (["']?\b(?:{alternatives})\b["']?\s*[:=]\s*)          # "key": / key= / key:
        (?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,;}}\]]+)        # the value
        """
    )


_PATTERNS: dict[frozenset[str], re.Pattern[str] | None] = {}


def _normalize_text(text: str, fields: frozenset[str]) -> str:
    pattern = _PATTERNS.get(fields)
    if pattern is None and fields not in _PATTERNS:
        pattern = _PATTERNS[fields] = _text_pattern(fields)
    if pattern is not None:
        text = pattern.sub(lambda m: m.group(1) + "<volatile>", text)
    text = _ISO_DATETIME.sub("<datetime>", text)
    text = _DURATION.sub(lambda m: f"{m.group(1)}{m.group(2)}<duration>", text)
    text = _BARE_DURATION.sub("<duration>", text)
    return _SESSION_COUNTER.sub(lambda m: f"<n>{m.group(2)}{m.group(3)}", text)


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
    fields = _fields(volatile_fields)
    if isinstance(result, (bytes, bytearray, memoryview)):
        result = _decode(result)
        if isinstance(result, bytes):
            return result
    if isinstance(result, str):
        return _normalize_text(result, fields)
    return _strip_value(result, fields)


def result_text(result: Any) -> str:
    """The canonical text of a (normalised) result: strings as they are, bytes
    that are not UTF-8 as ``bytes:<hex sha256>``, JSON-like values as
    canonical JSON (SPEC §4), anything else through sorted-key ``json.dumps``
    with ``repr`` for unknown objects."""
    if isinstance(result, str):
        return result
    if isinstance(result, (bytes, bytearray, memoryview)):
        decoded = _decode(result)
        if isinstance(decoded, str):
            return decoded
        return "bytes:" + hashlib.sha256(decoded).hexdigest()
    try:
        return identity.canonical_json(result, name="result")
    except (TypeError, ValueError):
        return json.dumps(result, sort_keys=True, ensure_ascii=False, default=repr)


def result_digest(result: Any, *, error: bool = False, volatile_fields: Iterable[str] | None = DEFAULT_VOLATILE_FIELDS) -> str:
    """The result hash of SPEC §5.2: sha256 hex over (error flag, canonical content).

    ``volatile_fields=None`` hashes the result as it is (no normalisation).

    Examples
    --------
    >>> a = result_digest('{"code": 1, "request_id": "a"}')
    >>> a == result_digest('{"code": 1, "request_id": "b"}')
    True
    >>> a == result_digest('{"code": 1, "request_id": "a"}', error=True)
    False
    """
    value = result if volatile_fields is None else normalize_result(result, volatile_fields)
    text = result_text(value)
    payload = ("1\n" if error else "0\n") + text
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def result_lines(result: Any) -> frozenset[str]:
    """The set of non-empty, stripped lines of a result (D2's line set), at
    most 4096 of them.  JSON-like values are laid out one member per line."""
    if isinstance(result, (str, bytes, bytearray, memoryview)):
        text = result_text(result)
    else:
        try:
            text = json.dumps(result, sort_keys=True, indent=1, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):
            text = repr(result)
    lines: set[str] = set()
    for line in text.splitlines():
        line = line.strip()
        if line:
            lines.add(line)
            if len(lines) >= _MAX_LINES:
                break
    return frozenset(lines)


def summarize_result(result: Any, *, max_lines: int = 3, max_chars: int = 240) -> str:
    """A short, redacted summary of a result for intervention texts (seed 001 I2):
    its first non-empty lines joined with `` | ``, capped at ``max_chars``
    characters with ``…``; ``(empty result)`` when there is nothing."""
    text = result_text(result)
    parts: list[str] = []
    size = 0
    more = False
    for line in text.splitlines():
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
    if len(summary) > max_chars:
        summary, more = summary[: max_chars - 1], True
    return redact_secrets(summary) + ("…" if more else "")
