"""The structured decision log: one :mod:`logging` record per decision and detection.

Records go to the ``loopguard.decisions`` logger (:data:`DECISION_LOGGER`, a child of
``loopguard``, so a handler on ``loopguard`` sees them too) with their fields in
``record.loopguard`` (a ``dict``; ``extra={"loopguard": {...}}``).  The fields (``docs/metrics.md``):

``time``
    ISO 8601 UTC with milliseconds (``"2026-12-03T14:25:10.123Z"``).
``event``
    ``"tool_call"`` (``ToolGuard.before_call``), ``"tool_result"`` (``after_call``),
    ``"stall"``, ``"strike"``, ``"text_loop"`` (a session's text detection that acts),
    ``"stall_nudge"``, ``"empty_turn"``, ``"stream_cut"`` (a :class:`~loopguard.StreamGuard`
    stop), ``"brake"`` (:meth:`LoopBrake.check <loopguard.LoopBrake.check>`), or, with
    ``SessionConfig(hint=...)`` (:mod:`loopguard.hints`), ``"hint"``, ``"hint_quota"`` and
    ``"hint_observation"`` (rule ``hint``; ``kind`` the outcome).
``surface``
    ``"tool_guard"``, ``"text"``, ``"stream"`` or ``"brake"``.
``action``
    ``allow`` / ``notice`` / ``deny`` / ``cancel`` / ``cut`` / ``observe``.
``rule``, ``kind``
    The rule and kind (``docs/rules.md``; ``"text_loop"``, ``"strikes"``, ``"brake"``; ``""`` for a plain allow).
``session``
    The session key (:func:`~loopguard.session_key`), or ``"h:"`` + 16 hex of its keyed
    BLAKE2b hash when hashing is configured.
``tool``, ``channel``, ``call_index``
    The tool name (through :func:`~loopguard.terminal.printable`; ``""`` when none),
    ``"tool"`` / ``"reasoning"`` / ``"text"``, the 0-based call index (-1 when none).
``hash``
    The first 12 hex digits of the call or result hash, ``""`` when none.
``evidence``
    Numbers only (``int`` / ``float`` / ``bool``): never a string taken from arguments,
    results or model text.
``replica``
    The replica id (default ``"<hostname>-<pid>"``).

Levels: ``deny`` / ``cancel`` / ``cut`` WARNING, ``notice`` / ``observe`` INFO, ``allow``
DEBUG.  Records are built only when the logger is enabled for their level (or metrics or
tracing are on): with nothing configured an allow costs one flag read.  Allows are recorded
when :func:`configure_decision_log` set DEBUG, or metrics or tracing are on; after setting the
logger's level to DEBUG yourself, call :func:`refresh`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import platform
import secrets
import time
from collections.abc import Mapping
from typing import IO, Any

from ..identity import session_key
from ..terminal import printable, shown_name

__all__ = [
    "DECISION_LOGGER",
    "JsonLinesFormatter",
    "configure_decision_log",
    "decision_fields",
    "refresh",
    "reset",
]

#: The name of the decision log's logger.
DECISION_LOGGER = "loopguard.decisions"
logger = logging.getLogger(DECISION_LOGGER)

LEVELS: dict[str, int] = {
    "allow": logging.DEBUG,
    "notice": logging.INFO,
    "observe": logging.INFO,
    "deny": logging.WARNING,
    "cancel": logging.WARNING,
    "cut": logging.WARNING,
}


class _Settings:
    """Process-wide settings: the replica id, the session-id hash key, the sinks that are on."""

    __slots__ = ("replica", "key", "handlers", "metrics", "tracing")

    def __init__(self) -> None:
        self.replica: str | None = None
        self.key: bytes | None = None
        self.handlers: list[logging.Handler] = []
        self.metrics: Any = None  # loopguard.observe.metrics._Metrics when enabled
        self.tracing: Any = None  # opentelemetry.trace when enabled


SETTINGS = _Settings()
#: True while metrics or tracing are on: every decision is then observed, allows included.
ON = False
#: True while allows are recorded: :data:`ON`, or the decision logger enabled for DEBUG when
#: :func:`configure_decision_log` or :func:`refresh` last looked (one flag read per allow).
EAGER = False


def refresh() -> None:
    """Recompute :data:`ON` and :data:`EAGER`: call it after setting the ``loopguard.decisions``
    logger's level to DEBUG yourself (``configure_decision_log(level=logging.DEBUG)`` does)."""
    global ON, EAGER
    ON = SETTINGS.metrics is not None or SETTINGS.tracing is not None
    EAGER = ON or logger.isEnabledFor(logging.DEBUG)


