"""Where the guard keeps its per-session state: :class:`MemoryStore` (in this process, the
default) or :class:`RedisStore` (shared by every replica of a gateway).

A :class:`~loopguard.ToolGuard` given ``store=RedisStore(url)`` loads a session's state from
Redis for each call, decides, and writes it back with a compare-and-set on the session's
version (a server-side Lua script): when two replicas decide for one session at the same
moment, one write wins and the other replica loads the new state and decides again, so no
update is lost or counted twice.

What Redis holds per session: one hash, ``<prefix>tg:<32 hex digits of SHA-256 of the
session key>``, with fields ``f`` (the format version, :data:`loopguard.guard.codec.FORMAT`),
``n`` (the compare-and-set version) and ``s`` (the state, :mod:`loopguard.guard.codec`: call
keys, result hashes, 64-bit line hashes and counts; never an argument, a result's text or a
session id), at most ``limits.max_bytes`` (28,000 bytes: 32 KiB with Redis's own overhead) per session, expiring ``ttl`` seconds after
its last write.  A :class:`~loopguard.Session` keeps its rescues in a row in one more hash,
``<prefix>ss:<same digest>``, field ``r`` (:meth:`RedisStore.counter`, ``HINCRBY``).

Faults: a Redis error or a reply slower than ``socket_timeout`` makes the guard decide without
the store (``on_store_error="open"``, the default, allows the call; ``"closed"`` denies it with
rule ``"store_unavailable"``; a :class:`~loopguard.LoopBrake` raises
:class:`~loopguard.LoopBrakeStoreError`); the host never sees a Redis exception.  Each such decision is
counted in :attr:`RedisStore.errors`; a warning is logged on the ``loopguard.store`` logger at
most once per ``warn_interval`` seconds; for ``retry_interval`` seconds after an error the store
is not asked (decisions fail open at once), then it is tried again, so the guard recovers by
itself when Redis is back.

Sync and async: the sync methods (:meth:`RedisStore.get`, :meth:`RedisStore.put`) use a
``redis.Redis`` client; their twins :meth:`RedisStore.aget` and :meth:`RedisStore.aput` use a
``redis.asyncio`` client made lazily for the running event loop (one per store and loop), so the
guard's async methods (:meth:`~loopguard.ToolGuard.abefore_call`,
:meth:`~loopguard.ToolGuard.aafter_call`, :meth:`~loopguard.LoopBrake.acheck`, used by async
:func:`~loopguard.wrap_tool` and :func:`~loopguard.wrap_execute` bodies) never block the loop on
Redis.  A :class:`~loopguard.Session` fed on an event loop (the async stream adapters) writes
its progress notes as tasks of that loop (:meth:`~loopguard.ToolGuard.note_progress`) and ends
the attempt in a worker thread; only a stop's strike (one load, one write, each within
``socket_timeout``) uses the sync client on the loop.  Both share the error count, the retry interval and the warning interval.  Timestamps (``strikes``, ``stall``)
are read from the guard's clock, the wall clock (``time.time``) by default with this store: one
clock the replicas agree on.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from .guard.codec import FORMAT, Limits
from .observe import metrics

__all__ = ["MemoryStore", "RedisStore", "StoreUnavailable"]

logger = logging.getLogger("loopguard.store")

# KEYS[1] the session's hash; ARGV: expected version, format, state, ttl in ms.  Returns {1} when
# written, else {0, version, format, state}: the current state comes with the conflict (no reload)
_CAS = """
local v = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if v ~= tonumber(ARGV[1]) then
  local cur = redis.call('HMGET', KEYS[1], 'n', 'f', 's')
  return {0, cur[1], cur[2], cur[3]}
end
redis.call('HSET', KEYS[1], 'n', v + 1, 'f', ARGV[2], 's', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1}
"""


class StoreUnavailable(Exception):
    """The store could not be read or written (internal: the guard decides without it)."""


class MemoryStore:
    """The guard's state in this process (the default store: today's behaviour and speed).

    Sessions are kept as live objects in the guard's least-recently-used table
    (``max_sessions``); nothing is serialised.  One ``MemoryStore`` is meant for one guard.

    Examples
    --------
    >>> from loopguard import MemoryStore, ToolGuard
    >>> ToolGuard(store=MemoryStore()).before_call("s", "ls", {}).action
    'allow'
    """

    shared = False

    def __repr__(self) -> str:
        return "MemoryStore()"


_URL_SCHEMES = ("redis://", "rediss://", "unix://")
_DEFAULT_URL = "redis://localhost:6379/0"
#: The longest ``ttl`` (seconds): about 68 years (Redis takes ``PEXPIRE`` in milliseconds).
MAX_TTL = float(2**31)


class _NoAsyncClient(Exception):
    """The store has no async client (``client=`` without ``url=`` or ``async_client=``)."""


def _check_seconds(**values: Any) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a finite positive number of seconds, got {value!r}")


def _glob_escape(text: str) -> str:
    """``text`` matched literally in a Redis ``SCAN MATCH`` pattern."""
    return "".join("\\" + c if c in "\\*?[]" else c for c in text)


def _check_url(url: Any) -> None:
    """A Redis URL (never echoed: it may carry a password)."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    if not url.startswith(_URL_SCHEMES):
        raise ValueError("url must start with redis://, rediss:// or unix:// (a Redis URL)")


