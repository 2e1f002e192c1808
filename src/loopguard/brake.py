"""The exact loop brake: deny the N-th identical tool call in a row (spec §5.1, seed 000).

An agent stuck in the most common way repeats one tool call byte for byte.
:class:`LoopBrake` keeps, per session, one slot -- the hash of the last call
and how many times in a row it was made -- and raises :class:`LoopBrakeError`
*before the tool body runs* for the call whose streak reaches ``max_repeats``.

Identity is exact: two calls are the same call when
``call_hash(tool, args)`` (spec §4, :mod:`loopguard.identity`) is equal, and
different otherwise.  There is no similarity judgement, no model call and no
threshold to tune besides ``max_repeats``.  A loop whose arguments change on
every call (a timestamp, a page cursor) and an alternation ``A, B, A, B`` are
not caught, by design (seed 000).

Arguments never appear in an error, its message, its ``repr``, its ``args``
or any log record: a denial names the tool, the streak, the limit, the first
12 hex digits of the call hash and the session only.  Logging uses the
standard :mod:`logging` module, logger ``loopguard.brake`` (``WARNING`` for a
denial, ``DEBUG`` for an allowed call).

>>> brake = LoopBrake(3)
>>> brake.check("search", {"q": "weather"}, session_id="s1")
1
>>> brake.check("search", '{"q": "weather"}', session_id="s1")
2
>>> try:
...     brake.check("search", {"q": "weather"}, session_id="s1")
... except LoopBrakeError as err:
...     print(err.code, err.count, err.max_repeats, len(err.hash_prefix))
LOOP_BRAKE 3 3 12
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import logging
import os
import re
import threading
import time
import types
from collections.abc import Callable, Hashable, Mapping, MutableMapping
from typing import Any, TypeVar, cast

from .errors import ConfigError
from .guard import shared
from .guard.shared import backoff
from .guard.state import BoundedTable
from .guard.streak import Streak
from .guard.wrap import accepts_keyword, is_async, split_call
from .identity import call_hash, session_key
from .observe import events, metrics
from .observe import log as obs_log
from .store import MemoryStore, RedisStore, StoreUnavailable
from .terminal import shown_name

__all__ = [
    "DEFAULT_MAX_REPEATS",
    "DEFAULT_MAX_SESSIONS",
    "ENV_MAX_REPEATS",
    "InvalidMaxRepeatsError",
    "LoopBrake",
    "LoopBrakeError",
    "LoopBrakeStoreError",
    "decorate_tool",
    "normalize_max_repeats",
    "resolve_max_repeats",
    "wrap_execute",
]

#: Seed 000's ``maxRepeats`` default: two identical calls run, the third is denied.
DEFAULT_MAX_REPEATS = 3
#: Sessions held before the least recently used one is forgotten (spec §5.1).
DEFAULT_MAX_SESSIONS = 100_000
#: Environment fallback for ``max_repeats``, read only when the config key is missing.
ENV_MAX_REPEATS = "LOOPGUARD_MAX_REPEATS"
#: Recent call ids remembered per session (the dedupe of two wrappers on one call).
CALL_ID_MEMORY = 64

_RULE = "an integer >= 1"
_INT_STRING = re.compile(r"[+]?[0-9]+")

logger = logging.getLogger("loopguard.brake")

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


# --------------------------------------------------------------------------- errors


class LoopBrakeError(Exception):
    """The call was denied before it ran: it would repeat the same call ``max_repeats`` times in a row.

    Raised (never returned) by :meth:`LoopBrake.check` and by braked tools
    (:func:`wrap_execute`, :func:`decorate_tool`).  The message has seed 000's
    shape::

        loop brake: tool "search" called 3 times in a row with identical arguments
        (call 9f2c1a7b3e04…, limit 3); the call was denied before it ran. Change the
        arguments, call a different tool, or stop.

    (one line; ``1 time`` when the count is 1).  The arguments are never part
    of the error: not of its message, its ``repr``, its ``args`` nor any
    attribute.

    Attributes
    ----------
    code : str
        Always ``"LOOP_BRAKE"``.
    tool_name : str
        The tool that was called.
    count : int
        Which consecutive identical call this was, counting this one.
    max_repeats : int
        The brake's limit.
    hash_prefix : str
        The first 12 hex digits of the call hash, and no more.
    session_id : str
        The session whose streak tripped (after :func:`~loopguard.identity.session_key`,
        so ``"default"`` when none was given).
    plugin : str
        Always ``"loopguard"`` (the seed's ``'dsh-loop-brake'``).

    Source: spec §5.1; seed 000 ("错误").
    """

    code = "LOOP_BRAKE"
    plugin = "loopguard"

    def __init__(self, *, tool_name: str, count: int, max_repeats: int, hash_prefix: str, session_id: str) -> None:
        self.tool_name = tool_name
        self.count = count
        self.max_repeats = max_repeats
        self.hash_prefix = hash_prefix[:12]
        self.session_id = session_id
        times = "time" if count == 1 else "times"
        quoted = f'"{shown_name(tool_name)}"'  # redacted, no control or bidi code point: it may be printed
        super().__init__(
            f"loop brake: tool {quoted} called {count} {times} in a row with identical arguments "
            f"(call {self.hash_prefix}…, limit {max_repeats}); the call was denied before it ran. "
            "Change the arguments, call a different tool, or stop."
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_loop_brake_error,
            (self.tool_name, self.count, self.max_repeats, self.hash_prefix, self.session_id),
        )


class LoopBrakeStoreError(LoopBrakeError):
    """The call was denied before it ran because the brake's shared store (Redis) could not be
    used and the brake was made with ``on_store_error="closed"``.

    A :class:`LoopBrakeError` (hosts that catch that one catch this one), with ``count`` 0 and the
    message::

        loop brake: the shared state store (Redis) is unavailable, so tool "search" was denied
        before it ran (call 9f2c1a7b3e04…, on_store_error="closed"). Try the call again shortly.

    Attributes are :class:`LoopBrakeError`'s, plus ``rule`` (always ``"store_unavailable"``);
    ``code`` is ``"LOOP_BRAKE_STORE_UNAVAILABLE"``.  No argument is part of it.
    """

    code = "LOOP_BRAKE_STORE_UNAVAILABLE"
    rule = "store_unavailable"

    def __init__(self, *, tool_name: str, count: int, max_repeats: int, hash_prefix: str, session_id: str) -> None:
        super().__init__(
            tool_name=tool_name, count=count, max_repeats=max_repeats, hash_prefix=hash_prefix, session_id=session_id
        )
        Exception.__init__(
            self,
            f'loop brake: the shared state store (Redis) is unavailable, so tool "{shown_name(tool_name)}" was '
            f'denied before it ran (call {self.hash_prefix}…, on_store_error="closed"). '
            "Try the call again shortly.",
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_store_error,
            (self.tool_name, self.count, self.max_repeats, self.hash_prefix, self.session_id),
        )


def _rebuild_store_error(
    tool_name: str, count: int, max_repeats: int, hash_prefix: str, session_id: str
) -> LoopBrakeStoreError:
    return LoopBrakeStoreError(
        tool_name=tool_name, count=count, max_repeats=max_repeats, hash_prefix=hash_prefix, session_id=session_id
    )


#: compare-and-set attempts of a shared count before it is taken as unavailable
_TRIES = 32


def _shared_check(
    store: RedisStore, key: str, digest: str, call_id: Hashable | None, limit: int
) -> tuple[int, int, bool] | None:
    """:meth:`LoopBrake.check`'s count against a shared store: (count, the count it was denied at
    or 0, the call id was seen before); compare-and-set, again on a conflict; ``None`` when the
    store cannot be used."""
    for _ in range(_TRIES):
        try:
            blob, version = store.get(key, "lb")
            slot, result = _count(blob, digest, call_id, limit)
            if slot is None or store.put(key, slot, version, "lb"):
                return result
        except StoreUnavailable:
            return None
    return None


async def _ashared_check(
    store: RedisStore, key: str, digest: str, call_id: Hashable | None, limit: int
) -> tuple[int, int, bool] | None:
    """:func:`_shared_check` with the store's async twins (``redis.asyncio``)."""
    for attempt in range(_TRIES):
        if attempt:
            await backoff(attempt)
        try:
            blob, version = await store.aget(key, "lb")
            slot, result = _count(blob, digest, call_id, limit)
            if slot is None or await store.aput(key, slot, version, "lb"):
                return result
        except StoreUnavailable:
            return None
    return None