_HOST: list[tuple[int, str]] = []  # (pid, "<hostname>-<pid>") of the last default id


def replica_id() -> str:
    """The configured replica id, else ``"<hostname>-<pid>"`` (the host name from
    :func:`platform.node`, no socket call; computed again after a fork)."""
    if SETTINGS.replica is not None:
        return SETTINGS.replica
    pid = os.getpid()
    if not _HOST or _HOST[0][0] != pid:
        _HOST[:] = [(pid, f"{platform.node() or 'localhost'}-{pid}")]
    return _HOST[0][1]


class SessionLabel:
    """A session id as log lines show it (:func:`session_field`), worked out only when a line is
    formatted: ``logger.info("session %r: …", SessionLabel(sid))`` hides the id like the decision
    records do when session hashing is configured."""

    __slots__ = ("session_id",)

    def __init__(self, session_id: Any) -> None:
        self.session_id = session_id

    def __repr__(self) -> str:
        return repr(session_field(self.session_id))

    def __str__(self) -> str:
        return session_field(self.session_id)


def session_field(session_id: Any) -> str:
    """The ``session`` field: the session key, or its keyed hash when hashing is configured."""
    key = session_key(session_id)
    if SETTINGS.key is None:
        return printable(key)[:200]
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), key=SETTINGS.key, digest_size=8)
    return "h:" + digest.hexdigest()


def _numbers(evidence: Mapping[str, Any]) -> dict[str, int | float | bool]:
    return {str(k): v for k, v in evidence.items() if isinstance(v, (int, float, bool))}


def _hash_prefix(evidence: Mapping[str, Any]) -> str:
    for name in ("hash", "fingerprint"):
        value = evidence.get(name)
        if isinstance(value, str) and all(c in "0123456789abcdef" for c in value):
            return value[:12]
    return ""


def decision_fields(
    event: str,
    surface: str,
    action: str,
    session_id: Any,
    *,
    rule: str = "",
    kind: str | None = "",
    tool: str = "",
    channel: str = "tool",
    call_index: int = -1,
    evidence: Mapping[str, Any] | None = None,
    hash_prefix: str = "",
) -> dict[str, Any]:
    """One record's fields (see the module docstring); ``evidence`` keeps numbers only and
    gives ``hash`` (its ``hash`` or ``fingerprint`` hex, 12 digits) unless ``hash_prefix`` is given."""
    evidence = evidence or {}
    now = datetime.datetime.fromtimestamp(time.time(), datetime.timezone.utc)
    return {
        "time": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
        "event": event,
        "surface": surface,
        "action": action,
        "rule": rule,
        "kind": kind or "",
        "session": session_field(session_id),
        "tool": shown_name(tool, 200),  # redacted before its cut: commands end up in tool names
        "channel": channel,
        "call_index": call_index,
        "hash": hash_prefix[:12] or _hash_prefix(evidence),
        "evidence": _numbers(evidence),
        "replica": replica_id(),
    }


