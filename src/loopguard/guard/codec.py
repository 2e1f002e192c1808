"""A :class:`~loopguard.guard.state.SessionState` as bytes, for a store shared between replicas
(:class:`loopguard.RedisStore`): versioned, compact and bounded, and never an argument, a result's
text or a secret.

What is kept: call keys and result hashes (SHA-256 hex, as the guard computes them), the 64-bit
:func:`~loopguard.guard.state.stable_hash` values of lines, words and paths, counts, tool names,
language codes, clock readings (seconds), the host's call ids (``str`` or ``int``; others are
not kept) and the action, kind, rule, tool, index and evidence (numbers and hash prefixes) of a
decision remembered for a call id.  What is not: the arguments of the call in flight (an
``after_call`` on another replica hashes its arguments again), the start of a key's last result
(a denial decided from stored state says the result is in the conversation instead of
quoting it: :data:`~loopguard.guard.state.HEAD_NOT_KEPT`) and a remembered
decision's reason (a fixed text replaces it).

The encoding is JSON (a list, one slot per field) compressed with :mod:`zlib`; sets of 64-bit
hashes are packed as base64 of little-endian ``int64``.  :data:`FORMAT` is its version: a blob of
another version is refused (:func:`load` raises ``ValueError``) and the session starts afresh.
"""

from __future__ import annotations

import base64
import json
import zlib
from array import array
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from .decisions import Decision
from .state import HEAD_NOT_KEPT, BoundedTable, KeyState, SessionState, stable_hash

__all__ = ["FORMAT", "Limits", "dump", "load"]

#: the encoding's version (the first slot of every blob)
FORMAT = 1

#: the :class:`~loopguard.guard.state.KeyState` fields kept, in its order (``tool`` first): all
#: but ``head``, the start of the key's last result (text is never stored); a new field changes
#: the encoding (bump :data:`FORMAT`)
_KEY_FIELDS = tuple(name for name in KeyState.__slots__ if name != "head")
_REPLAYED = "[loopguard] This call was already decided ({action}); it is not run again."