def _count(
    blob: bytes | None, digest: str, call_id: Hashable | None, limit: int
) -> tuple[bytes | None, tuple[int, int, bool]]:
    """One count on a stored slot: (the new slot to write or ``None`` for a call id seen before,
    (count, the count it was denied at or 0, the call id was seen before))."""
    last, count, seen = _slot(blob)
    if call_id is not None and seen.get(call_id, (None, 0))[0] == digest:
        at = seen[call_id][1]
        return None, ((at or count), at, True)
    count = count + 1 if digest == last else 1
    denied_at = count if count >= limit else 0
    if isinstance(call_id, (str, int)) and not isinstance(call_id, bool):
        seen[call_id] = (digest, denied_at)
    ids = [[c, d, at] for c, (d, at) in list(seen.items())[-CALL_ID_MEMORY:]]
    return json.dumps([digest, count, ids]).encode(), (count, denied_at, False)


def _slot(blob: bytes | None) -> tuple[str | None, int, dict[Any, tuple[str, int]]]:
    """A stored slot: (last call hash, streak, call id -> (hash, denied at)); a new one for none
    or an unreadable one."""
    if blob is not None:
        try:
            last, count, ids = json.loads(blob)
            return last, int(count), {cid: (d, int(at)) for cid, d, at in ids}
        except (ValueError, TypeError):
            logger.warning("loop brake: unreadable slot in the store; starting it afresh")
    return None, 0, {}