def message(fields: Mapping[str, Any]) -> str:
    """The record's one-line message (fields only: nothing from arguments, results or text)."""
    tool = f" tool {fields['tool']}" if fields["tool"] else ""
    call = f" call {fields['call_index']}" if fields["call_index"] >= 0 else ""
    digest = f" hash {fields['hash']}" if fields["hash"] else ""
    channel = f" on {fields['channel']}" if fields["channel"] != "tool" else ""
    resume = " (resume)" if fields["evidence"].get("resume") else ""
    what = fields["kind"] or fields["rule"] or fields["event"]
    head = f"{fields['action']} {what}{channel}:{tool}{call}{digest}"
    return f"{head} session {fields['session']} ({fields['event']}){resume}"


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per line, ASCII only (``ensure_ascii``).

    A decision record gives ``time``, ``level``, ``logger``, ``message`` and its fields
    (module docstring); any other record ``time``, ``level``, ``logger``, ``message`` and,
    with ``exc_info``, ``exception`` (the exception's class name only: its text may quote a
    value).
    """

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON (no newline inside)."""
        created = datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
        out: dict[str, Any] = {
            "time": created.strftime("%Y-%m-%dT%H:%M:%S.") + f"{created.microsecond // 1000:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "loopguard", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info and record.exc_info[0] is not None:
            out["exception"] = record.exc_info[0].__name__
        return json.dumps(out, ensure_ascii=True, separators=(",", ":"), default=str)


def configure_decision_log(
    target: str | os.PathLike[str] | IO[str],
    *,
    replica_id: str | None = None,
    hash_session_ids: bool | None = None,
    session_hash_key: bytes | str | None = None,
    level: int | None = None,
) -> logging.Handler:
    """Write the decision log as JSON Lines to a file or a text stream.

    The replica id, the session hashing and the level are settings of the process (of every
    handler, and of the session ids in loopguard's other log lines): a later call changes only
    the ones it is given, so adding a second handler keeps the first one's hashing.

    Parameters
    ----------
    target : path or text stream
        A path (appended to, UTF-8; the lines are ASCII) or an open text stream (``sys.stderr``).
    replica_id : str, optional
        The ``replica`` field (default ``"<hostname>-<pid>"``; ``None`` keeps the current one).
    hash_session_ids : bool, optional
        Log ``"h:"`` + 16 hex of a keyed BLAKE2b hash of each session key instead of the key, here
        and in the session ids of the other ``loopguard`` loggers (``None``, the default, keeps
        the current setting: off until a call turns it on; ``False`` turns it off).
    session_hash_key : bytes | str, optional
        The hash key; give every replica the same one so their records agree.  Default: a
        random key of this process (records of two processes then differ).
    level : int, optional
        The ``loopguard.decisions`` logger's level (``logging.DEBUG`` adds every allow;
        ``None`` keeps a level set before, else ``logging.INFO``).

    Returns
    -------
    logging.Handler
        The handler added to ``loopguard.decisions`` (remove it, or call :func:`reset`, to stop).

    Raises
    ------
    TypeError
        for a ``target`` that is neither a path nor a writable stream, or a ``replica_id`` or
        ``session_hash_key`` of the wrong type.
    """
    handler: logging.Handler
    if isinstance(target, (str, os.PathLike)):
        handler = logging.FileHandler(target, encoding="utf-8")
    elif callable(getattr(target, "write", None)):
        handler = logging.StreamHandler(target)
    else:
        raise TypeError(f"target must be a path or a text stream, not {type(target).__name__}")
    if replica_id is not None and not isinstance(replica_id, str):
        raise TypeError(f"replica_id must be a str, not {type(replica_id).__name__}")
    if session_hash_key is not None and not isinstance(session_hash_key, (bytes, str)):
        raise TypeError(f"session_hash_key must be bytes or str, not {type(session_hash_key).__name__}")
    if replica_id is not None:
        SETTINGS.replica = replica_id
    if hash_session_ids:
        key = session_hash_key if session_hash_key is not None else secrets.token_bytes(32)
        SETTINGS.key = hashlib.sha256(key.encode() if isinstance(key, str) else key).digest()
    elif hash_session_ids is not None:
        SETTINGS.key = None
    handler.setFormatter(JsonLinesFormatter())
    logger.addHandler(handler)
    if level is not None or logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO if level is None else level)
    SETTINGS.handlers.append(handler)
    refresh()
    return handler


def reset() -> None:
    """Undo every ``configure_decision_log``, ``enable_metrics`` and ``enable_tracing``:
    remove and close the handlers added, restore the logger's level, forget the replica id and
    the hash key, turn metrics and tracing off."""
    for handler in SETTINGS.handlers:
        logger.removeHandler(handler)
        handler.close()
    SETTINGS.handlers.clear()
    logger.setLevel(logging.NOTSET)
    SETTINGS.replica = SETTINGS.key = SETTINGS.metrics = SETTINGS.tracing = None
    global ON, EAGER
    ON = EAGER = False