class Limits:
    """How much of a session a shared store keeps (past these, the oldest entries go first).

    Parameters
    ----------
    max_bytes : int
        The most bytes one session's blob may take (default 28,000: with the allocator's size
        classes and the hash's own fields Redis's ``MEMORY USAGE`` of the key stays within 32 KiB); :func:`dump` halves the
        longest tables until the blob fits.
    keys : int
        Call keys with ``repeat`` state (default 128; the in-memory guard keeps
        ``max_keys_per_session``, 1024).
    seen : int
        (call key, result) pairs remembered as seen (default 1024; in memory: 4096).
    drift_lines : int
        Line hashes of recent results for ``drift`` (default 1024; in memory: 1 MiB of them).
    """

    __slots__ = ("max_bytes", "keys", "seen", "drift_lines")

    def __init__(self, max_bytes: int = 28_000, keys: int = 128, seen: int = 1024, drift_lines: int = 1024) -> None:
        for name, value in (("max_bytes", max_bytes), ("keys", keys), ("seen", seen), ("drift_lines", drift_lines)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.max_bytes, self.keys, self.seen, self.drift_lines = max_bytes, keys, seen, drift_lines


def _pack(hashes: Iterable[int]) -> str:
    return base64.b64encode(array("q", hashes).tobytes()).decode("ascii")


def _unpack(text: str) -> frozenset[int]:
    values = array("q")
    values.frombytes(base64.b64decode(text))
    return frozenset(values)


def _last(items: list[Any], n: int) -> list[Any]:
    """The last ``n`` items (at least one)."""
    n = max(n, 1)
    return items[-n:] if len(items) > n else items


def _drift(recent: Iterable[tuple[str, str, frozenset[int], int]], lines: int) -> list[Any]:
    """The newest recent results whose line hashes fit in ``lines``."""
    out: list[Any] = []
    for key, tool, hashes, size in reversed(list(recent)):
        lines -= len(hashes)
        if lines < 0:
            break
        out.append([key, tool, _pack(hashes), size])
    return out[::-1]


def _call_ids(table: BoundedTable[Hashable, tuple[str, int, Decision | None]]) -> list[Any]:
    out = []
    for call_id, (key, index, d) in table.items():
        if isinstance(call_id, (str, int)) and not isinstance(call_id, bool):
            said = None if d is None else [d.action, d.kind, d.rule, d.tool, d.call_index, dict(d.evidence)]
            out.append([call_id, key, index, said])
    return out


def _fields(s: SessionState, lim: Limits, shrink: int) -> list[Any]:
    keys = _last([[k, *(getattr(v, f) for f in _KEY_FIELDS)] for k, v in s.keys.items()], lim.keys >> shrink)
    reworded = [[t, _pack(w), k, d, n] for t, (w, k, d, n) in _last(list(s.reworded.items()), 64 >> shrink)]
    watch = s.watch
    return [
        FORMAT,
        keys,
        _pack(_last(list(s.seen), lim.seen >> shrink)),
        _drift(s.recent, lim.drift_lines >> shrink),
        [s.epoch, s.no_new, s.breaker, s.breaker_index, s.calls, s.executions, s.pending, s.drift_at],
        [s.changes, s.new_changes, s.replay, s.signature, s.stalled, s.last_progress, s.lang],
        [list(h) for h in _last(list(s.history), len(s.history) >> shrink)],
        sorted(s.cycle_noticed),
        None if watch is None else [watch[0], watch[1], _pack(watch[2]), _pack(watch[3]), watch[4]],
        sorted(s.blocked)[: max(lim.keys >> shrink, 1)],
        [s.streak.last, s.streak.count, s.streak.result],
        [list(x) for x in s.strikes],
        _last(_call_ids(s.call_ids), 256 >> shrink),
        reworded,
        [[d, _pack(edge)] for d, edge in _last(list(s.frame_hist), 16 >> min(shrink, 4))],
    ]


def dump(s: SessionState, limits: Limits | None = None) -> bytes:
    """``s`` as bytes (at most ``limits.max_bytes``; see :class:`Limits`)."""
    lim = limits or Limits()
    for shrink in range(12):
        blob = zlib.compress(json.dumps(_fields(s, lim, shrink), separators=(",", ":"), default=str).encode(), 1)
        if len(blob) <= lim.max_bytes:
            return blob
    raise ValueError("session state does not fit in max_bytes")  # pragma: no cover - 12 halvings


def _key_state(row: list[Any]) -> tuple[str, KeyState]:
    k = KeyState(row[1])
    for name, value in zip(_KEY_FIELDS[1:], row[2:]):
        setattr(k, name, value)
    k.head = HEAD_NOT_KEPT
    return row[0], k


def _decision(said: list[Any] | None) -> Decision | None:
    if said is None:
        return None
    action, kind, rule, tool, index, evidence = said
    return Decision(action, kind, _REPLAYED.format(action=action), rule, tool, index, evidence)


def load(blob: bytes, max_keys: int, h: Callable[[str], int] = stable_hash) -> SessionState:
    """The session :func:`dump` wrote.

    Raises
    ------
    ValueError
        for a blob that is not this version's encoding (``zlib.error`` and JSON errors included).
    """
    try:
        f = json.loads(zlib.decompress(blob))
    except (zlib.error, ValueError) as exc:
        raise ValueError("not a loopguard session state") from exc
    if not isinstance(f, list) or not f or f[0] != FORMAT:
        raise ValueError(f"session state format {f[0] if isinstance(f, list) and f else '?'} is not {FORMAT}")
    try:
        return _state(f, max_keys, h)
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise ValueError(f"a malformed session state of format {FORMAT}") from exc


def _state(f: list[Any], max_keys: int, h: Callable[[str], int]) -> SessionState:
    s = SessionState(0.0, max_keys, h)
    s.keys.update(_key_state(row) for row in f[1])
    s.keys.trim()
    s.seen.update((x, None) for x in array("q", base64.b64decode(f[2])))
    s.recent = deque((k, t, _unpack(p), n) for k, t, p, n in f[3])
    s.recent_bytes = sum(x[3] for x in s.recent)
    (s.epoch, s.no_new, s.breaker, s.breaker_index, s.calls, s.executions, s.pending, s.drift_at) = f[4]
    (s.changes, s.new_changes, s.replay, s.signature, s.stalled, s.last_progress, s.lang) = f[5]
    s.history = deque(tuple(x) for x in f[6])
    s.cycle_noticed = {(a, b) for a, b in f[7]}
    w = f[8]
    s.watch = None if w is None else (w[0], w[1], _unpack(w[2]), _unpack(w[3]), w[4])
    s.blocked = set(f[9])
    s.streak.last, s.streak.count, s.streak.result = f[10]
    s.strikes = deque((t, kind) for t, kind in f[11])
    s.call_ids.update((c, (k, i, _decision(d))) for c, k, i, d in f[12])
    s.reworded.update((t, (_unpack(w), k, d, n)) for t, w, k, d, n in f[13])
    for digest, edge in f[14]:
        hashes = _unpack(edge)
        s.frame_hist.append((digest, hashes))
        s.frame_digests.add(digest)
        for x in hashes:
            s.frame[x] = s.frame.get(x, 0) + 1
    return s