def _rebuild_loop_brake_error(
    tool_name: str, count: int, max_repeats: int, hash_prefix: str, session_id: str
) -> LoopBrakeError:
    return LoopBrakeError(
        tool_name=tool_name,
        count=count,
        max_repeats=max_repeats,
        hash_prefix=hash_prefix,
        session_id=session_id,
    )


class InvalidMaxRepeatsError(ConfigError):
    """``max_repeats`` is not an integer >= 1 (a :class:`ValueError`, via :class:`~loopguard.ConfigError`).

    Raised at construction (or at resolution from the environment), never at
    the first call: a brake with other teeth than intended must be found
    before a loop burns tokens (seed 000, "配置").

    Attributes
    ----------
    key : str
        Where the value came from: ``"max_repeats"`` (the config key) or
        ``"LOOPGUARD_MAX_REPEATS"`` (the environment variable).
    value : Any
        The rejected value.
    rule : str
        ``"an integer >= 1"``.
    """

    def __init__(self, value: Any, *, source: str = "max_repeats") -> None:
        owner = "environment" if source == ENV_MAX_REPEATS else "LoopBrake"
        super().__init__(source, value, _RULE, owner=owner)
        self.source = source


# --------------------------------------------------------------------------- config


def normalize_max_repeats(value: Any, *, source: str = "max_repeats") -> int:
    """Validate a ``max_repeats`` value and return it as an ``int``.

    Parameters
    ----------
    value : Any
        An ``int`` >= 1, or a string holding one (as read from the
        environment; surrounding whitespace and a leading ``+`` are allowed,
        e.g. ``"4"``).
    source : str, default ``"max_repeats"``
        The name the error reports (the config key or the environment
        variable).

    Returns
    -------
    int
        The limit, >= 1.

    Raises
    ------
    InvalidMaxRepeatsError
        For anything else: ``0``, ``-1``, ``1.5``, ``3.0``, ``True``/``False``
        (a ``bool`` is not a count), ``"3x"``, ``""``, ``None``.

    Notes
    -----
    Source: spec §5.1 ("int >= 1; bool, floats, strings that are not
    integers → InvalidMaxRepeatsError at construction"); seed 000 ("配置").

    Examples
    --------
    >>> normalize_max_repeats("4")
    4
    """
    if isinstance(value, bool):
        raise InvalidMaxRepeatsError(value, source=source)
    if isinstance(value, int):
        number = int(value)
    elif isinstance(value, str) and _INT_STRING.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        raise InvalidMaxRepeatsError(value, source=source)
    if number < 1:
        raise InvalidMaxRepeatsError(value, source=source)
    return number