class RedisStore:
    """Session state in Redis, shared by every replica that points at the same server and prefix.

    Parameters
    ----------
    url : str, optional
        A Redis URL (``redis://host:6379/0``, ``rediss://…``, ``unix://…``), passed to
        ``redis.Redis.from_url`` (default ``redis://localhost:6379/0`` without ``client``).
        Needs the ``redis`` package (``pip install loopguard[redis]``).
    prefix : str
        Prepended to every key (default ``"loopguard:"``).
    ttl : float
        Seconds a session's state lives after its last write (default 86,400: a day; from
        0.001 to :data:`MAX_TTL`).
    socket_timeout : float
        Seconds to wait for Redis (connect and reply) before failing (default 0.25).
    retry_interval : float
        Seconds the store is not asked after an error (default 1.0).
    warn_interval : float
        Seconds between two warnings about store errors (default 60).
    limits : Limits, optional
        How much of a session is kept (:class:`loopguard.guard.codec.Limits`: 32 KiB at most).
    cache_sessions : int
        Sessions whose last known state this store keeps (default 0: none), so that a decision
        for a session this replica decided last takes one round trip (the compare-and-set write)
        instead of two: when another replica wrote in between, the write fails and brings the
        current state, and the decision is taken again on it (exact either way).  Worth it when
        the load balancer keeps a conversation on one replica (session affinity: about 20% less
        time per decision, measured); with requests spread evenly over replicas most cached
        states are stale and each costs a wasted decision.  At most ``cache_sessions`` ×
        ``limits.max_bytes`` of memory.
    client : redis.Redis, optional
        A client to use instead of one made from ``url`` (its timeouts are then its own) by the
        sync methods.
    async_client : redis.asyncio.Redis, optional
        The client of the async methods, for an application with one event loop.  Without it they
        make a ``redis.asyncio`` client per event loop from ``url``; with ``client`` and neither
        ``url`` nor ``async_client`` they cannot reach Redis (each async decision fails open, and
        the first one logs why).
    clock : callable, optional
        Seconds for the intervals (default ``time.monotonic``).

    Attributes
    ----------
    errors : int
        Operations that could not use the store (Redis errors, timeouts, and calls made during
        ``retry_interval``): each one a decision taken without the store.
    conflicts : int
        Compare-and-set conflicts (another replica wrote first; the decision was retried).

    Raises
    ------
    ImportError
        when the ``redis`` package is not installed (naming the extra to install).
    TypeError
        for a ``url`` that is not a ``str``, or a ``client`` that is not a Redis client.
    ValueError
        for a ``url`` that does not start with ``redis://``, ``rediss://`` or ``unix://`` (the
        URL is not repeated: it may carry a password), an empty ``prefix``, or a ``ttl``,
        ``socket_timeout``, ``retry_interval`` or ``warn_interval`` that is not a finite positive
        number of seconds (``ttl`` from 0.001 to :data:`MAX_TTL`).
    """

    shared = True

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str = "loopguard:",
        ttl: float = 86_400.0,
        socket_timeout: float = 0.25,
        retry_interval: float = 1.0,
        warn_interval: float = 60.0,
        limits: Limits | None = None,
        cache_sessions: int = 0,
        client: Any = None,
        async_client: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        _check_seconds(
            ttl=ttl, socket_timeout=socket_timeout, retry_interval=retry_interval, warn_interval=warn_interval
        )
        if not 0.001 <= ttl <= MAX_TTL:
            raise ValueError(f"ttl must be from 0.001 to {MAX_TTL} seconds, got {ttl!r}")
        if not isinstance(prefix, str) or not prefix:
            raise ValueError("prefix must be a non-empty str")
        if isinstance(cache_sessions, bool) or not isinstance(cache_sessions, int) or cache_sessions < 0:
            raise ValueError(f"cache_sessions must be an int >= 0, got {cache_sessions!r}")
        for name, given in (("client", client), ("async_client", async_client)):
            if given is not None and not callable(getattr(given, "register_script", None)):
                raise TypeError(
                    f"{name} must be a Redis client (redis.Redis, redis.asyncio.Redis), not {type(given).__name__}"
                )
        if url is not None or client is None:
            url = _DEFAULT_URL if url is None else url
            _check_url(url)
        try:
            import redis  # the optional extra: loopguard[redis]
        except ImportError:
            raise ImportError('RedisStore needs the redis package: pip install "loopguard[redis]"') from None

        self._url, self._timeout = url, float(socket_timeout)
        # event loop -> (its redis.asyncio client, the client's compare-and-set script): _aclient
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, Any]] = weakref.WeakKeyDictionary()
        self._given_async = None if async_client is None else (async_client, async_client.register_script(_CAS))
        self._tasks: set[asyncio.Task[Any]] = set()  # writes no caller waits for (track); aclose waits
        self.cache_sessions = cache_sessions
        # (kind, session) -> its last known (state, version), least recently used first: get(cached=True)
        self._recent: collections.OrderedDict[tuple[str, str], tuple[bytes | None, int]] = collections.OrderedDict()

        self.client: Any = client
        if client is None:
            self.client = redis.Redis.from_url(
                url or _DEFAULT_URL, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout
            )
        self.prefix, self.ttl, self.limits = prefix, float(ttl), limits or Limits()
        self.retry_interval, self.warn_interval, self._clock = float(retry_interval), float(warn_interval), clock
        self._cas = self.client.register_script(_CAS)
        self._lock = threading.Lock()
        self._down_until = -1.0
        self._warned_at: float | None = None
        self.errors = 0
        self.conflicts = 0

    def __repr__(self) -> str:
        return f"RedisStore(prefix={self.prefix!r}, ttl={self.ttl:g}, errors={self.errors})"

    def key(self, session: str, kind: str = "tg") -> str:
        """The Redis key of a session's state (the session key is hashed, never stored):
        ``kind`` ``"tg"`` for a :class:`~loopguard.ToolGuard`, ``"lb"`` for a :class:`~loopguard.LoopBrake`."""
        digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"{self.prefix}{kind}:{digest}"

    def get(self, session: str, kind: str = "tg", *, cached: bool = False) -> tuple[bytes | None, int]:
        """The session's state (``None`` when absent or of another format) and its version.

        ``cached``: the state this store last read or wrote for the session, without asking
        Redis, when it holds one (for a read that is followed by a compare-and-set write: if
        another replica wrote since, the write fails and :meth:`swap` brings the current state).

        Raises
        ------
        StoreUnavailable
            on a Redis error or timeout (counted and logged), or during ``retry_interval``.
        """
        if cached and (hit := self._recall(kind, session)) is not None:
            return hit
        with self._asking("get"):
            version, fmt, blob = self.client.hmget(self.key(session, kind), ["n", "f", "s"])
        return self._remember(kind, session, _state(version, fmt, blob))

    async def aget(self, session: str, kind: str = "tg", *, cached: bool = False) -> tuple[bytes | None, int]:
        """:meth:`get` on the running event loop (``redis.asyncio``): same returns and errors."""
        if cached and (hit := self._recall(kind, session)) is not None:
            return hit
        with self._asking("get"):
            reading = self._aclient()[0].hmget(self.key(session, kind), ["n", "f", "s"])
            version, fmt, blob = await asyncio.wait_for(reading, self._timeout)
        return self._remember(kind, session, _state(version, fmt, blob))

    def swap(self, session: str, blob: bytes, version: int, kind: str = "tg") -> tuple[bool, bytes | None, int]:
        """Write the session's state if its version is still ``version`` (one round trip):
        ``(True, blob, version + 1)``, or on a conflict ``(False, current state or None,
        current version)``, read in the same round trip.

        Raises
        ------
        StoreUnavailable
            as :meth:`get`.
        """
        with self._asking("put"):
            reply = self._cas(keys=[self.key(session, kind)], args=self._cas_args(blob, version))
        return self._swapped(kind, session, reply, blob, version)

    async def aswap(self, session: str, blob: bytes, version: int, kind: str = "tg") -> tuple[bool, bytes | None, int]:
        """:meth:`swap` on the running event loop (``redis.asyncio``): same returns and errors."""
        with self._asking("put"):
            writing = self._aclient()[1](keys=[self.key(session, kind)], args=self._cas_args(blob, version))
            reply = await asyncio.wait_for(writing, self._timeout)
        return self._swapped(kind, session, reply, blob, version)

    def put(self, session: str, blob: bytes, version: int, kind: str = "tg") -> bool:
        """:meth:`swap`, answering only whether it wrote (False on a conflict)."""
        return self.swap(session, blob, version, kind)[0]

    async def aput(self, session: str, blob: bytes, version: int, kind: str = "tg") -> bool:
        """:meth:`aswap`, answering only whether it wrote (False on a conflict)."""
        return (await self.aswap(session, blob, version, kind))[0]

    def _cas_args(self, blob: bytes, version: int) -> list[Any]:
        """The compare-and-set script's ``ARGV``: expected version, format, state, ttl in ms."""
        return [version, FORMAT, blob, int(self.ttl * 1000)]

    def _swapped(
        self, kind: str, session: str, reply: Any, blob: bytes, version: int
    ) -> tuple[bool, bytes | None, int]:
        if reply[0]:
            self._remember(kind, session, (blob, version + 1))
            return True, blob, version + 1
        with self._lock:
            self.conflicts += 1
        current = self._remember(kind, session, _state(reply[1], reply[2], reply[3]))
        return False, current[0], current[1]

    def _recall(self, kind: str, session: str) -> tuple[bytes | None, int] | None:
        with self._lock:
            return self._recent.get((kind, session))

    def _remember(self, kind: str, session: str, state: tuple[bytes | None, int]) -> tuple[bytes | None, int]:
        """Keep ``state`` as the session's last known one (at most ``cache_sessions``, least recent out)."""
        if self.cache_sessions:
            with self._lock:
                self._recent[(kind, session)] = state
                self._recent.move_to_end((kind, session))
                if len(self._recent) > self.cache_sessions:
                    self._recent.popitem(last=False)
        return state

    def close(self) -> None:
        """Close the sync client's connections (the client given as ``client=`` too); the next
        sync call connects again.  The async clients: :meth:`aclose`, in their event loop."""
        self.client.close()

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc: object) -> None:
        """``with RedisStore(url) as store:`` closes the sync client at the end (:meth:`close`)."""
        self.close()

    async def __aenter__(self) -> RedisStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """``async with RedisStore(url) as store:`` waits for the loop's pending writes and closes
        its async client (:meth:`aclose`), then the sync client (:meth:`close`)."""
        await self.aclose()
        self.close()

    async def aclose(self) -> None:
        """Wait for this event loop's writes that no caller waits for (:meth:`track`: progress
        notes), then close the loop's ``redis.asyncio`` client (its connections), if one was made;
        the next async call in that loop makes a new one.  Call it before the loop ends (in
        ``asyncio.run``'s ``main``); a client given as ``async_client`` is left open (it is yours)."""
        loop = asyncio.get_running_loop()
        pending = [t for t in self._tasks if t.get_loop() is loop and not t.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        made = self._async.pop(loop, None)
        if made is not None:
            await made[0].aclose()

    def track(self, task: asyncio.Task[Any]) -> None:
        """Hold ``task``, a write of this store that no caller waits for (a progress note:
        :meth:`ToolGuard.note_progress <loopguard.ToolGuard.note_progress>`), until it is done;
        :meth:`aclose` waits for it."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def ping(self) -> None:
        """Ask Redis once, now (a health check at start-up: a wrong password or database shows
        here, not as a fail-open outage later).

        Raises
        ------
        StoreUnavailable
            naming the error's type and Redis's message (a ``PING`` quotes no value).
        """
        try:
            self.client.ping()
        except Exception as exc:
            raise StoreUnavailable(f"{type(exc).__name__}: {exc}") from None

    def _aclient(self) -> tuple[Any, Any]:
        """The ``redis.asyncio`` client of the running event loop and its compare-and-set script,
        made on first use in that loop (a client belongs to the loop it connected in; loops in
        several threads each get their own, forgotten with the loop)."""
        if self._given_async is not None:
            return self._given_async
        loop = asyncio.get_running_loop()
        made = self._async.get(loop)
        if made is None:
            if self._url is None:
                raise _NoAsyncClient("RedisStore(client=...) has no url= or async_client= for its async methods")
            import redis.asyncio

            client = redis.asyncio.Redis.from_url(
                self._url, socket_timeout=self._timeout, socket_connect_timeout=self._timeout
            )
            made = self._async[loop] = (client, client.register_script(_CAS))
        return made

    def counter(self, session: str, name: str, op: str = "get", kind: str = "ss") -> int:
        """A small integer field ``name`` of the session's hash ``<prefix><kind>:<digest>`` (kind
        ``"ss"``: a :class:`~loopguard.Session`'s own counts, e.g. ``"r"``, its rescues in a row).

        ``op``: ``"get"`` reads it (0 when absent), ``"incr"`` adds one atomically (``HINCRBY``:
        two replicas counting at once count twice), ``"zero"`` sets it to 0.  A write renews the
        hash's TTL (``ttl``).  Returns the value after the operation.

        Raises
        ------
        StoreUnavailable
            as :meth:`get`.
        ValueError
            for another ``op``.
        """
        if op not in ("get", "incr", "zero"):
            raise ValueError(f"op must be 'get', 'incr' or 'zero', not {op!r}")
        key = self.key(session, kind)
        with self._asking(op):
            if op == "get":
                return int(self.client.hget(key, name) or 0)
            pipe = self.client.pipeline(transaction=True)
            if op == "incr":
                pipe.hincrby(key, name, 1)
            else:
                pipe.hset(key, name, 0)
            pipe.pexpire(key, int(self.ttl * 1000))
            value = pipe.execute()[0]
        return int(value) if op == "incr" else 0

    def delete(self, session: str | None = None, kind: str = "tg") -> None:
        """Forget one session's state, or every session's under this prefix (``None``), of one ``kind``.

        Raises
        ------
        StoreUnavailable
            as :meth:`get`.
        """
        with self._lock:  # the cached states go first: a failed delete leaves them unknown too
            for cached in [c for c in self._recent if c[0] == kind and session in (None, c[1])]:
                del self._recent[cached]
        with self._asking("delete"):
            if session is not None:
                self.client.delete(self.key(session, kind))
                return
            for key in self.client.scan_iter(match=f"{_glob_escape(self.prefix)}{kind}:*", count=500):
                self.client.delete(key)

    @contextlib.contextmanager
    def _asking(self, operation: str) -> Iterator[None]:
        """Around one use of Redis: :class:`StoreUnavailable` at once during ``retry_interval``
        (:meth:`_check`); a Redis error or timeout in the block counted, logged and raised as
        :class:`StoreUnavailable` (:meth:`_failed`, ``operation`` naming it in the metric)."""
        self._check()
        try:
            yield
        except Exception as exc:  # redis-py raises more than RedisError/OSError (a client closed mid-call)
            raise self._failed(exc, operation) from None
        if self._down_until >= 0:  # the first answer after an outage
            with self._lock:
                back, self._down_until = self._down_until >= 0, -1.0
            if back:
                logger.info("state store reachable again (%d errors so far)", self.errors)

    def _check(self) -> None:
        if self._down_until >= 0 and self._clock() < self._down_until:
            with self._lock:
                self.errors += 1
            metrics.store_error("skipped")  # within retry_interval after a failure
            raise StoreUnavailable("store unavailable (retrying later)")

    def _failed(self, exc: BaseException, operation: str) -> StoreUnavailable:
        """Count the error (``store.errors`` and the ``loopguard_store_errors_total`` metric),
        warn at most once per interval, and wait ``retry_interval``."""
        misconfigured = isinstance(exc, _NoAsyncClient)
        # the exception's type only: a Redis error message may quote a command's values
        why = str(exc) if misconfigured else type(exc).__name__
        # a misconfigured client is not Redis's fault: the sync methods go on asking
        self._count_error(operation, f"state store unavailable ({why})", wait=not misconfigured)
        return StoreUnavailable(type(exc).__name__)

    def gave_up(self, operation: str, why: str) -> None:
        """A decision taken without the store although Redis answered (``operation``, e.g.
        ``"conflict"``: too many compare-and-set conflicts in a row; ``"encode"``: a state that
        cannot be stored): counted and warned about as an error, without ``retry_interval``."""
        self._count_error(operation, f"state store not used ({why})", wait=False)

    def _count_error(self, operation: str, what: str, *, wait: bool) -> None:
        now = self._clock()
        metrics.store_error(operation)
        with self._lock:
            self.errors += 1
            if wait:
                self._down_until = now + self.retry_interval
            warn = self._warned_at is None or now - self._warned_at >= self.warn_interval
            if warn:
                self._warned_at = now
            count = self.errors
        if warn:
            logger.warning("%s; deciding without it (%d errors so far)", what, count)


def _state(version: Any, fmt: Any, blob: Any) -> tuple[bytes | None, int]:
    """A ``HMGET n f s`` reply as (state or ``None`` when absent or of another format, version)."""
    if fmt is None or int(fmt) != FORMAT:
        blob = None
    return blob, int(version or 0)