def resolve_max_repeats(config_value: Any = None, env: Mapping[str, str] | None = None) -> int:
    """The effective ``max_repeats``: the config key, else ``LOOPGUARD_MAX_REPEATS``, else 3.

    Parameters
    ----------
    config_value : Any, default None
        The ``max_repeats`` config key; ``None`` means the key is missing.
        When given it wins, and the environment is not read at all (the
        config is what the deployment declared; seed 000).
    env : Mapping[str, str] or None, default None
        Where to read ``LOOPGUARD_MAX_REPEATS``; ``None`` means
        :data:`os.environ`.  An unset or empty (whitespace-only) variable
        counts as missing.

    Returns
    -------
    int
        The limit, >= 1 (default :data:`DEFAULT_MAX_REPEATS`, 3).

    Raises
    ------
    InvalidMaxRepeatsError
        When the config value is invalid (``key == "max_repeats"``), or when
        it is missing and the environment value is invalid
        (``key == "LOOPGUARD_MAX_REPEATS"``; the message names the variable).

    Notes
    -----
    Source: spec §5.1 ("Env fallback LOOPGUARD_MAX_REPEATS read only when the
    key is missing; explicit config wins"); seed 000 (``DSH_LOOP_BRAKE_MAX_REPEATS``).

    Examples
    --------
    >>> resolve_max_repeats(None, {"LOOPGUARD_MAX_REPEATS": "5"})
    5
    >>> resolve_max_repeats(2, {"LOOPGUARD_MAX_REPEATS": "oops"})
    2
    """
    if config_value is not None:
        return normalize_max_repeats(config_value, source="max_repeats")
    source = os.environ if env is None else env
    raw = source.get(ENV_MAX_REPEATS)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return DEFAULT_MAX_REPEATS
    return normalize_max_repeats(raw, source=ENV_MAX_REPEATS)


# --------------------------------------------------------------------------- the brake


class _Slot(Streak):
    """One session's state: the streak of its last call hash, and its recent call ids."""

    __slots__ = ("call_ids",)

    def __init__(self) -> None:
        super().__init__()
        # call id -> (hash, 0 when that call was allowed, else the count it was denied at);
        # created on the first call id (most hosts never send one), capped.
        self.call_ids: BoundedTable[Hashable, tuple[str, int]] | None = None


class LoopBrake:
    """Per-session streak of identical consecutive tool calls; denies the N-th (spec §5.1, seed 000).

    Parameters
    ----------
    max_repeats : int or str or None, default None
        Identical calls in a row a session may make, counting the denied
        one: at 3, two identical calls run and the third is denied; at 1
        every call is denied (a debugging setting).  Validated by
        :func:`normalize_max_repeats` (integer strings such as ``"4"`` are
        accepted).  ``None`` (the key missing) reads ``LOOPGUARD_MAX_REPEATS``
        and defaults to 3 (:func:`resolve_max_repeats`).
    max_sessions : int, default 100_000
        Sessions held; past it the least recently checked session is
        forgotten (LRU), so memory is bounded by one slot per session
        whatever the number of sessions or calls.
    store : MemoryStore | RedisStore | None, default None
        Where the slots are kept: this process (``None``, :class:`~loopguard.MemoryStore`)
        or Redis, shared by replicas (:class:`~loopguard.RedisStore`: a compare-and-set per
        call; the slot holds the call hash, the streak and the last 64 ``str``/``int`` call
        ids).  Without Redis (down, slow) the brake fails open: the call is allowed as the
        first of its streak, counted in ``store.errors``; no store exception is raised.
    on_store_error : ``"open"`` | ``"closed"``, default ``"open"``
        Without the shared store: ``"open"`` allows the call (above); ``"closed"`` denies it,
        raising :class:`LoopBrakeStoreError` (a :class:`LoopBrakeError`, ``count`` 0), also
        counted in ``store.errors``.  Ignored with the in-memory store.

    Raises
    ------
    InvalidMaxRepeatsError
        ``max_repeats`` is not an integer >= 1 (``0``, ``-1``, ``1.5``,
        ``True``, ``"3x"``).
    ConfigError
        ``max_sessions`` is not an integer >= 1.
    TypeError
        ``store`` is not a store.
    ValueError
        ``on_store_error`` is not ``"open"`` or ``"closed"``.

    Notes
    -----
    Counting is exactly the seed's: each session keeps one slot (current
    hash + streak).  A call with the same hash as the slot increments the
    streak, any other call sets it to 1 (``A, A`` → 2, then ``B`` → 1, then
    ``A`` → 1, not 3).  The call whose streak reaches ``max_repeats`` is
    denied, and so is every further identical call (the denied call counts:
    the streak keeps growing until the arguments change).  Sessions never
    share counts.  Hashing is :func:`loopguard.identity.call_hash`: object
    keys are sorted (``{"a":1,"b":2}`` equals ``{"b":2,"a":1}``) and nothing
    else is normalised (``"weather"`` differs from ``"weather "``); a JSON
    string is parsed first.

    A ``call_id`` already seen in the session (the same host call seen by two
    wrappers) is not counted again: it returns the current streak if it was
    allowed, and is denied again if it was denied.  The last
    :data:`CALL_ID_MEMORY` (64) call ids of each session are remembered.

    All methods are thread-safe (one :class:`threading.Lock`; the hash is
    computed outside it).  Session ids go through
    :func:`~loopguard.identity.session_key` (``None`` → ``"default"``).

    Examples
    --------
    >>> brake = LoopBrake(max_repeats=2)
    >>> brake.check("read", {"path": "a"}), brake.check("read", {"path": "b"})
    (1, 1)
    >>> brake.streak()
    1
    """

    def __init__(
        self,
        max_repeats: int | str | None = None,
        *,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        store: MemoryStore | RedisStore | None = None,
        on_store_error: str = "open",
    ) -> None:
        # the key wins; only when it is missing (None) is LOOPGUARD_MAX_REPEATS read (spec §5.1)
        self.max_repeats: int = resolve_max_repeats(max_repeats)
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise ConfigError("max_sessions", max_sessions, _RULE, owner="LoopBrake")
        self.max_sessions: int = max_sessions
        self._sessions: BoundedTable[str, _Slot] = BoundedTable(max_sessions)
        self._lock = threading.Lock()
        if store is not None and not isinstance(store, (MemoryStore, RedisStore)):
            raise TypeError(f"store must be a MemoryStore or a RedisStore, not {type(store).__name__}")
        if on_store_error not in ("open", "closed"):
            raise ValueError(f"on_store_error must be 'open' or 'closed', not {on_store_error!r}")
        self._remote = store if isinstance(store, RedisStore) else None
        self._closed = on_store_error == "closed"

    def __repr__(self) -> str:
        return f"LoopBrake(max_repeats={self.max_repeats}, max_sessions={self.max_sessions}, sessions={len(self)})"

    def __len__(self) -> int:
        """Sessions currently held (at most ``max_sessions``)."""
        return len(self._sessions)

    def check(self, tool: str, args: Any, *, session_id: Any = None, call_id: Hashable | None = None) -> int:
        """Count one call; raise :class:`LoopBrakeError` if it must not run.

        Call this before running the tool body.

        Parameters
        ----------
        tool : str
            The tool name.
        args : Any
            The arguments: a JSON-compatible value, or a JSON string (parsed
            first; a string that is not JSON is hashed as that string value).
        session_id : Any, default None
            The session; ``None`` → ``"default"``
            (:func:`~loopguard.identity.session_key`).
        call_id : Hashable or None, default None
            The host's id of this call.  A call id already seen in this
            session is not counted again.

        Returns
        -------
        int
            The streak including this call (1 for a new call), always below
            ``max_repeats``.

        Raises
        ------
        LoopBrakeError
            The streak reached ``max_repeats``: the call was denied and must
            not run.
        TypeError, ValueError
            The arguments cannot be hashed (raised by
            :func:`~loopguard.identity.call_hash`, naming the path of the bad
            value); the call is not counted.
        TypeError
            ``call_id`` is not hashable (e.g. a list); raised before anything is
            counted.
        """
        started, digest, key = self._start(tool, args, session_id, call_id)
        limit = self.max_repeats
        if self._remote is not None:
            counted = _shared_check(self._remote, key, digest, call_id, limit)
            count, denied_at, repeated = self._unshared(tool, key, digest) if counted is None else counted
        else:
            count, denied_at, repeated = self._local(key, digest, call_id)
        return self._decided(tool, key, digest, count, denied_at, repeated, started)

    async def acheck(self, tool: str, args: Any, *, session_id: Any = None, call_id: Hashable | None = None) -> int:
        """:meth:`check` for async hosts: with a :class:`~loopguard.RedisStore` the slot is read and
        written with ``redis.asyncio`` (the event loop is never blocked on Redis); with the
        in-memory store it is :meth:`check`.  Same parameters, returns, fail-open or fail-closed
        behaviour and errors."""
        if self._remote is None:
            return self.check(tool, args, session_id=session_id, call_id=call_id)
        started, digest, key = self._start(tool, args, session_id, call_id)
        counted = await _ashared_check(self._remote, key, digest, call_id, self.max_repeats)
        count, denied_at, repeated = self._unshared(tool, key, digest) if counted is None else counted
        return self._decided(tool, key, digest, count, denied_at, repeated, started)

    def _start(self, tool: str, args: Any, session_id: Any, call_id: Hashable | None) -> tuple[float, str, str]:
        """(start time, call hash, session key) of a call; raises as :meth:`check` before counting."""
        if call_id is not None:
            try:
                hash(call_id)
            except TypeError:
                raise TypeError(
                    f"LoopBrake.check: call_id must be hashable (a str or int), not {type(call_id).__name__}"
                ) from None
        started = time.perf_counter() if obs_log.ON else 0.0
        return started, call_hash(tool, args), session_key(session_id)

    def _local(self, key: str, digest: str, call_id: Hashable | None) -> tuple[int, int, bool]:
        """The count in this process: (count, the count it was denied at or 0, call id seen before)."""
        limit = self.max_repeats
        with self._lock:
            slot = self._sessions.use(key, _Slot)
            seen = slot.call_ids
            if call_id is not None and seen is not None and seen.get(call_id, (None, 0))[0] == digest:
                denied_at = seen[call_id][1]
                return (denied_at if denied_at else slot.count), denied_at, True
            count = slot.push(digest)
            denied_at = count if count >= limit else 0
            if call_id is not None:
                if seen is None:
                    seen = slot.call_ids = BoundedTable(CALL_ID_MEMORY)
                seen.add(call_id, (digest, denied_at))
            return count, denied_at, False

    def _unshared(self, tool: str, key: str, digest: str) -> tuple[int, int, bool]:
        """Without the shared store: allow as the first of a streak (fail open), or raise
        :class:`LoopBrakeStoreError` (``on_store_error="closed"``)."""
        if not self._closed:
            metrics.fail_open()  # the call is allowed: the store failed
            return 1, 0, False
        events.brake(key, tool, digest, 0, self.max_repeats, True, 0.0, "store_unavailable")
        logger.info("loop brake denied tool %s: the shared state store is unavailable", shown_name(tool))
        raise LoopBrakeStoreError(
            tool_name=tool, count=0, max_repeats=self.max_repeats, hash_prefix=digest[:12], session_id=key
        )

    def _decided(
        self, tool: str, key: str, digest: str, count: int, denied_at: int, repeated: bool, started: float
    ) -> int:
        """Record and log the count; raise :class:`LoopBrakeError` for a denied call, else return it."""
        limit = self.max_repeats
        if not repeated and (denied_at or obs_log.EAGER):
            events.brake(key, tool, digest, count, limit, bool(denied_at), started)
        level = logging.INFO if denied_at else logging.DEBUG  # the decision record is the WARNING
        if logger.isEnabledFor(level):
            logger.log(
                level,
                "loop brake %s tool %s: call %s…, %d in a row, limit %d, session %s%s",
                "denied" if denied_at else "allowed",
                shown_name(tool),
                digest[:12],
                count,
                limit,
                obs_log.session_field(key),
                " (call id seen before)" if repeated else "",
            )
        if denied_at:
            raise LoopBrakeError(
                tool_name=tool, count=count, max_repeats=limit, hash_prefix=digest[:12], session_id=key
            )
        return count

    def streak(self, session_id: Any = None) -> int:
        """The session's current streak (0 for a session not held); does not touch LRU order.

        Parameters
        ----------
        session_id : Any, default None
            The session; ``None`` → ``"default"``.
        """
        key = session_key(session_id)
        if self._remote is not None:
            try:
                blob = self._remote.get(key, "lb")[0]
            except StoreUnavailable:
                return 0
            return 0 if blob is None else int(json.loads(blob)[1])
        with self._lock:
            slot = self._sessions.get(key)
            return 0 if slot is None else slot.count

    def reset(self, session_id: Any = None) -> None:
        """Forget streaks: of one session, or of all sessions when ``session_id`` is ``None``.

        Parameters
        ----------
        session_id : Any, default None
            The session to forget; ``None`` forgets every session (to forget
            only the default session, pass ``"default"``).  With a shared store: its slots
            under its prefix (nothing happens when the store is unavailable).
        """
        shared.forget(self._remote, self._sessions, self._lock, session_id, "lb")

    def dispose(self) -> None:
        """Forget every streak and call id (seed 000: a reloaded brake never remembers the last run).

        The brake stays usable afterwards, as if new: its first call runs.
        """
        self.reset(None)


# --------------------------------------------------------------------------- wrappers


def wrap_execute(fn: F, brake: LoopBrake, *, tool: str, session_id: Any = None) -> F:
    """Wrap a tool's execute so that ``brake.check`` runs before the body (spec §5.1, seed 000).

    Parameters
    ----------
    fn : callable
        The tool body, a plain or ``async def`` callable.  For an async one
        the wrapper is itself ``async def`` and checks when awaited, before
        the body starts.
    brake : LoopBrake
        The brake that counts the calls.
    tool : str
        The tool name hashed with the arguments.
    session_id : Any, default None
        The session used when a call does not pass a ``session_id`` keyword
        (``None`` → ``"default"``).

    Returns
    -------
    callable
        A wrapper with ``fn``'s :func:`functools.wraps` metadata
        (``__name__``, ``__doc__``, ``__wrapped__``, ...).

    Raises
    ------
    LoopBrakeError
        From a call of the wrapper whose streak reaches ``max_repeats``;
        ``fn`` is not called.

    Notes
    -----
    Which arguments are hashed:

    - if the call has positional arguments, the **first positional
      argument** is the tool arguments (a mapping, a JSON string or any JSON
      value, as in the seed's ``execute(args, ctx)``); further positional
      arguments and keyword arguments are passed through to ``fn`` and not
      hashed (host context);
    - otherwise the **keyword arguments** form the arguments object
      (``fn(q="weather")`` hashes as ``{"q": "weather"}``).

    Two keywords are the brake's and never hashed: ``session_id`` (the
    session of this call, overriding the wrapper's; ``None`` keeps the
    wrapper's) and ``call_id`` (see :meth:`LoopBrake.check`).  When the caller
    passes one, it is passed on to ``fn`` unchanged only if ``fn`` accepts it
    (a parameter of that name or ``**kwargs``); the wrapper never adds one
    the caller did not pass.
    """
    passes = (accepts_keyword(fn, "session_id"), accepts_keyword(fn, "call_id"))

    def _before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        sid, cid, payload = split_call(args, kwargs, session_id, passes)
        brake.check(tool, payload, session_id=sid, call_id=cid)

    if is_async(fn):

        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            sid, cid, payload = split_call(args, kwargs, session_id, passes)
            await brake.acheck(tool, payload, session_id=sid, call_id=cid)  # redis.asyncio when shared
            return await fn(*args, **kwargs)

        wrapped: Callable[..., Any] = functools.wraps(fn)(async_wrapper)
    else:

        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            _before(args, kwargs)
            return fn(*args, **kwargs)

        wrapped = functools.wraps(fn)(sync_wrapper)
    return cast(F, wrapped)


def _rebind(method: Any, old: object, new: object) -> Any:
    """A method bound to ``old`` rebound to the copy ``new``; anything else unchanged."""
    if isinstance(method, types.MethodType) and method.__self__ is old:
        return types.MethodType(method.__func__, new)
    return method


def decorate_tool(definition: T, brake: LoopBrake, *, session_id: Any = None) -> T:
    """A copy of a tool definition whose execute is braked; the original is untouched (seed 000).

    Parameters
    ----------
    definition : mapping or object
        A mapping with ``"name"`` and a callable ``"execute"``; or an object
        with a ``name`` attribute and an ``execute`` method/attribute, or,
        lacking ``execute``, that is itself callable (``__call__``); or a
        plain function (its ``name`` attribute, else its ``__name__``).
    brake : LoopBrake
        The brake that counts the calls.
    session_id : Any, default None
        The session used when a call passes no ``session_id`` keyword.

    Returns
    -------
    same kind as ``definition``
        A mapping: a shallow copy (same type when it can be copied, else a
        ``dict``) with ``execute`` replaced by :func:`wrap_execute`.  A
        dataclass or named tuple: ``replace``/``_replace``.  Another object:
        :func:`copy.copy` with ``execute`` set on the copy (a method bound to
        the original is rebound to the copy); a callable object without
        ``execute`` is copied into a subclass whose ``__call__`` is braked.
        A function: the braked wrapper.

    Raises
    ------
    TypeError
        No name, or nothing callable to brake.
    """
    if isinstance(definition, Mapping):
        name = definition.get("name")
        execute = definition.get("execute")
        if not isinstance(name, str) or not callable(execute):
            raise TypeError("decorate_tool: a tool definition needs a str 'name' and a callable 'execute'")
        braked = wrap_execute(execute, brake, tool=name, session_id=session_id)
        out: Any
        if isinstance(definition, MutableMapping):
            try:
                out = copy.copy(definition)
            except Exception:
                out = dict(definition)
            if out is definition:
                out = dict(definition)
        else:
            out = dict(definition)
        out["execute"] = braked
        return cast(T, out)

    if isinstance(definition, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)):
        fname = getattr(definition, "name", None) or getattr(definition, "__name__", None)
        if not isinstance(fname, str):
            raise TypeError("decorate_tool: a tool function needs a str 'name' or '__name__'")
        return cast(T, wrap_execute(definition, brake, tool=fname, session_id=session_id))

    name = getattr(definition, "name", None)
    if not isinstance(name, str):
        raise TypeError("decorate_tool: a tool definition needs a str 'name'")
    execute = getattr(definition, "execute", None)
    if execute is not None:
        if not callable(execute):
            raise TypeError("decorate_tool: the tool definition's 'execute' is not callable")
        if (
            dataclasses.is_dataclass(definition)
            and not isinstance(definition, type)
            and any(f.name == "execute" for f in dataclasses.fields(definition))
        ):
            return cast(
                T,
                dataclasses.replace(definition, execute=wrap_execute(execute, brake, tool=name, session_id=session_id)),
            )
        if isinstance(definition, tuple) and hasattr(definition, "_replace"):
            return cast(T, definition._replace(execute=wrap_execute(execute, brake, tool=name, session_id=session_id)))
        new = copy.copy(definition)
        if new is definition:
            raise TypeError(f"decorate_tool: cannot copy a {type(definition).__name__}")
        braked = wrap_execute(_rebind(execute, definition, new), brake, tool=name, session_id=session_id)
        try:
            setattr(new, "execute", braked)  # noqa: B010 - T has no declared execute
        except (AttributeError, TypeError):
            object.__setattr__(new, "execute", braked)
        return new

    if not callable(definition):
        raise TypeError("decorate_tool: the tool definition has no 'execute' and is not callable")
    cls = type(definition)
    new = copy.copy(definition)
    if new is definition:
        raise TypeError(f"decorate_tool: cannot copy a {cls.__name__}")
    braked_call = wrap_execute(types.MethodType(cls.__call__, new), brake, tool=name, session_id=session_id)
    if is_async(braked_call):

        async def acall(self: Any, *args: Any, **kwargs: Any) -> Any:
            return await self._loopguard_braked_call(*args, **kwargs)

        call: Callable[..., Any] = acall
    else:

        def scall(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._loopguard_braked_call(*args, **kwargs)

        call = scall
    sub = type(cls.__name__, (cls,), {"__call__": call, "__module__": cls.__module__, "__doc__": cls.__doc__})
    try:
        new.__class__ = sub
        object.__setattr__(new, "_loopguard_braked_call", braked_call)
    except (AttributeError, TypeError) as exc:
        raise TypeError(f"decorate_tool: cannot brake a callable {cls.__name__} without 'execute'") from exc
    return cast(T, new)
